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
        let png = std::fs::read(plots.join(f).with_extension("png")).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n") && png.len() > 10_000, "{f}");
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
    // On a busy machine two packets a length may leave the program's few
    // nanoseconds in the timing's noise: the report must then say so, not
    // give 0 cycles per instruction as a measurement.
    let cpi = c["cycles_per_insn"].as_f64().unwrap();
    let note = c["note"].as_str().unwrap_or("");
    assert!(
        cpi > 0.0 || (cpi == 0.0 && note.starts_with("cycles per instruction not measured")),
        "cycles per instruction {cpi}, note {note:?}"
    );
    assert_eq!(c["points"].as_array().unwrap().len(), 7);
    for p in c["points"].as_array().unwrap() {
        assert!(p["measured_ns"].as_f64().unwrap() > 0.0);
    }
    // Every other length is held out of the fit and predicted.
    let held = c["points"].as_array().unwrap();
    let held: Vec<bool> = held.iter().map(|p| p["held_out"] == true).collect();
    assert_eq!(held, [false, true, false, true, false, true, false]);
    assert!(c["held_out_mean_error_pct"].as_f64().is_some());
}

#[test]
fn forwarding_profiles_over_a_route_table() {
    let dir = std::env::temp_dir().join(format!("sluice-profile-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let routes = dir.join("routes.txt");
    std::fs::write(
        &routes,
        "default via 192.0.2.1 dev eth0\n10.0.0.0/8 via 192.0.2.2 dev eth1\n10.1.0.0/16 dev eth2 scope link\n",
    )
    .unwrap();
    let spread = "udp,flows=16,dst=0.0.0.0/0";
    for (prog, table) in [
        ("fwd_radix", "synthetic:5000"),
        ("fwd_lctrie", "synthetic:5000,seed=7"),
        ("fwd_lpm_trie", "synthetic:5000,seed=3"),
        ("fwd_radix", routes.to_str().unwrap()),
    ] {
        let v = json(&[
            "profile",
            &object_path(prog),
            "--routes",
            table,
            "--gen",
            spread,
            "--sizes",
            "64..1024:320",
            "--per-size",
            "16",
            "--json",
        ]);
        // Every frame forwarded (a default route), at a cost independent
        // of the length: the same 16 destinations at each size.
        assert_eq!(v["model"]["linear"], true, "{prog} {table}");
        assert_eq!(v["model"]["insns"]["means"]["r2"], 1.0);
        assert!(v["alpha"].as_f64().unwrap() > 50.0);
        assert!(v["beta"].as_f64().unwrap().abs() < 1e-9);
    }
    // More routes, deeper walks.
    let small = json(&[
        "profile",
        &object_path("fwd_radix"),
        "--routes",
        routes.to_str().unwrap(),
        "--gen",
        spread,
        "--json",
    ]);
    let big = json(&[
        "profile",
        &object_path("fwd_radix"),
        "--routes",
        "synthetic:50000",
        "--gen",
        spread,
        "--json",
    ]);
    assert!(big["alpha"].as_f64().unwrap() > small["alpha"].as_f64().unwrap() + 100.0);
    for (prog, table, want) in [
        ("xdp_count", "synthetic:10", "has no route-table map"),
        ("fwd_radix", "synthetic:x", "the number of prefixes first"),
        ("fwd_lctrie", "/nonexistent/routes", "/nonexistent/routes"),
    ] {
        let out = sluice()
            .args(["profile", &object_path(prog), "--routes", table])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{prog} {table}: {err}"
        );
    }
    std::fs::write(&routes, "10.0.0.0/8 via\n").unwrap();
    let out = sluice()
        .args([
            "run",
            &object_path("fwd_radix"),
            "--gen",
            "udp,count=1",
            "--routes",
            routes.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("line 1"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn warm_up_reaches_the_steady_state() {
    let args = |warm: bool| {
        let mut v = vec![
            "profile".to_string(),
            object_path("classify"),
            "--sizes".into(),
            "64..1024:320".into(),
            "--gen".into(),
            "udp,flows=8".into(),
            "--per-size".into(),
            "8".into(),
            "--json".into(),
        ];
        if warm {
            v.push("--warm-up".into());
        }
        v
    };
    let cold = json(&args(false).iter().map(String::as_str).collect::<Vec<_>>());
    let warm = json(&args(true).iter().map(String::as_str).collect::<Vec<_>>());
    // Cold, the first size inserts the flows; warm, every packet updates.
    assert_eq!(cold["model"]["linear"], false);
    assert_eq!(warm["model"]["linear"], true);
    let rows = |v: &serde_json::Value| v["model"]["rows"][0]["insns_mean"].as_f64().unwrap();
    assert!(rows(&cold) > rows(&warm));
}

#[test]
fn esp_profiles_with_an_sa() {
    let v = json(&[
        "profile",
        &object_path("esp_aes"),
        "--sa",
        "0x1000:000102030405060708090a0b0c0d0e0f",
        "--sizes",
        "64..1500:256",
        "--per-size",
        "2",
        "--json",
    ]);
    // AES-CBC over the payload: tens of instructions per byte.
    assert!(v["beta"].as_f64().unwrap() > 50.0, "{}", v["beta"]);
    assert_eq!(v["model"]["linear"], true);
    assert!(
        v["model"]["rows"][0]["places"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["place"] == "map:esp_sa")
    );
    // Without an SA every frame passes at a constant cost.
    let none = json(&[
        "profile",
        &object_path("esp_aes"),
        "--sizes",
        "64..1500:256",
        "--json",
    ]);
    assert_eq!(none["beta"], 0.0);
    for (prog, sa, want) in [
        ("esp_aes", "1:00", "key is 16 bytes"),
        (
            "esp_3des",
            "1:000102030405060708090a0b0c0d0e0f",
            "key is 24 bytes",
        ),
        ("esp_aes", "0:000102030405060708090a0b0c0d0e0f", "the SPI"),
        ("esp_aes", "7:zz", "not hex"),
        ("xdp_count", "1:00", "no esp_sa map"),
    ] {
        let out = sluice()
            .args(["profile", &object_path(prog), "--sa", sa])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{prog} {sa}: {err}"
        );
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

/// `sluice profile ARGS`: its status, stdout and stderr.
fn profile(args: &[&str]) -> (bool, serde_json::Value, String) {
    let out = sluice().arg("profile").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.success(), v, err)
}

fn notes(v: &serde_json::Value) -> Vec<String> {
    v["model"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_processor_file_with_a_zero_clock_is_refused_before_the_work() {
    let dir = std::env::temp_dir().join(format!("sluice-profile-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let host = dir.join("host.json");
    std::fs::write(
        &host,
        r#"{"name": "host", "f_mhz": 0, "cpi": 1, "tmem_ns": 1}"#,
    )
    .unwrap();
    // It used to be taken, and --plot then never ended: the child is
    // killed if it runs a minute.
    let mut child = sluice()
        .arg("profile")
        .arg(object_path("xdp_count"))
        .args(["--cpu", host.to_str().unwrap(), "--plot"])
        .arg(dir.join("plots"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("sluice profile --cpu with f_mhz 0 ran a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success());
    assert!(
        err.contains("`f_mhz` is 0: expected a positive number"),
        "{err}"
    );
}

#[test]
fn esp_without_an_sa_and_verdicts_that_change_with_length_are_told() {
    let aes = object_path("esp_aes");
    // No SA: every packet passes untouched; the user is told.
    let (ok, v, err) = profile(&[&aes, "--sizes", "64..1024:480", "--json"]);
    assert!(ok, "{err}");
    assert!(err.contains("no security association"), "{err}");
    assert!(
        notes(&v)
            .iter()
            .any(|n| n.contains("no security association"))
    );
    // With one, datagrams over 1500 bytes pass untouched: two paths.
    let (ok, v, err) = profile(&[
        &aes,
        "--sa",
        "7:000102030405060708090a0b0c0d0e0f",
        "--sizes",
        "64..3000:512",
        "--json",
    ]);
    assert!(ok, "{err}");
    assert!(!err.contains("no security association"), "{err}");
    let notes = notes(&v);
    assert!(
        notes.iter().any(|n| n.contains(
            "the verdict changes with the length (TX for 64..1088 bytes, PASS for 1600..3000 bytes)"
        )),
        "{notes:?}"
    );
}

#[test]
fn frames_cut_by_the_snapshot_length_are_told() {
    let dir = std::env::temp_dir().join(format!("sluice-profile-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (whole, cut) = (dir.join("whole.pcap"), dir.join("cut.pcap"));
    let out = sluice()
        .arg("run")
        .arg(object_path("xdp_pass"))
        .args(["--gen", "udp,flows=4,size=600,count=20", "--out-pass"])
        .arg(&whole)
        .output()
        .unwrap();
    assert!(out.status.success());
    // The same records cut to 96 bytes, as `tcpdump -s 96` writes them.
    let bytes = std::fs::read(&whole).unwrap();
    // The writer's byte order, from the magic number's first byte.
    let big = bytes[0] == 0xa1;
    let word = |b: &[u8]| {
        let w: [u8; 4] = b.try_into().unwrap();
        if big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    };
    let put = |n: u32| {
        if big {
            n.to_be_bytes()
        } else {
            n.to_le_bytes()
        }
    };
    let mut snapped = bytes[..24].to_vec();
    snapped[16..20].copy_from_slice(&put(96));
    let mut at = 24;
    while at < bytes.len() {
        let incl = word(&bytes[at + 8..at + 12]) as usize;
        snapped.extend_from_slice(&bytes[at..at + 8]);
        snapped.extend_from_slice(&put(96));
        snapped.extend_from_slice(&put(incl as u32));
        snapped.extend_from_slice(&bytes[at + 16..at + 16 + 96]);
        at += 16 + incl;
    }
    std::fs::write(&cut, snapped).unwrap();
    let (ok, v, err) = profile(&[
        &object_path("fwd_radix"),
        "--routes",
        "synthetic:100",
        "--pcap",
        cut.to_str().unwrap(),
        "--json",
    ]);
    let (whole_ok, _, whole_err) = profile(&[
        &object_path("fwd_radix"),
        "--routes",
        "synthetic:100",
        "--pcap",
        whole.to_str().unwrap(),
        "--json",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ok && whole_ok, "{err}{whole_err}");
    assert!(
        err.contains("20 of the capture's frames were cut by its snapshot length"),
        "{err}"
    );
    assert!(notes(&v).iter().any(|n| n.contains("snapshot length")));
    assert!(!whole_err.contains("snapshot length"), "{whole_err}");
}

#[test]
fn a_filter_keeps_other_packets_out_of_the_fit() {
    let count = object_path("xdp_count");
    let traffic = [
        "--gen",
        "udp,size=64,count=10",
        "--gen",
        "udp,size=1000,count=10",
        "--gen",
        "icmp,size=500,count=1",
    ];
    let mut all = vec![count.as_str()];
    all.extend(traffic);
    all.push("--json");
    let (ok, v, err) = profile(&all);
    assert!(ok, "{err}");
    assert_eq!(v["model"]["packets"], 21);
    all.extend(["--filter", "udp"]);
    let (ok, v, err) = profile(&all);
    assert!(ok, "{err}");
    assert_eq!(v["model"]["packets"], 20, "the ICMP packet left out");
    let lens: Vec<u64> = v["model"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["len"].as_u64().unwrap())
        .collect();
    assert_eq!(lens, [64, 1000]);
    let (ok, _, err) = profile(&[&count, "--filter", "udp port", "--json"]);
    assert!(!ok && err.contains("--filter udp port"), "{err}");
}
