//! Collectors that are not there, or go away: errors that name them, never
//! panics. Also the TCP and file exporters' bytes, read back.

mod common;

use common::{random_flows, temp_dir};
use ipfix::{Decoder, Error, FileExporter, Flow, TcpExporter, UdpExporter, UdpOptions};
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener, UdpSocket};
use std::path::Path;
use std::time::Duration;

const BASE_MS: u64 = 1_780_000_000_000;

/// A loopback port nothing listens on (bound, then released).
fn closed_udp_port() -> u16 {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn closed_tcp_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn assert_names(err: &Error, collector: &str) {
    let text = err.to_string();
    assert!(
        matches!(err, Error::Collector { collector: c, .. } if c == collector),
        "{err:?}"
    );
    assert!(text.contains(collector), "{text}");
}

#[test]
fn udp_to_a_closed_port_is_an_error_naming_the_collector() {
    let collector = format!("127.0.0.1:{}", closed_udp_port());
    let mut exporter = UdpExporter::connect(&collector, UdpOptions::default()).unwrap();
    let flows = random_flows(1, 100, BASE_MS);
    // The first datagram goes; the ICMP port unreachable it draws fails a
    // later send (or the next export).
    let mut failed = None;
    for _ in 0..10 {
        match exporter.export(&flows) {
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let err = failed.expect("sending to a closed port never failed");
    assert_names(&err, &collector);
    assert!(err.to_string().contains("refused"), "{err}");
}

#[test]
fn an_unresolvable_collector_is_an_error() {
    // No name service asked: a port that is not a number, no port at all.
    let err = UdpExporter::connect("localhost:ipfix-port", UdpOptions::default()).unwrap_err();
    assert_names(&err, "localhost:ipfix-port");
    assert!(err.to_string().contains("resolve"), "{err}");
    let err = UdpExporter::connect("127.0.0.1", UdpOptions::default()).unwrap_err();
    assert_names(&err, "127.0.0.1");
}

#[test]
fn tcp_to_a_closed_port_is_an_error_naming_the_collector() {
    let collector = format!("127.0.0.1:{}", closed_tcp_port());
    let err = TcpExporter::connect(&collector, 1, Duration::from_secs(2)).unwrap_err();
    assert_names(&err, &collector);
    assert!(err.to_string().contains("connect"), "{err}");
}

#[test]
fn a_tcp_collector_that_goes_away_is_an_error_naming_it() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let collector = listener.local_addr().unwrap().to_string();
    let mut exporter = TcpExporter::connect(&collector, 1, Duration::from_secs(2)).unwrap();
    let (conn, _) = listener.accept().unwrap();
    let flows = random_flows(2, 200, BASE_MS);
    exporter.export(&flows).unwrap();
    drop(conn); // closed with unread data: a reset
    drop(listener);
    let mut failed = None;
    for _ in 0..50 {
        match exporter.export(&flows) {
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let err = failed.expect("writing to a closed connection never failed");
    assert_names(&err, &collector);
    assert!(err.to_string().contains("send"), "{err}");
}

#[test]
fn a_tcp_collector_reads_templates_once_then_records() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let collector = listener.local_addr().unwrap().to_string();
    let reader = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut bytes = Vec::new();
        conn.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let flows = random_flows(3, 3000, BASE_MS);
    let mut exporter = TcpExporter::connect(&collector, 12, Duration::from_secs(2)).unwrap();
    for batch in flows.chunks(1000) {
        exporter.export(batch).unwrap();
    }
    drop(exporter);
    let bytes = reader.join().unwrap();
    let msgs = Decoder::new().decode_stream(&bytes).unwrap();
    assert!(msgs.len() >= 3, "{} messages", msgs.len());
    assert_eq!(msgs[0].templates.len(), 2);
    assert!(
        msgs[1..].iter().all(|m| m.templates.is_empty()),
        "templates once over TCP"
    );
    assert!(msgs.iter().all(|m| m.domain == 12));
    let got: Vec<Flow> = msgs.into_iter().flat_map(|m| m.flows).collect();
    assert_eq!(got, flows.iter().map(Flow::to_millis).collect::<Vec<_>>());
}

#[test]
fn files_hold_messages_back_to_back_and_bad_paths_are_errors() {
    let dir = temp_dir("file");
    let path = dir.join("out.ipfix");
    let flows = random_flows(4, 1000, BASE_MS);
    let mut out = FileExporter::create(&path, 5).unwrap();
    out.export(&flows[..600]).unwrap();
    out.export(&flows[600..]).unwrap();
    out.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let msgs = Decoder::new().decode_stream(&bytes).unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[1].sequence, 600);
    assert!(msgs[1].templates.is_empty());
    let got: Vec<Flow> = msgs.into_iter().flat_map(|m| m.flows).collect();
    assert_eq!(got, flows.iter().map(Flow::to_millis).collect::<Vec<_>>());

    let missing = Path::new("/nonexistent-dir/out.ipfix");
    let err = FileExporter::create(missing, 1).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent-dir/out.ipfix"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
