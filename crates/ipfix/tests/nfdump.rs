//! nfdump's collector takes what a `UdpExporter` sends: `nfcapd` listens on
//! a loopback port and writes a file, `nfdump -o raw` prints it, and every
//! flow comes back (addresses, ports or ICMP type/code, protocol, packets,
//! bytes, times to the millisecond, TCP flags, end reason).

mod common;

use common::{random_flows, temp_dir};
use ipfix::nfdump::{Nfcapd, Seen, finished_files, free_udp_port, read_files, seen};
use ipfix::{UdpExporter, UdpOptions};
use std::time::{Duration, Instant};
use testkit::tools_for_test;

const BASE_MS: u64 = 1_770_000_000_000;

#[test]
fn nfcapd_collects_every_flow_a_udp_exporter_sends() {
    if !tools_for_test("the nfdump tests", &["nfcapd", "nfdump"], &["nfdump"]) {
        return;
    }
    let t0 = Instant::now();
    let dir = temp_dir("nfcapd");
    let port = free_udp_port();
    let nfcapd = Nfcapd::start(port, &dir);
    let options = UdpOptions {
        domain: 3,
        refresh_messages: 8,
        ..UdpOptions::default()
    };
    let mut exporter = UdpExporter::connect(&format!("127.0.0.1:{port}"), options).unwrap();
    let flows = random_flows(0x7fd, 800, BASE_MS);
    let mut messages = 0;
    for batch in flows.chunks(50) {
        messages += exporter.export(batch).unwrap().messages;
        // Small bursts: a loopback socket buffer never overflows.
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(messages > 20, "{messages} messages");
    // Let nfcapd read the last datagrams before it is told to stop.
    std::thread::sleep(Duration::from_millis(300));
    let log = nfcapd.stop();
    assert!(log.contains("Flows: 800"), "nfcapd's log:\n{log}");
    assert!(log.contains("Sequence Errors: 0"), "nfcapd's log:\n{log}");
    assert!(log.contains("Bad Packets: 0"), "nfcapd's log:\n{log}");

    let files = finished_files(&dir);
    assert!(!files.is_empty(), "nfcapd wrote no file; log:\n{log}");
    let mut got = read_files(&dir).unwrap();
    let mut want: Vec<Seen> = flows.iter().map(seen).collect();
    got.sort();
    want.sort();
    assert_eq!(got.len(), want.len(), "records nfdump printed");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    std::fs::remove_dir_all(&dir).ok();
    eprintln!(
        "nfcapd collected 800 flows in {messages} messages; {:?}",
        t0.elapsed()
    );
}
