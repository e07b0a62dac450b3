//! `sluice run --threads N` over a capture file: programs whose result
//! does not depend on the order of packets across flows are run by byte
//! ranges (`--shard auto`, the default) and give exactly one thread's
//! report, outputs and per-packet table; others keep flow sharding, and
//! the report says which ran and why.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn object(name: &str) -> String {
    testkit::object_path(name)
}

/// Every frame of tcpdump's captures that has an Ethernet form, in one
/// classic pcap file.
fn corpus(dir: &Path) -> PathBuf {
    let path = dir.join("corpus.pcap");
    let mut sink = capture::PcapSink::create(&path).unwrap();
    for file in testkit::captures() {
        let Ok(source) = capture::PcapSource::open(&file) else {
            continue;
        };
        for frame in source {
            let Ok(frame) = frame else { break };
            let fits = frame.timestamp_ns / 1_000_000_000 < u64::from(u32::MAX);
            if fits && !matches!(frame.link, capture::LinkKind::Foreign(_)) {
                sink.write(&frame.data, frame.timestamp_ns).unwrap();
            }
        }
    }
    sink.finish().unwrap();
    path
}

/// 200,000 generated packets, UDP and TCP.
fn generated(dir: &Path) -> PathBuf {
    let path = dir.join("generated.pcap");
    let mut sink = capture::PcapSink::create(&path).unwrap();
    let specs = [
        packet::GenSpec::parse("udp,flows=1000,size=64,count=150000,dport=53").unwrap(),
        packet::GenSpec::parse("tcp,flows=300,size=300,count=50000").unwrap(),
    ];
    for (ts, p) in packet::merge(&specs) {
        sink.write(&p, ts).unwrap();
    }
    sink.finish().unwrap();
    path
}

/// One run's JSON report and outputs (pass, tx and drop captures, the
/// per-packet table as CSV).
struct Run {
    json: Value,
    files: Vec<Vec<u8>>,
}

fn run(obj: &str, pcap: &Path, threads: usize, extra: &[&str], out: &Path) -> Run {
    let files: Vec<PathBuf> = ["pass.pcap", "tx.pcap", "drop.pcap", "table.csv"]
        .iter()
        .map(|f| out.join(format!("{threads}-{f}")))
        .collect();
    let o = sluice()
        .args(["run", obj, "--json", "--pcap"])
        .arg(pcap)
        .args(["--threads", &threads.to_string()])
        .arg("--out-pass")
        .arg(&files[0])
        .arg("--out-tx")
        .arg(&files[1])
        .arg("--out-drop")
        .arg(&files[2])
        .arg("--out-table")
        .arg(&files[3])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Run {
        json: serde_json::from_slice(&o.stdout).unwrap(),
        files: files.iter().map(|f| std::fs::read(f).unwrap()).collect(),
    }
}

/// The report without what differs between thread counts: time, the
/// threads and how they shared, each CPU's part of per-CPU values (their
/// sum stays).
fn comparable(mut v: Value) -> Value {
    let o = v.as_object_mut().unwrap();
    for k in [
        "seconds",
        "packets_per_second",
        "threads",
        "shard",
        "shard_note",
    ] {
        o.remove(k);
    }
    for m in o["maps"].as_array_mut().unwrap() {
        for e in m["entries"].as_array_mut().unwrap() {
            let e = e.as_object_mut().unwrap();
            e.remove("cpus");
            e.remove("summed");
        }
    }
    v
}

fn same_as_one(obj: &str, pcap: &Path, threads: usize, extra: &[&str]) -> Value {
    let out = testkit::temp_dir(&format!(
        "cli-ranges-{}-{threads}",
        Path::new(obj).file_stem().unwrap().to_string_lossy()
    ));
    let one = run(obj, pcap, 1, extra, &out);
    let many = run(obj, pcap, threads, extra, &out);
    assert!(one.json["packets"].as_u64().unwrap() > 0);
    assert_eq!(
        comparable(one.json.clone()),
        comparable(many.json.clone()),
        "{obj}, {threads} threads"
    );
    for (i, (a, b)) in one.files.iter().zip(&many.files).enumerate() {
        assert!(a == b, "{obj}, {threads} threads: output {i} differs");
    }
    let _ = std::fs::remove_dir_all(&out);
    many.json
}

#[test]
fn order_free_programs_run_by_ranges_as_one_thread() {
    let dir = testkit::temp_dir("cli-ranges");
    let captures = [corpus(&dir), generated(&dir)];
    for pcap in &captures {
        for name in ["xdp_count", "xdp_parse_tx", "xdp_drop"] {
            for threads in [2, 4] {
                let v = same_as_one(&object(name), pcap, threads, &[]);
                assert_eq!(v["threads"], threads);
                assert_eq!(v["shard"], "ranges", "{name}");
                assert!(v.get("shard_note").is_none());
            }
        }
    }
    // With a filter too: its count of packets read and accepted is the
    // whole file's.
    let v = same_as_one(
        &object("xdp_count"),
        &captures[1],
        2,
        &["--filter", "udp", "--shard", "ranges"],
    );
    assert_eq!(v["shard"], "ranges");
    let note = v["source_note"].as_str().unwrap();
    assert!(note.contains("accepted 150000 of 200000"), "{note}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn programs_that_depend_on_order_are_sharded_by_flow_and_told() {
    let dir = testkit::temp_dir("cli-ranges-flows");
    let pcap = generated(&dir);
    let out = sluice()
        .args([
            "run",
            &object("xdp_ddos"),
            "--json",
            "--threads",
            "2",
            "--pcap",
        ])
        .arg(&pcap)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["shard"], "symmetric");
    let note = v["shard_note"].as_str().unwrap();
    assert!(note.contains("bpf_ktime_get_ns"), "{note}");
    // In text too.
    let text = sluice()
        .args(["run", &object("classify"), "--threads", "2", "--pcap"])
        .arg(&pcap)
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(
            "on 2 threads, by flow (symmetric; not by ranges: classify calls bpf_map_update_elem)"
        ),
        "{text}"
    );
    let text = sluice()
        .args(["run", &object("xdp_count"), "--threads", "2", "--pcap"])
        .arg(&pcap)
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("on 2 threads, by byte ranges"), "{text}");
    // Asked for, ranges are refused where they could change the result.
    for (obj, why) in [
        ("xdp_lb", "uses the LRU map `conn_table`"),
        ("burn", "uses the ring buffer `copies`"),
    ] {
        let out = sluice()
            .args([
                "run",
                &object(obj),
                "--threads",
                "2",
                "--shard",
                "ranges",
                "--pcap",
            ])
            .arg(&pcap)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("--shard ranges: ") && err.contains(why),
            "{err}"
        );
    }
    let out = sluice()
        .args([
            "run",
            &object("xdp_count"),
            "--threads",
            "2",
            "--shard",
            "ranges",
        ])
        .args(["--limit", "5", "--pcap"])
        .arg(&pcap)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--limit reads the capture's first packets"),
        "{err}"
    );
    // A flow sharding asked for is taken as it is.
    let out = sluice()
        .args(["run", &object("xdp_count"), "--json", "--threads", "2"])
        .args(["--shard", "round-robin", "--pcap"])
        .arg(&pcap)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["shard"], "round-robin");
    assert!(v.get("shard_note").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}
