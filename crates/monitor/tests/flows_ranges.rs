//! Flow accounting over ranges, joined, against one read: random streams
//! of packets (few and many flows, TCP with FIN and RST, UDP, non-IP
//! frames, timestamps mostly rising and sometimes stepping back), random
//! timeouts and table sizes, cut at random places. Whenever the join says
//! it is exact, its ended flows (in order) and summary are one read's;
//! whenever one read evicted flows, the join says it may not be exact.

use std::sync::atomic::AtomicU64;

use monitor::{
    FlowRunOptions, FlowsJoin, FlowsRange, Joined, TableOptions, account_flows, account_range,
};
use pipeline::Packets;
use proptest::prelude::*;

/// An Ethernet frame: IPv4 TCP (with `flags`) or UDP between host `a`
/// and host `b`, ports `sport` and `dport`; `non_ip` an ARP frame.
fn frame(p: &Pkt) -> Vec<u8> {
    let mut f = vec![0u8; 14];
    if p.non_ip {
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        f.resize(42, 0);
        return f;
    }
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let l4 = if p.tcp { 20 } else { 8 };
    let total = 20 + l4 + p.payload as usize;
    let mut ip = vec![0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = if p.tcp { 6 } else { 17 };
    ip[12..16].copy_from_slice(&[10, 0, 0, p.a]);
    ip[16..20].copy_from_slice(&[10, 0, 1, p.b]);
    f.extend_from_slice(&ip);
    let mut t = vec![0u8; l4];
    t[0..2].copy_from_slice(&u16::from(p.sport).to_be_bytes());
    t[2..4].copy_from_slice(&80u16.to_be_bytes());
    if p.tcp {
        t[12] = 0x50;
        t[13] = p.flags;
    }
    f.extend_from_slice(&t);
    f.resize(14 + total, 0);
    f
}

#[derive(Clone, Debug)]
struct Pkt {
    non_ip: bool,
    tcp: bool,
    a: u8,
    b: u8,
    sport: u8,
    flags: u8,
    payload: u16,
    /// Time since the packet before (ns); `back`: before it instead.
    gap: u64,
    back: bool,
}

fn pkt(hosts: u8) -> impl Strategy<Value = Pkt> {
    (
        (0u8..20, any::<bool>(), 0..hosts, 0..hosts, 0u8..3),
        (
            prop_oneof![4 => Just(0x10u8), 1 => Just(0x02), 1 => Just(0x11), 1 => Just(0x14)],
            0u16..1200,
            prop_oneof![
                6 => 0u64..2_000_000_000,
                1 => 2_000_000_000u64..40_000_000_000,
                1 => Just(0u64)
            ],
            0u8..30,
        ),
    )
        .prop_map(|((n, tcp, a, b, sport), (flags, payload, gap, back))| Pkt {
            non_ip: n == 0,
            tcp,
            a,
            b,
            sport,
            flags,
            payload,
            gap,
            back: back == 0,
        })
}

/// Frames with their timestamps.
fn frames(pkts: &[Pkt]) -> Vec<(u64, Vec<u8>)> {
    let mut t = 1_000_000_000_000u64;
    pkts.iter()
        .map(|p| {
            t = match p.back {
                true => t.saturating_sub(p.gap),
                false => t + p.gap,
            };
            (t, frame(p))
        })
        .collect()
}

fn one_read(
    frames: &[(u64, Vec<u8>)],
    opts: TableOptions,
) -> (Vec<monitor::Ended>, monitor::FlowSummary) {
    let run = FlowRunOptions {
        table: opts,
        ..FlowRunOptions::default()
    };
    let mut ended = Vec::new();
    let mut source = Packets::new(frames.to_vec());
    let summary = account_flows(&mut source, &run, &AtomicU64::new(0), |e| {
        ended.extend_from_slice(e)
    })
    .unwrap();
    (ended, summary)
}

fn joined(frames: &[(u64, Vec<u8>)], cuts: &[usize], opts: TableOptions) -> Joined {
    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c % (frames.len() + 1)).collect();
    bounds.extend([0, frames.len()]);
    bounds.sort_unstable();
    let mut join = FlowsJoin::new(opts);
    for w in bounds.windows(2) {
        let mut source = Packets::new(frames[w[0]..w[1]].to_vec());
        let (range, error) = account_range(&mut source, &opts, &AtomicU64::new(0)).unwrap();
        assert_eq!(error, None);
        // Through its serialized form, as a cluster sends it.
        let text = serde_json::to_string(&range).unwrap();
        let back: FlowsRange = serde_json::from_str(&text).unwrap();
        assert_eq!(back, range);
        join.add(&back).unwrap();
    }
    join.finish().unwrap()
}

fn check(pkts: &[Pkt], cuts: &[usize], opts: TableOptions) -> Result<(), TestCaseError> {
    let frames = frames(pkts);
    let (ended, summary) = one_read(&frames, opts);
    let j = joined(&frames, cuts, opts);
    if summary.evicted > 0 {
        prop_assert!(
            !j.inexact.is_empty(),
            "one read evicted, the join says exact"
        );
    }
    if j.inexact.is_empty() {
        prop_assert_eq!(&j.ended, &ended);
        prop_assert_eq!(j.packets, summary.packets);
        prop_assert_eq!(j.accounted, summary.accounted);
        prop_assert_eq!(j.by_reason, summary.by_reason);
        prop_assert_eq!(j.backwards, summary.order.backwards);
    }
    Ok(())
}

fn options() -> impl Strategy<Value = TableOptions> {
    (
        prop_oneof![1 => 1usize..6, 3 => Just(65_536usize)],
        prop_oneof![Just(1u64), 1u64..5_000_000_000, Just(15_000_000_000)],
        prop_oneof![1u64..10_000_000_000, Just(1_800_000_000_000)],
    )
        .prop_map(|(capacity, idle, active)| TableOptions {
            capacity,
            idle_timeout_ns: idle,
            active_timeout_ns: active,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Few flows (2 hosts each way, 3 ports): heads and long flows.
    #[test]
    fn few_flows_joined_as_one_read(
        pkts in proptest::collection::vec(pkt(2), 0..300),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        opts in options(),
    ) {
        check(&pkts, &cuts, opts)?;
    }

    /// Many flows (up to 60 hosts each way).
    #[test]
    fn many_flows_joined_as_one_read(
        pkts in proptest::collection::vec(pkt(60), 0..400),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        opts in options(),
    ) {
        check(&pkts, &cuts, opts)?;
    }
}

/// Packets in time order, a table that never fills: the join is exact,
/// at every cut (every one of 60 packets' places).
#[test]
fn in_order_every_cut_is_exact() {
    let pkts: Vec<Pkt> = (0..60u64)
        .map(|i| Pkt {
            non_ip: i % 13 == 0,
            tcp: i % 3 != 0,
            a: (i % 4) as u8,
            b: (i % 5) as u8,
            sport: (i % 2) as u8,
            flags: if i % 11 == 0 { 0x11 } else { 0x10 },
            payload: (i * 7 % 500) as u16,
            gap: if i % 9 == 0 {
                20_000_000_000
            } else {
                700_000_000
            },
            back: false,
        })
        .collect();
    let opts = TableOptions {
        capacity: 1000,
        idle_timeout_ns: 3_000_000_000,
        active_timeout_ns: 8_000_000_000,
    };
    let frames = frames(&pkts);
    let (ended, _) = one_read(&frames, opts);
    assert!(ended.len() > 10);
    for a in 0..=pkts.len() {
        for b in [a, (a + 7).min(pkts.len())] {
            let j = joined(&frames, &[a, b], opts);
            assert!(j.inexact.is_empty(), "{:?}", j.inexact);
            assert_eq!(j.ended, ended, "cut at {a} and {b}");
        }
    }
}

/// A range that starts earlier than the packets before it, and a table
/// too small for the flows carried in: the join says so.
#[test]
fn what_a_range_cannot_know_is_said() {
    let p = |a: u8, gap: u64, back: bool| Pkt {
        non_ip: false,
        tcp: false,
        a,
        b: 0,
        sport: 0,
        flags: 0,
        payload: 10,
        gap,
        back,
    };
    let opts = TableOptions {
        capacity: 2,
        idle_timeout_ns: 15_000_000_000,
        active_timeout_ns: 1_800_000_000_000,
    };
    let frames = frames(&[
        p(0, 0, false),
        p(1, 5, false),
        p(2, 3, true),
        p(3, 1, false),
    ]);
    let j = joined(&frames, &[2], opts);
    assert_eq!(j.inexact.len(), 2, "{:?}", j.inexact);
    assert!(
        j.inexact[0].contains("range 1: its first packet"),
        "{}",
        j.inexact[0]
    );
    assert!(j.inexact[1].contains("capacity of 2"), "{}", j.inexact[1]);
}
