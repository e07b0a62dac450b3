//! `sluice profile` end to end: the model, the places, the exports, the
//! plots, the host calibration, and clear errors.

mod common;

use std::process::Command;

use common::object_path;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = sluice().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_header_only_program_is_linear_with_no_per_byte_cost() {
    let count = object_path("xdp_count");
    let v = json(&[
        "profile",
        &count,
        "--sizes",
        "64..1500:200",
        "--per-size",
        "3",
        "--json",
    ]);
    // xdp_count: the same instructions for every UDP frame, whatever its size.
    assert_eq!(v["beta"], 0.0);
    assert_eq!(v["delta"], 0.0);
    assert!(v["alpha"].as_f64().unwrap() > 10.0);
    assert_eq!(v["model"]["linear"], true);
    let rows = v["model"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9, "64, 264, ..., 1464 and 1500");
    assert_eq!(rows.last().unwrap()["len"], 1500);
    // The per-CPU counter lives in map proto_stats: one load, one store.
    let places = rows[0]["places"].as_array().unwrap();
    let stats = places
        .iter()
        .find(|p| p["place"] == "map:proto_stats")
        .unwrap();
    assert!(stats["loads"].as_f64().unwrap() >= 1.0);
    // The IXP1200 by default: five memory latencies.
    assert_eq!(v["cpus"].as_array().unwrap().len(), 5);
}

#[test]
fn exports_and_plots() {
    let dir = std::env::temp_dir().join(format!("sluice-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (model, csv, plots) = (dir.join("m.json"), dir.join("m.csv"), dir.join("plots"));
    let out = sluice()
        .args([
            "profile",
            &object_path("xdp_parse_tx"),
            "--sizes",
            "64..512:64",
        ])
        .args(["--cpu", "f=1GHz,tmem=10ns", "--model"])
        .arg(&model)
        .arg("--csv")
        .arg(&csv)
        .arg("--plot")
        .arg(&plots)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("alpha ="), "{text}");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&model).unwrap()).unwrap();
    let (alpha, gamma) = (m["alpha"].as_f64().unwrap(), m["gamma"].as_f64().unwrap());
    // At 1 GHz an instruction is 1 ns; each access 10 ns more.
    let delay = m["lengths"][0]["delay_ns"]["f=1000MHz,tmem=10ns"]
        .as_f64()
        .unwrap();
    assert!((delay - (alpha + 10.0 * gamma)).abs() < 1e-6, "{delay}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.starts_with(
        "len,packets,insns,accesses,insns_model,accesses_model,delay_ns[f=1000MHz;tmem=10ns]"
    ));
    assert_eq!(csv.lines().count(), 1 + 8);
    for f in ["cost.svg", "delay.svg", "insns-histogram.svg"] {
        let svg = std::fs::read_to_string(plots.join(f)).unwrap();
        assert!(svg.contains("<svg") && svg.contains("xdp_parse_tx"), "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_host_is_calibrated_against_the_jit() {
    let v = json(&[
        "profile",
        &object_path("xdp_parse_tx"),
        "--sizes",
        "64..1500:256",
        "--per-size",
        "2",
        "--calibrate-packets",
        "2",
        "--cpu",
        "host",
        "--json",
    ]);
    let c = &v["calibration"];
    assert_eq!(c["cpu"]["name"], "host");
    assert!(c["cycles_per_insn"].as_f64().unwrap() > 0.0);
    assert_eq!(c["points"].as_array().unwrap().len(), 7);
    for p in c["points"].as_array().unwrap() {
        assert!(p["measured_ns"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn bad_input_is_named() {
    let count = object_path("xdp_count");
    for (args, want) in [
        (vec!["--sizes", "100..50"], "--sizes 100..50"),
        (vec!["--sizes", "a..b"], "expected FROM..TO"),
        (vec!["--cpu", "f=233"], "--cpu clock `233`"),
        (
            vec!["--cpu", "host", "--pcap", "/nonexistent.pcap"],
            "nonexistent",
        ),
    ] {
        let out = sluice()
            .arg("profile")
            .arg(&count)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
