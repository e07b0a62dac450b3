//! [`RunSpec::per_packet`]: one row per packet in the report's
//! [`PacketTable`](engine::PacketTable), in the source's order whatever
//! the threads, its verdicts adding up to the report's.

use std::collections::BTreeMap;

use engine::{HookSpec, Origin, RunReport, RunSpec, SourceSpec};

/// xdp_parse_tx over 1000 frames, every tenth too short for Ethernet
/// (dropped; the others sent back: TX).
fn run(threads: usize, per_packet: bool) -> RunReport {
    let hook = HookSpec::from_bytes("xdp_parse_tx.o", programs::object("xdp_parse_tx").unwrap());
    let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53).build();
    let frames = (0..1000u64)
        .map(|i| match i % 10 {
            9 => (i * 1000, vec![0; 8]),
            _ => (i * 1000, frame.clone()),
        })
        .collect();
    let source = SourceSpec::new(Origin::Frames { frames });
    let mut spec = RunSpec::new(hook, source);
    spec.threads = threads;
    spec.per_packet = per_packet;
    spec.run(None, None).unwrap()
}

#[test]
fn the_table_has_a_row_per_packet_and_the_reports_verdicts() {
    for threads in [1, 3] {
        let report = run(threads, true);
        let table = report.packet_table.as_ref().unwrap();
        assert_eq!(table.len(), 1000);
        assert_eq!(
            table.index,
            (1..=1000).collect::<Vec<u64>>(),
            "threads {threads}"
        );
        assert!(table.timestamp_ns.is_sorted());
        assert!(table.instructions.iter().all(|&n| n > 0));
        assert_eq!(table.length[8], frame_len());
        assert_eq!(table.length[9], 8);
        assert_eq!(table.verdict_of(8), "TX");
        assert_eq!(table.verdict_of(9), "DROP");
        let mut counts = BTreeMap::new();
        for i in 0..table.len() {
            *counts
                .entry(table.verdict_of(i).to_string())
                .or_insert(0u64) += 1;
        }
        assert_eq!(counts, report.verdicts, "threads {threads}");
        assert!(
            report.verdicts.contains_key("DROP"),
            "{:?}",
            report.verdicts
        );
        assert!(table.redirects.is_empty());
    }
}

#[test]
fn without_per_packet_there_is_no_table_and_the_json_is_the_same() {
    let report = run(1, false);
    assert!(report.packet_table.is_none());
    let with = serde_json::to_value(run(1, true)).unwrap();
    let without = serde_json::to_value(report).unwrap();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&with), keys(&without));
    assert_eq!(with["verdicts"], without["verdicts"]);
}

fn frame_len() -> u32 {
    packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53)
        .build()
        .len() as u32
}
