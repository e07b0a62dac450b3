//! `sluice monitor sample`: JSON lines (flow records before the first
//! sample of their label, a summary last) alike from the eBPF program, the
//! xPF program and the reference; a bad `--rate` refused with the reason;
//! and live, on a veth pair between two namespaces of the test's own, the
//! eBPF program in the kernel samples exactly the packets the reference
//! samples of the frames `sluice gen --dev` sent, and leaves nothing
//! attached.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::SLUICE;
use serde_json::Value;

const TRAFFIC: &str = "udp,flows=6,size=100,count=300";
/// Sent live: 40 flows, each sampled whole or not at all (gen sends a
/// flow's frame over and over).
const LIVE: &str = "udp,flows=40,size=100,count=400";

/// The JSON lines of a run: records, then the summary.
fn lines(out: &str) -> (Vec<Value>, Value) {
    let mut v: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = v.pop().unwrap();
    (v, summary["summary"].clone())
}

/// (label, hash) of the samples.
fn samples(records: &[Value]) -> Vec<(u64, u64)> {
    records
        .iter()
        .filter(|r| r.get("hash").is_some())
        .map(|r| (r["label"].as_u64().unwrap(), r["hash"].as_u64().unwrap()))
        .collect()
}

#[test]
fn json_lines_agree_on_every_engine() {
    let mut runs = Vec::new();
    for engine in [
        &["--engine", "ebpf"][..],
        &["--engine", "xpf"],
        &["--engine", "xpf", "--xpf-engine", "jit"],
        &["--engine", "reference"],
    ] {
        let mut args = vec![
            "monitor", "sample", "--json", "--gen", TRAFFIC, "--rate", "1/4",
        ];
        args.extend(engine);
        let (records, summary) = lines(&common::sluice(&args));
        assert_eq!(summary["packets"], 300);
        assert_eq!(summary["hashed"], 300);
        assert_eq!(
            (summary["a"].clone(), summary["b"].clone()),
            (4.into(), 1.into())
        );
        let sampled = summary["sampled"].as_u64().unwrap();
        assert!((40..110).contains(&sampled), "{sampled} of 300 at 1/4");
        // Each label's flow record comes before its first sample.
        let mut named = BTreeSet::new();
        for r in &records {
            let label = r["label"].as_u64().unwrap();
            if r.get("src").is_some() {
                assert_eq!(r["protocol"], 17);
                assert_eq!(r["dst_port"], 80);
                assert!(named.insert(label), "one flow record per label");
            } else {
                assert!(named.contains(&label), "a sample before its flow: {r}");
            }
        }
        assert_eq!(named.len(), 6);
        assert_eq!(summary["flow_records"], 6);
        assert_eq!(samples(&records).len() as u64, sampled);
        runs.push(samples(&records));
    }
    assert!(runs.windows(2).all(|w| w[0] == w[1]));
    // -a/-b are --rate's other spelling.
    let (records, _) = lines(&common::sluice(&[
        "monitor", "sample", "--json", "--gen", TRAFFIC, "-a", "4", "-b", "1",
    ]));
    assert_eq!(samples(&records), runs[0]);
    // The table on the terminal.
    let table = common::sluice(&["monitor", "sample", "--gen", TRAFFIC, "--rate", "1/4"]);
    assert!(table.contains("300 packets, 300 with IP hashed"), "{table}");
    assert!(table.contains("10.255.0.1"), "{table}");
}

#[test]
fn a_bad_rate_is_refused_with_the_reason() {
    for bad in [
        &["--rate", "1/0"][..],
        &["--rate", "5/4"],
        &["--rate", "often"],
        &["--rate", "2"],
        &["-a", "0", "-b", "0"],
        &["-a", "3", "-b", "4"],
    ] {
        let out = Command::new(SLUICE)
            .args(["monitor", "sample", "--gen", TRAFFIC])
            .args(bad)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("A at least 1") || err.contains("B/A"),
            "{bad:?}: {err}"
        );
    }
    // A table too big for the xPF program's memory.
    let out = Command::new(SLUICE)
        .args([
            "monitor", "sample", "--gen", TRAFFIC, "--engine", "xpf", "--table", "100000",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("32768"));
}

#[test]
fn live_sampling_on_a_veth_picks_the_packets_the_reference_picks() {
    if !common::kernel_available("sluice monitor sample --dev (veth pair)") {
        return;
    }
    live_sampling("smp", &[]);
}

#[test]
fn live_sampling_on_the_af_xdp_datapath_with_the_xpf_engine_picks_the_same_packets() {
    if !common::kernel_available("sluice monitor sample --dev --datapath afxdp (veth pair)") {
        return;
    }
    live_sampling("smx", &["--datapath", "afxdp", "--engine", "xpf"]);
}

/// `sluice monitor sample --dev` with `args` on a veth while `sluice gen`
/// sends: the samples are the reference's.
fn live_sampling(tag: &str, args: &[&str]) {
    let p = common::Pair::new(tag);
    let mut all = vec![
        "monitor",
        "sample",
        "--dev",
        common::VB,
        "--json",
        "--duration",
        "3",
        "--rate",
        "1/3",
    ];
    all.extend_from_slice(args);
    let child = common::spawn_sluice(&p.b, &all);
    p.wait_for("xdp");
    p.send(LIVE, "packet");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let (live, summary) = lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(summary["lost"], 0);
    // `sluice gen --dev` sends each flow's first frame over and over
    // (frame i is flow i mod flows): the reference's samples of those.
    let spec = packet::GenSpec::parse(LIVE).unwrap();
    let want: Vec<(u64, u64)> = (0..spec.count)
        .filter_map(|i| {
            let inv = monitor::invariants(&spec.frame((i % u64::from(spec.flows)) as u32))?;
            monitor::sampled(inv.hash, 3, 1).then_some((u64::from(inv.label), u64::from(inv.hash)))
        })
        .collect();
    assert!(
        want.len() > 50 && want.len() < 300,
        "{} samples",
        want.len()
    );
    // Only the generated flows' samples (the kernel may send the
    // namespace's own IPv6 chatter too).
    let labels: BTreeSet<u64> = want.iter().map(|s| s.0).collect();
    let got: Vec<(u64, u64)> = samples(&live)
        .into_iter()
        .filter(|s| labels.contains(&s.0))
        .collect();
    assert_eq!(got, want);
    // Wall-clock times of now.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    for r in live.iter().filter(|r| r.get("time_ns").is_some()) {
        let t = r["time_ns"].as_u64().unwrap();
        assert!(t < now && now - t < 60_000_000_000, "{t} vs {now}");
    }
    assert!(!common::sh(&["ip", "-n", &p.b, "link", "show", common::VB]).contains("xdp"));
}
