//! Per-packet time of the five benchmark programs in every engine, as
//! `sluice bench` measures it (same binary, same run): sluice's interpreter
//! and JIT, the kernel through BPF_PROG_TEST_RUN (when root), rbpf where
//! the program fits it. Prints one table and the ratios the JIT issue's
//! goals are stated in.
//!
//! `cargo bench -p sluice --bench per_packet` (`SLUICE_BENCH_SECONDS`,
//! default 1, is the time per engine and program).

use std::process::Command;

const PROGRAMS: &[&str] = &[
    "xdp_drop",
    "xdp_parse_tx",
    "xdp_ddos",
    "xdp_router",
    "xdp_lb",
];
const ENGINES: &[&str] = &[
    "interp",
    "jit",
    "kernel",
    "kernel-repeat",
    "rbpf-interp",
    "rbpf-jit",
];

fn main() {
    let seconds = std::env::var("SLUICE_BENCH_SECONDS").unwrap_or_else(|_| "1".into());
    let dir = std::env::temp_dir().join(format!("sluice-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    println!("ns per packet (lower is better), {seconds} s per engine");
    print!("{:<14}", "program");
    for e in ENGINES {
        print!("{e:>15}");
    }
    println!("{:>12}{:>12}", "jit/kernel", "interp/jit");
    for name in PROGRAMS {
        let path = dir.join(format!("{name}.o"));
        std::fs::write(&path, programs::object(name).expect("an example program"))
            .expect("writing the object");
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("bench")
            .arg(&path)
            .args(["--gen", "udp,count=5000", "--seconds", &seconds, "--json"])
            .output()
            .expect("running sluice bench");
        assert!(
            out.status.success(),
            "sluice bench {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("sluice bench --json prints JSON");
        let ns = |engine: &str| {
            report["results"]
                .as_array()?
                .iter()
                .find(|r| r["engine"] == engine)?["ns_per_packet"]
                .as_f64()
        };
        print!("{name:<14}");
        for e in ENGINES {
            match ns(e) {
                Some(v) => print!("{v:>15.1}"),
                None => print!("{:>15}", "skipped"),
            }
        }
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}x", a / b),
            _ => "-".into(),
        };
        println!(
            "{:>12}{:>12}",
            ratio(ns("jit"), ns("kernel")),
            ratio(ns("interp"), ns("jit"))
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
