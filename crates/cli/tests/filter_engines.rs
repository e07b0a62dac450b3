//! `sluice filter --engine jit|ebpf-jit|kernel` writes the very packets the
//! classic interpreter (`--engine interp`) writes: every capture of
//! tcpdump's test suite, expressions that read `len`, IP and TCP fields,
//! VLAN tags, IPv6 and Ethernet bytes, the output files compared byte for
//! byte. The
//! captures go through the library (`cbpf::filter_capture` with each
//! engine) rather than a process per capture; one run per engine goes
//! through the command line.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::{SLUICE, captures};

const EXPRESSIONS: &[&str] = &[
    "tcp",
    "udp port 53 or icmp",
    "ip6",
    "not ip",
    "len > 200",
    "len > 100 and udp",
    "(tcp or udp) and not port 22 and (ip[8] > 32 or len > 100) and not ip6",
    "tcp[tcpflags] & (tcp-syn|tcp-fin) != 0",
    "vlan and ip",
    "ip6 and tcp port 80",
    "ether[0] & 1 = 0 and ether[12:2] = 0x800",
];

/// A fresh directory `sluice-engines-NAME-PID` (testkit's).
fn scratch(name: &str) -> PathBuf {
    testkit::temp_dir(&format!("engines-{name}"))
}

/// Every capture and expression through `engine` and the interpreter: the
/// same outcome (the same file written, or the same error).
fn same_as_interp(engine: &mut dyn cbpf::FilterEngine) {
    let started = Instant::now();
    let name = engine.name();
    let dir = scratch(name);
    let (want_path, got_path) = (dir.join("interp.pcap"), dir.join("engine.pcap"));
    let (mut runs, mut packets, mut matched, mut both_refused) = (0u64, 0u64, 0u64, 0u64);
    let mut interpreted: Vec<(&str, u64)> = Vec::new();
    let captures = captures();
    for capture in &captures {
        for expr in EXPRESSIONS {
            let run = |engine: &mut dyn cbpf::FilterEngine, out: &Path| {
                let _ = std::fs::remove_file(out);
                let opts = cbpf::FilterOptions {
                    write: Some(out),
                    count: None,
                    stop: None,
                };
                cbpf::filter_capture(capture, expr, engine, &opts)
            };
            let what = format!("{} `{expr}`", capture.display());
            let want = run(&mut cbpf::Interp, &want_path);
            let got = run(engine, &got_path);
            let (want, got) = match (want, got) {
                (Err(w), Err(g)) => {
                    // (naming each its own output file)
                    let g = g.to_string().replace("engine.pcap", "interp.pcap");
                    assert_eq!(g, w.to_string(), "{what}: the error");
                    both_refused += 1;
                    continue;
                }
                (Ok(w), Ok(g)) => (w, g),
                (w, g) => panic!("{what}: interp {w:?}, {name} {g:?}"),
            };
            assert_eq!(got.read, want.read, "{what}: packets read");
            assert_eq!(got.matched, want.matched, "{what}: packets matched");
            assert_eq!(got.capture_error, want.capture_error, "{what}");
            assert!(
                std::fs::read(&got_path).unwrap() == std::fs::read(&want_path).unwrap(),
                "{what}: the files written differ"
            );
            for (why, n) in got.interpreted {
                match interpreted.iter_mut().find(|r| r.0 == why) {
                    Some(r) => r.1 += n,
                    None => interpreted.push((why, n)),
                }
            }
            runs += 1;
            packets += got.read;
            matched += got.matched;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let by_interp: u64 = interpreted.iter().map(|r| r.1).sum();
    println!(
        "{name}: {} captures x {} expressions: {runs} runs write the same file as interp \
         ({packets} packets decided, {matched} matched), {both_refused} refused alike; \
         {by_interp} packets decided by the interpreter in the engine's place; {:.1} s",
        captures.len(),
        EXPRESSIONS.len(),
        started.elapsed().as_secs_f64()
    );
    for (why, n) in &interpreted {
        println!("  {n}: {why}");
    }
    // (about 390 captures an expression)
    let want_runs = 380 * EXPRESSIONS.len() as u64;
    assert!(
        runs > want_runs && matched > 5000,
        "{runs} runs, {matched} matched"
    );
    // The engine decides nearly everything itself (the kernel leaves about
    // one packet in 18 of these captures to the interpreter: see above).
    assert!(
        by_interp * 10 < packets,
        "{by_interp} of {packets} by the interpreter"
    );
}

/// `sluice filter --engine E -r F -w O --json EXPR` on `capture` writes
/// what `sluice filter` without `--engine` (the interpreter) writes; the
/// report names the engine. Returns the report.
fn cli_same_as_interp(engine: &str, capture: &Path) -> serde_json::Value {
    let dir = scratch(&format!("cli-{engine}"));
    let c = capture.to_str().unwrap();
    let run = |engine: Option<&str>, out: &Path| {
        let mut cmd = Command::new(SLUICE);
        cmd.arg("filter");
        if let Some(e) = engine {
            cmd.args(["--engine", e]);
        }
        let o = cmd
            .args(["-r", c, "-w"])
            .arg(out)
            .args(["--json", "udp or len > 100"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "--engine {engine:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let (want, got) = (dir.join("interp.pcap"), dir.join("engine.pcap"));
    let w = run(None, &want);
    let g = run(Some(engine), &got);
    assert_eq!(g["engine"], engine);
    assert_eq!(w["engine"], "interp");
    assert_eq!(g["matched"], w["matched"]);
    assert!(
        std::fs::read(&got).unwrap() == std::fs::read(&want).unwrap(),
        "{c}: --engine {engine} wrote another file"
    );
    let _ = std::fs::remove_dir_all(&dir);
    g
}

/// A capture of 137 packets, 72 of them matching `udp or len > 100`, one
/// of which (an IPv4 header cut short) the kernel's test run refuses.
fn cli_capture() -> PathBuf {
    let c = captures()
        .into_iter()
        .find(|c| c.ends_with("of10_s4810.pcap"));
    c.expect("of10_s4810.pcap among tcpdump's captures")
}

#[test]
fn interp_engine_is_the_default() {
    // (the default's own comparison with tcpdump: tests/filter.rs)
    let mut matched = 0;
    for capture in captures().iter().step_by(20) {
        let r = cli_same_as_interp("interp", capture);
        assert_eq!(r["decided_by_interpreter"], 0);
        matched += r["matched"].as_u64().unwrap();
    }
    assert!(matched > 50, "{matched}");
    println!("interp: 21 captures alike on the command line ({matched} packets matched)");
}

#[test]
fn jit_engine_writes_what_the_interpreter_writes() {
    same_as_interp(&mut cbpf::Jit);
    let r = cli_same_as_interp("jit", &cli_capture());
    assert!(r["matched"].as_u64().unwrap() > 0, "{r}");
    // Native code decides every packet itself on x86-64 (elsewhere the
    // interpreter does, and the report says so).
    if cfg!(target_arch = "x86_64") {
        assert_eq!(r["decided_by_interpreter"], 0, "{r}");
        assert!(r.get("interpreter_reasons").is_none(), "{r}");
    } else {
        assert_eq!(r["decided_by_interpreter"], r["read"], "{r}");
    }
}

#[test]
fn ebpf_jit_engine_writes_what_the_interpreter_writes() {
    same_as_interp(&mut xpf::classic::EbpfJit);
    let r = cli_same_as_interp("ebpf-jit", &cli_capture());
    assert!(r["matched"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["decided_by_interpreter"], 0);
}

#[test]
fn kernel_engine_writes_what_the_interpreter_writes() {
    if !testkit::kernel_available("sluice filter --engine kernel") {
        return;
    }
    same_as_interp(&mut xpf::classic::Kernel::new().unwrap());
    let r = cli_same_as_interp("kernel", &cli_capture());
    assert!(r["matched"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["decided_by_interpreter"], 1, "{r}");
    println!("kernel, on the command line: {r}");
}

#[test]
fn kernel_engine_without_privilege_says_what_is_missing() {
    let mut cmd = if kernel::privileged() {
        // As nobody, without capabilities: a copy of the binary and the
        // capture that nobody may read.
        let dir = scratch("nobody");
        let (bin, pcap) = (dir.join("sluice"), dir.join("in.pcap"));
        std::fs::copy(SLUICE, &bin).unwrap();
        std::fs::copy(cli_capture(), &pcap).unwrap();
        for p in [&dir, &bin, &pcap] {
            let mode = if p == &pcap { 0o644 } else { 0o755 };
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(mode))
                .unwrap();
        }
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(&bin)
        .args(["filter", "--engine", "kernel", "-r"])
        .arg(&pcap);
        c
    } else {
        let mut c = Command::new(SLUICE);
        c.args(["filter", "--engine", "kernel", "-r"])
            .arg(cli_capture());
        c
    };
    let out = match cmd.arg("udp").output() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("SKIPPED the kernel engine without privilege: {cmd:?}: {e}");
            return;
        }
    };
    let _ = std::fs::remove_dir_all(scratch("nobody"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("needs root, or CAP_BPF and CAP_NET_ADMIN"),
        "{err}"
    );
}
