//! `sluice sim` end to end: a model written by `sluice profile` slows a
//! window-1 flow by exactly what it predicts for a segment and its ACK;
//! the table, the RTT samples, the plot and clear errors.

mod common;

use std::path::Path;
use std::process::Command;

use common::{object_path, sluice};

/// A fresh directory `sluice-sim-TAG-PID` (testkit's).
fn temp_dir(tag: &str) -> std::path::PathBuf {
    testkit::temp_dir(&format!("sim-{tag}"))
}

/// Profiles `program` over a few sizes into `model` (the IXP1200's five
/// memory latencies).
fn write_model(program: &str, model: &Path) {
    sluice(&[
        "profile",
        &object_path(program),
        "--sizes",
        "64..1500:256",
        "--per-size",
        "2",
        "--model",
        model.to_str().unwrap(),
    ]);
}

/// What the model file predicts for a packet of `len` bytes on its processor `cpu`, in whole ns.
fn predicted_ns(m: &serde_json::Value, cpu: usize, len: f64) -> u64 {
    let f = |k: &str| m[k].as_f64().unwrap();
    let c = &m["cpus"][cpu];
    let g = |k: &str| c[k].as_f64().unwrap();
    let (insns, accesses) = (f("alpha") + f("beta") * len, f("gamma") + f("delta") * len);
    let t = g("t0_ns")
        + g("tbyte_ns") * len
        + insns * g("cpi") * 1e3 / g("f_mhz")
        + accesses * g("tmem_ns");
    t.round() as u64
}

#[test]
fn a_model_slows_a_window_of_one_by_what_it_predicts() {
    let dir = temp_dir("model");
    let model = dir.join("router.json");
    write_model("xdp_router", &model);
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&model).unwrap()).unwrap();
    let out = sluice(&[
        "sim",
        "--model",
        model.to_str().unwrap(),
        "--window",
        "1",
        "--segments",
        "20",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["name"], "no processing");
    assert_eq!(rows[1]["name"], m["program"]);
    let rtt = |r: &serde_json::Value| r["result"]["rtt"]["mean_ns"].as_f64().unwrap();
    // 4 x 10 ms of propagation; 1500 bytes (1.2 ms) and 40 (32 us) on each of two links.
    assert_eq!(rtt(&rows[0]), 42_464_000.0);
    // The default processor is the file's first: the IXP1200 with 4 ns memory.
    assert_eq!(rows[1]["router"]["data"]["cpu"]["name"], "ixp1200,tmem=4ns");
    let want = predicted_ns(&m, 0, 1500.0) + predicted_ns(&m, 0, 40.0);
    assert!(want > 0);
    assert_eq!(rtt(&rows[1]) - rtt(&rows[0]), want as f64);
    assert_eq!(rows[1]["round_trip_processing_ns"], want);
    assert_eq!(rows[1]["result"]["samples"].as_array().unwrap().len(), 20);
    assert_eq!(rows[1]["result"]["router"]["processing_ns"], 20 * want);

    // Another processor of the file: SDRAM at 170 ns.
    let out = sluice(&[
        "sim",
        "--model",
        model.to_str().unwrap(),
        "--cpu",
        "ixp1200,tmem=170ns",
        "--window",
        "1",
        "--segments",
        "5",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let slow = predicted_ns(&m, 4, 1500.0) + predicted_ns(&m, 4, 40.0);
    assert!(slow > want);
    assert_eq!(v["rows"][1]["mean_rtt_increase_ns"], slow as f64);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_table_the_samples_and_the_plot() {
    let dir = temp_dir("table");
    let (csv, svg) = (dir.join("rtt.csv"), dir.join("rtt.svg"));
    let text = sluice(&[
        "sim",
        "--delay-ns",
        "3000000",
        "--segments",
        "300",
        "--rtt-csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(text.contains("10 Mb/s links, 10 ms each way"), "{text}");
    assert!(text.contains("Reno (receive window 43)"), "{text}");
    assert!(text.contains("no processing"), "{text}");
    assert!(text.contains("constant 3 ms"), "{text}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.starts_with("scenario,at_ns,rtt_ns,ack\nno processing,42464000,42464000,1\n"));
    assert_eq!(
        csv.lines()
            .filter(|l| l.starts_with("constant 3 ms,"))
            .count(),
        300
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("constant 3 ms: mean"),
        "{svg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_named() {
    let dir = temp_dir("bad");
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"program": "p", "alpha": 1, "beta": 0, "gamma": "x", "delta": 0, "cpus": []}"#,
    )
    .unwrap();
    let bad = bad.to_str().unwrap();
    for (args, want) in [
        (vec!["--model", bad], "field `gamma`: expected a number"),
        (vec!["--model", "/nonexistent.json"], "/nonexistent.json"),
        (vec!["--rate", "fast"], "--rate fast"),
        (vec!["--prop", "10"], "--prop 10"),
        (vec!["--segment", "1500,x"], "--segment 1500,x"),
        (vec!["--window", "0"], "at least 1 segment"),
        (vec!["--window", "2", "--tcp"], "cannot be used with"),
    ] {
        let out = Command::new(common::SLUICE)
            .arg("sim")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
