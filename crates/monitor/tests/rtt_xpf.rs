//! The xPF version of passive RTT (`programs/xpf/rtt.s`, `monitor::XpfRtt`)
//! gives the reference's samples (method, flow, RTT, time), per-flow
//! statistics and counters: on every capture of tcpdump's test suite (many
//! malformed: nothing may fail or panic) in the xPF interpreter, and on
//! generated TCP conversations (`tcp-conv`) in the interpreter, sluice's VM
//! and its JIT. Tables of 512 SYN and 4,096 TSval slots: none fills (the
//! counters say so), so the probed tables and the reference's hash maps
//! keep the same entries.

use std::sync::atomic::AtomicU64;

use monitor::{
    MeterOptions, Method, RttCounters, RttEngine, RttOptions, RttSample, RttSummary, XPF_MAX_SYNS,
    XPF_MAX_TSVALS, XpfRtt, measure_rtt,
};
use pipeline::{Capture, Generated, Source};
use testkit::captures;
use xpf::XpfEngine;

fn meter() -> MeterOptions {
    MeterOptions {
        syn_capacity: XPF_MAX_SYNS,
        ts_capacity: XPF_MAX_TSVALS,
        ..MeterOptions::default()
    }
}

fn run(
    source: &mut dyn Source,
    engine: RttEngine,
    meter: MeterOptions,
) -> (Vec<RttSample>, RttSummary) {
    let mut got = Vec::new();
    let opts = RttOptions {
        meter,
        engine,
        limit: None,
    };
    let s = measure_rtt(source, &opts, &AtomicU64::new(0), |x| {
        got.extend_from_slice(x)
    })
    .unwrap_or_else(|e| panic!("{engine:?}: {e}"));
    (got, s)
}

/// The first sample where `got` and `want` differ, for the message.
fn first_difference(got: &[RttSample], want: &[RttSample]) -> String {
    match (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        Some(i) => format!(
            "sample {i} of {}: xPF {:?}, reference {:?}",
            want.len(),
            got.get(i),
            want.get(i)
        ),
        None => "the samples agree".into(),
    }
}

#[test]
fn the_xpf_program_gives_the_references_samples_on_every_capture() {
    let (mut runs, mut handshakes, mut timestamps, mut flows) = (0, 0, 0, 0);
    for path in captures() {
        let Ok(mut a) = Capture::open(&path) else {
            continue;
        };
        let (want, want_s) = run(&mut a, RttEngine::Table, meter());
        let mut b = Capture::open(&path).unwrap();
        let (got, got_s) = run(&mut b, RttEngine::Xpf(XpfEngine::Interp), meter());
        assert!(
            got == want,
            "{}: {}",
            path.display(),
            first_difference(&got, &want)
        );
        assert_eq!(got_s, want_s, "{}: summaries", path.display());
        assert_eq!(
            want_s.counters,
            RttCounters::default(),
            "{}: a table filled",
            path.display()
        );
        runs += 1;
        flows += want_s.flows.len();
        handshakes += want
            .iter()
            .filter(|s| s.method == Method::Handshake)
            .count();
        timestamps += want
            .iter()
            .filter(|s| s.method == Method::Timestamp)
            .count();
    }
    println!(
        "{runs} captures: {handshakes} handshake and {timestamps} timestamp samples in {flows} \
         flow statistics alike from the reference and programs/xpf/rtt.s"
    );
    // The suite's TCP captures give samples of both kinds.
    assert!(runs > 380, "{runs}");
    assert!(
        handshakes >= 20 && timestamps >= 250,
        "{handshakes} {timestamps}"
    );
}

#[test]
fn the_xpf_program_agrees_on_every_engine_on_generated_conversations() {
    for spec in [
        "tcp-conv,flows=20,rtt=2..40,count=2000",
        "tcp-conv,v6,flows=7,rtt=1..3,count=700,think=50",
        // Longer than the maximum age: stale TSvals are taken again.
        "tcp-conv,flows=2,rtt=100,count=600",
    ] {
        let specs = [spec.to_string()];
        let (want, want_s) = run(
            &mut Generated::parse(&specs).unwrap(),
            RttEngine::Table,
            meter(),
        );
        assert!(want_s.samples[1] > 0 && want_s.samples[2] > 0, "{spec}");
        for engine in [XpfEngine::Interp, XpfEngine::Vm, XpfEngine::Jit] {
            let (got, got_s) = run(
                &mut Generated::parse(&specs).unwrap(),
                RttEngine::Xpf(engine),
                meter(),
            );
            assert!(
                got == want,
                "{spec} on {engine:?}: {}",
                first_difference(&got, &want)
            );
            assert_eq!(got_s, want_s, "{spec} on {engine:?}");
        }
        println!("{spec}: {} samples alike on three engines", want.len());
    }
}

#[test]
fn small_tables_count_what_they_refuse() {
    // 8 slots each for 20 flows: SYNs and TSvals are refused, counted, and
    // every sample the xPF version gives is one the reference gives too.
    let small = MeterOptions {
        syn_capacity: 8,
        ts_capacity: 8,
        flow_capacity: 5,
        ..MeterOptions::default()
    };
    let specs = ["tcp-conv,flows=20,rtt=2..40,count=400".to_string()];
    let (got, s) = run(
        &mut Generated::parse(&specs).unwrap(),
        RttEngine::Xpf(XpfEngine::Interp),
        small,
    );
    let (want, _) = run(
        &mut Generated::parse(&specs).unwrap(),
        RttEngine::Table,
        meter(),
    );
    assert!(
        s.counters.syn_full > 0 && s.counters.ts_full > 0,
        "{:?}",
        s.counters
    );
    assert!(s.counters.flows_full > 0, "{:?}", s.counters);
    assert_eq!(s.flows.len(), 5);
    assert!(!got.is_empty() && got.len() < want.len());
    assert!(
        got.iter().all(|x| want.contains(x)),
        "a sample the reference has not"
    );
    // Sizes the program cannot hold are refused by name.
    for (syns, ts) in [(XPF_MAX_SYNS + 1, 8), (8, XPF_MAX_TSVALS + 1), (0, 8)] {
        let opts = MeterOptions {
            syn_capacity: syns,
            ts_capacity: ts,
            ..MeterOptions::default()
        };
        let err = XpfRtt::new(&opts, XpfEngine::Interp)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("the xPF program holds 1 to"), "{err}");
    }
}

/// `programs/xpf/rtt.s` is what its generator writes (edit the script,
/// not the program).
#[test]
fn the_program_is_its_generators_output() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../programs/xpf");
    let out = std::process::Command::new("python3")
        .arg(format!("{root}/rtt.py"))
        .arg("--stdout")
        .output()
        .expect("python3 (./dev.sh setup installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(format!("{root}/rtt.s")).unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout) == written,
        "programs/xpf/rtt.s differs from `python3 programs/xpf/rtt.py --stdout`: run the script"
    );
}
