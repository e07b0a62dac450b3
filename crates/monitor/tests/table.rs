//! The flow table's rules, one by one: totals, idle and active timeouts,
//! TCP FIN and RST, eviction of the least recently seen flow from a full
//! table (counted), and the end of the input.

use std::net::{IpAddr, Ipv4Addr};

use monitor::{EndReason, FlowKey, FlowTable, Observed, TableOptions};

const S: u64 = 1_000_000_000;

fn tcp(port: u16, flags: u8) -> Observed {
    Observed {
        key: FlowKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            protocol: 6,
            src_port: port,
            dst_port: 80,
        },
        bytes: 100,
        tcp_flags: flags,
    }
}

fn table(capacity: usize) -> FlowTable {
    FlowTable::new(TableOptions {
        capacity,
        idle_timeout_ns: 10 * S,
        active_timeout_ns: 60 * S,
    })
}

#[test]
fn packets_add_up_and_an_idle_flow_ends() {
    let mut t = table(16);
    let mut out = Vec::new();
    t.account(&tcp(1, 0x02), 0, &mut out);
    t.account(&tcp(1, 0x10), 5 * S, &mut out);
    t.account(&tcp(2, 0x10), 9 * S, &mut out);
    assert!(out.is_empty());
    // 10 s after flow 1's last packet (5 s), it is idle; flow 2 is not.
    t.expire(15 * S, &mut out);
    assert_eq!(out.len(), 1);
    let e = out[0];
    assert_eq!(e.reason, EndReason::IdleTimeout);
    assert_eq!(
        (e.flow.packets, e.flow.bytes, e.flow.tcp_flags),
        (2, 200, 0x12)
    );
    assert_eq!((e.flow.first_ns, e.flow.last_ns), (0, 5 * S));
    assert_eq!(t.len(), 1);
}

#[test]
fn a_long_flow_is_cut_at_the_active_timeout() {
    let mut t = table(16);
    let mut out = Vec::new();
    for i in 0..=14 {
        t.account(&tcp(1, 0x10), i * 5 * S, &mut out);
    }
    // The packet at 60 s starts a new record.
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].reason, out[0].flow.packets),
        (EndReason::ActiveTimeout, 12)
    );
    t.flush(&mut out);
    assert_eq!(
        (out[1].reason, out[1].flow.packets),
        (EndReason::ForcedEnd, 3)
    );
}

#[test]
fn fin_and_rst_end_a_flow_with_their_packet() {
    let mut t = table(16);
    let mut out = Vec::new();
    t.account(&tcp(1, 0x10), 0, &mut out);
    t.account(&tcp(1, 0x11), S, &mut out);
    t.account(&tcp(2, 0x04), S, &mut out);
    let reasons: Vec<_> = out
        .iter()
        .map(|e| (e.flow.key.src_port, e.reason, e.flow.packets))
        .collect();
    assert_eq!(
        reasons,
        vec![(1, EndReason::EndOfFlow, 2), (2, EndReason::EndOfFlow, 1)]
    );
    assert!(t.is_empty());
}

#[test]
fn a_full_table_evicts_the_least_recently_seen_and_counts_it() {
    let mut t = table(3);
    let mut out = Vec::new();
    t.account(&tcp(1, 0), 0, &mut out);
    t.account(&tcp(2, 0), S, &mut out);
    t.account(&tcp(3, 0), 2 * S, &mut out);
    // Flow 1 seen again: flow 2 is now the least recent.
    t.account(&tcp(1, 0), 3 * S, &mut out);
    t.account(&tcp(4, 0), 4 * S, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].reason, out[0].flow.key.src_port),
        (EndReason::LackOfResources, 2)
    );
    assert_eq!((t.evicted(), t.len(), t.started()), (1, 3, 4));
    t.flush(&mut out);
    let total: u64 = out.iter().map(|e| e.flow.packets).sum();
    assert_eq!(total, 5, "every packet is in some record");
}
