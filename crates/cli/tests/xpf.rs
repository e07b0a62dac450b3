//! `sluice xpf`: the example programs in `programs/xpf` run over tcpdump's
//! captures on every engine (the xPF interpreter, the translation in
//! sluice's VM and JIT, and in the kernel) and print the same memory;
//! their counts agree with tcpdump's own; periodic block switches lose no
//! packet; `asm` prints, writes bytes that run alike, and refuses with the
//! reason.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::SLUICE;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn capture(name: &str) -> PathBuf {
    testkit::capture(name)
}

fn program(name: &str) -> PathBuf {
    root().join("programs/xpf").join(name)
}

/// `sluice xpf run ... --json`, which must succeed.
fn run_json(args: &[&str]) -> Value {
    let out = Command::new(SLUICE)
        .args(["xpf", "run", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sluice xpf run {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn word(report: &Value, block: u64, word: u64) -> u64 {
    let b = report["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["block"] == block)
        .unwrap();
    b["words"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w[0] == word)
        .map_or(0, |w| w[1].as_u64().unwrap())
}

#[test]
fn the_examples_leave_the_same_memory_on_every_engine() {
    let kernel = testkit::kernel_available("xPF programs in the kernel");
    let mut engines = vec!["vm", "jit"];
    if kernel {
        engines.push("kernel");
    }
    let (mut compared, mut skipped) = (0, 0);
    let mut inputs: Vec<[String; 2]> = ["of10_s4810.pcap", "mptcp-v0.pcap", "dns_udp.pcap"]
        .iter()
        .map(|p| ["--pcap".into(), capture(p).display().to_string()])
        .collect();
    // More sources than the table's 256 slots: probes of a full table
    // loop until the budget sends them to the handler.
    inputs.push(["--gen".into(), "udp,flows=1000,count=3000".into()]);
    let mut exceptions = 0;
    for input in &inputs {
        for (prog, words, budget) in [
            ("protocols.s", "512", "4096"),
            ("sources.s", "513", "4096"),
            // A budget so small that long probes go to the handler.
            ("sources.s", "513", "40"),
        ] {
            let prog = program(prog);
            let common = [
                prog.to_str().unwrap(),
                &input[0],
                &input[1],
                "--words",
                words,
                "--budget",
                budget,
            ];
            for form in ["socket", "xdp"] {
                let mut args = common.to_vec();
                args.extend(["--form", form]);
                let want = run_json(&args);
                assert!(want["packets"].as_u64().unwrap() > 0);
                exceptions += want["exceptions"].as_u64().unwrap();
                for engine in &engines {
                    let mut args = args.clone();
                    args.extend(["--engine", engine]);
                    let got = run_json(&args);
                    if got.get("refused") != want.get("refused") {
                        // An skb test run refuses frames whose IP header
                        // is cut short, and says so.
                        assert_eq!((form, *engine), ("socket", "kernel"), "{args:?}");
                        skipped += 1;
                        continue;
                    }
                    assert_eq!(got["blocks"], want["blocks"], "{args:?}");
                    assert_eq!(got["accepted"], want["accepted"], "{args:?}");
                    compared += 1;
                }
            }
        }
    }
    println!(
        "{compared} runs leave the interpreter's memory ({skipped} kernel runs as an skb left out: \
         its test run refuses some frames of the capture, and says so)"
    );
    assert!(skipped * 4 <= compared, "{skipped} of {compared}");
    assert!(exceptions > 1000, "the handler ran {exceptions} times");
}

#[test]
fn protocol_counts_agree_with_tcpdump() {
    let pcap = capture("of10_s4810.pcap");
    let report = run_json(&[
        program("protocols.s").to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--words",
        "512",
    ]);
    let mut total = 0;
    for proto in [1u64, 6, 17] {
        let out = testkit::tool::output(Command::new("tcpdump").args([
            "--count",
            "-r",
            pcap.to_str().unwrap(),
            &format!("ip proto {proto}"),
        ]));
        // "N packets"
        let lines: u64 = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert_eq!(word(&report, 0, 2 * proto), lines, "protocol {proto}");
        total += lines;
    }
    assert!(total > 100, "{total}");
    assert_eq!(report["packets"], 137);
}

#[test]
fn switching_blocks_every_n_packets_loses_nothing() {
    let pcap = capture("of10_s4810.pcap");
    let prog = program("protocols.s");
    let args = [
        prog.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--words",
        "512",
    ];
    let whole = run_json(&args);
    for engine in ["interp", "jit"] {
        let mut a = args.to_vec();
        a.extend([
            "--switch-every",
            "20",
            "--switch-mode",
            "zero",
            "--engine",
            engine,
        ]);
        let split = run_json(&a);
        let retired = split["retired"].as_array().unwrap();
        assert!(retired.len() >= 5, "{}", retired.len());
        for proto in [1u64, 6, 17] {
            let w = 2 * proto;
            let mut sum: u64 = retired
                .iter()
                .flat_map(|r| r["words"].as_array().unwrap())
                .filter(|p| p[0] == w)
                .map(|p| p[1].as_u64().unwrap())
                .sum();
            let active = split["blocks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["active"] == true)
                .unwrap()["block"]
                .as_u64()
                .unwrap();
            sum += word(&split, active, w);
            assert_eq!(sum, word(&whole, 0, w), "{engine}, protocol {proto}");
        }
    }
}

#[test]
fn asm_prints_writes_and_refuses() {
    let out = Command::new(SLUICE)
        .args([
            "xpf",
            "asm",
            program("sources.s").to_str().unwrap(),
            "--words",
            "513",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(012) bsp") && text.contains("M[x + 0]") && text.contains("exc"));
    // Its bytes run as the text does.
    let dir = std::env::temp_dir().join(format!("sluice-xpf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("sources.bin");
    let st = Command::new(SLUICE)
        .args([
            "xpf",
            "asm",
            program("sources.s").to_str().unwrap(),
            "--words",
            "513",
            "-o",
        ])
        .arg(&bin)
        .status()
        .unwrap();
    assert!(st.success());
    let pcap = capture("mptcp-v0.pcap");
    let from_text = run_json(&[
        program("sources.s").to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--words",
        "513",
    ]);
    let from_bytes = run_json(&[
        bin.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
        "--words",
        "513",
    ]);
    assert_eq!(from_text["blocks"], from_bytes["blocks"]);
    // Too few words for the table: refused, naming the instruction.
    let out = Command::new(SLUICE)
        .args([
            "xpf",
            "asm",
            program("sources.s").to_str().unwrap(),
            "--words",
            "512",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("persistent word M[512]"), "{err}");
    let bad = dir.join("bad.s");
    std::fs::write(&bad, "l: ldb [14]\nja l\nexc\nh: ja h\nret #0\n").unwrap();
    let out = Command::new(SLUICE)
        .args(["xpf", "run", bad.to_str().unwrap(), "--gen", "udp,count=1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("backward jump in the exception handler"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `sluice xpf mem DIR show --json`.
fn shown(dir: &str) -> Value {
    serde_json::from_str(&common::sluice(&["xpf", "mem", dir, "show", "--json"])).unwrap()
}

#[test]
fn a_loaded_instance_counts_live_frames_and_switches_blocks_while_it_runs() {
    if !common::kernel_available("xPF on a veth pair") {
        return;
    }
    let p = common::Pair::new("xpf");
    let dir = p.pin("xpf");
    let prog = program("protocols.s");
    let out = common::sluice(&[
        "--netns",
        &p.b,
        "xpf",
        "load",
        prog.to_str().unwrap(),
        "--dev",
        common::VB,
        "--pin",
        &dir,
        "--words",
        "512",
        "--blocks",
        "3",
    ]);
    assert!(out.contains("attached to sl_rx"), "{out}");
    let udp = |n: u32| p.send(&format!("udp,flows=4,size=100,count={n}"), "packet");
    udp(50);
    let m = shown(&dir);
    assert_eq!(word(&m, 0, 34), 50, "{m}");
    assert_eq!(word(&m, 0, 35), 50 * 100, "{m}");
    // Double buffering while frames arrive: a fresh block, the old one kept.
    let mem = |args: &[&str]| {
        let mut a = vec!["xpf", "mem", dir.as_str()];
        a.extend(args);
        common::sluice(&a).trim().to_string()
    };
    assert_eq!(mem(&["malloc"]), "1");
    assert_eq!(mem(&["switch", "1", "zero"]), "0");
    udp(30);
    let m = shown(&dir);
    assert_eq!((word(&m, 0, 34), word(&m, 1, 34)), (50, 30), "{m}");
    assert_eq!(m["blocks"][1]["active"], true);
    // Written while inactive, then switched back to as it is.
    mem(&["write", "0", "34", "1000"]);
    assert_eq!(mem(&["switch", "0", "keep"]), "1");
    udp(5);
    assert_eq!(word(&shown(&dir), 0, 34), 1005);
    // A copy carries the counts on.
    assert_eq!(mem(&["switch", "1", "copy"]), "0");
    udp(2);
    let m = shown(&dir);
    assert_eq!((word(&m, 0, 34), word(&m, 1, 34)), (1005, 1007), "{m}");
    assert_eq!(
        mem(&["read", "1", "--at", "34", "--count", "1", "--json"])
            .replace(char::is_whitespace, ""),
        "[1007]"
    );
    // The active block cannot be freed; an inactive one can.
    let out = Command::new(SLUICE)
        .args(["xpf", "mem", &dir, "free", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("block 1 is active"));
    mem(&["free", "0"]);
    assert_eq!(shown(&dir)["blocks"].as_array().unwrap().len(), 1);
    let out = common::sluice(&["--netns", &p.b, "xpf", "unload", &dir]);
    assert!(out.contains("detached from sl_rx"), "{out}");
    assert!(!std::path::Path::new(&dir).exists());
}
