//! The eBPF version of flow accounting (`programs/flows.c` in sluice's
//! VM) ends the same flows as sluice's flow table, with the same totals,
//! times, flags and reasons, on every capture of tcpdump's test suite and
//! on generated traffic, with timeouts short enough that idle and active
//! ends happen; a full map is not silent (its packets come out as
//! one-packet records, counted).

use testkit::captures;

use monitor::{
    EndReason, Ended, FlowEngine, FlowRunOptions, FlowSummary, TableOptions, account_flows,
};
use pipeline::{Capture, Generated, Source};
use xpf::XpfEngine;

/// A flow as both sides must give it (times to the microsecond: the VM's
/// clock follows the packets but moves a nanosecond per helper call).
type Record = (monitor::FlowKey, u64, u64, u64, u64, u8, u8);

fn run(
    source: &mut dyn Source,
    engine: FlowEngine,
    table: TableOptions,
) -> (Vec<Record>, FlowSummary) {
    let mut got = Vec::new();
    let summary = account_flows(
        source,
        &FlowRunOptions {
            table,
            engine,
            limit: None,
            metrics: None,
        },
        &std::sync::atomic::AtomicU64::new(0),
        |ended: &[Ended]| {
            for e in ended {
                let f = &e.flow;
                got.push((
                    f.key,
                    f.packets,
                    f.bytes,
                    f.first_ns / 1000,
                    f.last_ns / 1000,
                    f.tcp_flags,
                    e.reason.code(),
                ));
            }
        },
    )
    .unwrap();
    got.sort();
    (got, summary)
}

#[test]
fn the_ebpf_program_ends_the_flows_the_table_ends_on_every_capture() {
    let table = TableOptions {
        capacity: 65_536,
        idle_timeout_ns: 1_000_000_000,
        active_timeout_ns: 5_000_000_000,
    };
    let (mut captures_run, mut flows, mut over_a_page) = (0, 0, 0);
    let mut reasons = [0u64; 6];
    for path in captures() {
        let Ok(mut a) = Capture::open(&path) else {
            continue;
        };
        // An XDP program sees a frame's first page only (the rest are
        // fragments): captures with longer frames are counted, left out.
        let mut raw = capture::PcapSource::open(&path).unwrap();
        let mut long = false;
        while let Some(Ok(r)) = raw.next_raw() {
            long |= r.data.len() > runtime::XDP_LINEAR_MAX;
        }
        if long {
            over_a_page += 1;
            continue;
        }
        let mut b = Capture::open(&path).unwrap();
        let (want, _) = run(&mut a, FlowEngine::Table, table);
        let (got, _) = run(&mut b, FlowEngine::Ebpf, table);
        assert_eq!(got, want, "{}", path.display());
        captures_run += 1;
        flows += want.len();
        for r in &want {
            reasons[usize::from(r.6)] += 1;
        }
    }
    println!(
        "{captures_run} captures: {flows} flows alike from the flow table and programs/flows.c \
         (idle {}, active {}, FIN/RST {}, at the end {}); {over_a_page} captures with frames \
         over a page left out",
        reasons[1], reasons[2], reasons[3], reasons[4]
    );
    assert!(over_a_page <= 30, "{over_a_page}");
    assert!(reasons[1] > 0 && reasons[2] > 0 && reasons[3] > 0 && reasons[4] > 0);
}

#[test]
fn the_xpf_program_ends_the_flows_the_table_ends_on_every_capture() {
    // The xPF table holds 2,048 flows at most; no capture has that many.
    let table = TableOptions {
        capacity: 1024,
        idle_timeout_ns: 1_000_000_000,
        active_timeout_ns: 5_000_000_000,
    };
    let (mut captures_run, mut flows) = (0, 0);
    for path in captures() {
        let Ok(mut a) = Capture::open(&path) else {
            continue;
        };
        let (want, _) = run(&mut a, FlowEngine::Table, table);
        let mut b = Capture::open(&path).unwrap();
        let (got, s) = run(&mut b, FlowEngine::Xpf(XpfEngine::Interp), table);
        assert_eq!(got, want, "{}", path.display());
        assert_eq!((s.evicted, s.lost), (0, 0), "{}", path.display());
        captures_run += 1;
        flows += want.len();
    }
    println!(
        "{captures_run} captures: {flows} flows alike from the flow table and programs/xpf/flows.s"
    );
    assert!(captures_run > 380 && flows > 900, "{captures_run} {flows}");
}

#[test]
fn the_xpf_program_agrees_on_every_engine_and_with_the_ebpf_program() {
    let table = TableOptions {
        capacity: 256,
        idle_timeout_ns: 2_000_000,
        active_timeout_ns: 50_000_000,
    };
    // IPv4 and IPv6, TCP and UDP; a UDP flow's packet every millisecond
    // (active ends), a TCP flow's every 6 ms (idle ends).
    let spec = [
        "udp,flows=10,count=3000,rate=10000".to_string(),
        "tcp,v6,flows=30,count=2000,rate=5000".to_string(),
    ];
    let (want, _) = run(
        &mut Generated::parse(&spec).unwrap(),
        FlowEngine::Ebpf,
        table,
    );
    assert!(want.iter().any(|r| r.6 == 1) && want.iter().any(|r| r.6 == 2));
    for engine in [XpfEngine::Interp, XpfEngine::Vm] {
        let (got, _) = run(
            &mut Generated::parse(&spec).unwrap(),
            FlowEngine::Xpf(engine),
            table,
        );
        assert_eq!(got, want, "{engine:?}");
    }
    // The probe loop runs up to the budget: more paths than a verifier
    // walks (sluice's, as the kernel's, stops at a million instructions).
    let Err(e) = monitor::XpfFlows::new(&table, XpfEngine::Jit) else {
        panic!("sluice's verifier proved programs/xpf/flows.s: run it on the JIT here");
    };
    let e = e.to_string();
    assert!(e.contains("walked 1000000 instructions"), "{e}");
}

#[test]
fn a_full_xpf_table_sends_what_it_cannot_hold_as_counted_records() {
    let table = TableOptions {
        capacity: 100,
        ..TableOptions::default()
    };
    let spec = ["udp,flows=300,count=3000".to_string()];
    let run_on = |engine| run(&mut Generated::parse(&spec).unwrap(), engine, table);
    let (got, s) = run_on(FlowEngine::Xpf(XpfEngine::Interp));
    assert_eq!(
        got.iter().map(|r| r.1).sum::<u64>(),
        3000,
        "every packet in some record"
    );
    let lacked = got
        .iter()
        .filter(|r| r.6 == EndReason::LackOfResources.code())
        .count() as u64;
    assert!(
        lacked > 0 && lacked == s.evicted,
        "{lacked} records, {} counted",
        s.evicted
    );
    assert_eq!(s.lost, 0);
    // The same records as the eBPF program's full map.
    assert_eq!(got, run_on(FlowEngine::Ebpf).0);
    let too_big = TableOptions {
        capacity: monitor::XPF_MAX_FLOWS + 1,
        ..table
    };
    let e = account_flows(
        &mut Generated::parse(&spec).unwrap(),
        &FlowRunOptions {
            table: too_big,
            engine: FlowEngine::Xpf(XpfEngine::Interp),
            limit: None,
            metrics: None,
        },
        &std::sync::atomic::AtomicU64::new(0),
        |_: &[Ended]| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("the xPF table holds 1 to 2048"), "{e}");
}

#[test]
fn a_full_map_sends_what_it_cannot_hold_as_counted_records() {
    let table = TableOptions {
        capacity: 100,
        ..TableOptions::default()
    };
    let spec = ["udp,flows=300,count=3000".to_string()];
    let (got, s) = run(
        &mut Generated::parse(&spec).unwrap(),
        FlowEngine::Ebpf,
        table,
    );
    let packets: u64 = got.iter().map(|r| r.1).sum();
    assert_eq!(packets, 3000, "every packet in some record");
    let lacked = got
        .iter()
        .filter(|r| r.6 == EndReason::LackOfResources.code())
        .count() as u64;
    assert!(
        lacked > 0 && lacked == s.evicted,
        "{lacked} records, {} counted",
        s.evicted
    );
    assert_eq!(s.lost, 0);
    // The table evicts instead, also counted; every packet is accounted.
    let (got, s) = run(
        &mut Generated::parse(&spec).unwrap(),
        FlowEngine::Table,
        table,
    );
    assert_eq!(got.iter().map(|r| r.1).sum::<u64>(), 3000);
    assert!(s.evicted > 0);
}
