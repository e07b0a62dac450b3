//! Wireshark's IPFIX dissector reads what sluice exports: an IPFIX file
//! (RFC 5655, which tshark opens directly) and a capture of the datagrams a
//! `UdpExporter` sent to a socket on loopback. Every record tshark shows
//! must be one that was sent, field by field, and tshark must report
//! nothing malformed, no error and no warning (its sequence-number analysis
//! included).

mod common;

use common::{random_flows, temp_dir};
use ipfix::{FileExporter, Flow, UdpExporter, UdpOptions};
use std::collections::HashMap;
use std::net::{Ipv4Addr, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use testkit::tools_for_test;

const BASE_MS: u64 = 1_760_000_000_000;
const IPFIX_PORT: u16 = 4739;

fn tshark_ready() -> bool {
    tools_for_test("the tshark tests", &["tshark"], &["tshark"])
}

/// One record as tshark printed it: element name -> shown value.
type Shown = HashMap<String, String>;

/// What tshark shows of a file: per message its sequence number and the
/// records it holds.
struct Dissected {
    messages: Vec<(u32, Vec<Shown>)>,
}

fn tshark(file: &Path, extra: &[&str]) -> (Dissected, String) {
    let run = |format: &[&str]| {
        let out = testkit::tool::output(
            Command::new("tshark")
                .arg("-r")
                .arg(file)
                .args(extra)
                .args(format)
                .env("TZ", "UTC"),
        );
        assert!(
            out.status.success(),
            "tshark failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        text
    };
    let verbose = run(&["-V"]);
    let pdml = run(&["-T", "pdml"]);
    let mut messages: Vec<(u32, Vec<Shown>)> = Vec::new();
    for line in pdml.lines() {
        let (Some(name), Some(show)) = (attr(line, "name"), attr(line, "show")) else {
            continue;
        };
        if name == "cflow.sequence" {
            messages.push((show.parse().expect("a sequence number"), Vec::new()));
        } else if name.is_empty() && show.starts_with("Flow ") {
            let (_, recs) = messages.last_mut().expect("a record inside a message");
            recs.push(Shown::new());
        } else if name.starts_with("cflow.")
            && let Some(rec) = messages.last_mut().and_then(|(_, r)| r.last_mut())
        {
            rec.insert(name.to_string(), show.to_string());
        }
    }
    (Dissected { messages }, verbose)
}

/// The value of `key="..."` in a PDML line.
fn attr<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!(" {key}=\"");
    let start = line.find(&pat)? + pat.len();
    let len = line[start..].find('"')?;
    Some(&line[start..start + len])
}

/// What tshark should show of `f`.
fn expected(f: &Flow) -> Shown {
    let mut m = Shown::new();
    let mut put = |k: &str, v: String| {
        m.insert(format!("cflow.{k}"), v);
    };
    let v6 = if f.is_ipv6() { "v6" } else { "" };
    put(&format!("srcaddr{v6}"), f.src.to_string());
    put(&format!("dstaddr{v6}"), f.dst.to_string());
    put("srcport", f.src_port.to_string());
    put("dstport", f.dst_port.to_string());
    put("protocol", f.protocol.to_string());
    let icmp = f.icmp_type_code.unwrap_or(0);
    if f.is_ipv6() {
        put("icmp_ipv6_type", (icmp >> 8).to_string());
        put("icmp_ipv6_code", (icmp & 0xff).to_string());
    } else {
        put("icmp_type_code_ipv4", format!("0x{icmp:04x}"));
    }
    put("packets", f.packets.to_string());
    put("octets", f.bytes.to_string());
    put("abstimestart", utc(f.first_ns / 1_000_000));
    put("abstimeend", utc(f.last_ns / 1_000_000));
    put("tcpflags", format!("0x{:04x}", f.tcp_flags));
    put("flow_end_reason", f.end_reason.code().to_string());
    m
}

/// Milliseconds since the epoch as Wireshark prints an absolute time in UTC
/// ("Nov 14, 2023 22:13:20.123000000 UTC").
fn utc(ms: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (days, rem) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    format!(
        "{} {day:>2}, {year} {h:02}:{m:02}:{s:02}.{milli:03}000000 UTC",
        MONTHS[month as usize - 1]
    )
}

/// tshark saw exactly `flows`, in order, with sequence numbers counting
/// them, and complained about nothing.
fn assert_dissected(d: &Dissected, verbose: &str, flows: &[Flow]) {
    for bad in ["Malformed", "Expert Info (Error", "Expert Info (Warning"] {
        let hits: Vec<&str> = verbose
            .lines()
            .filter(|l| l.contains(bad))
            .take(5)
            .collect();
        assert!(hits.is_empty(), "tshark reports {bad}: {hits:#?}");
    }
    let mut seq = 0u32;
    let mut seen = Vec::new();
    for (sequence, recs) in &d.messages {
        assert_eq!(*sequence, seq, "sequence number of message {}", seen.len());
        seq += recs.len() as u32;
        seen.extend(recs.iter().cloned());
    }
    assert_eq!(seen.len(), flows.len(), "records tshark decoded");
    for (i, (got, f)) in seen.iter().zip(flows).enumerate() {
        for (k, v) in expected(f) {
            assert_eq!(got.get(&k), Some(&v), "record {i} ({f}): {k}");
        }
    }
}

#[test]
fn utc_formats_as_wireshark_does() {
    assert_eq!(
        utc(1_700_000_000_123),
        "Nov 14, 2023 22:13:20.123000000 UTC"
    );
    assert_eq!(utc(951_782_400_000), "Feb 29, 2000 00:00:00.000000000 UTC");
    assert_eq!(utc(0), "Jan  1, 1970 00:00:00.000000000 UTC");
}

#[test]
fn tshark_decodes_every_record_of_an_ipfix_file() {
    if !tshark_ready() {
        return;
    }
    let t0 = Instant::now();
    let dir = temp_dir("tshark-file");
    let path = dir.join("flows.ipfix");
    let flows = random_flows(0x75ba, 1500, BASE_MS);
    let mut out = FileExporter::create(&path, 42).unwrap();
    // Several exports: several messages, templates only in the first.
    for batch in flows.chunks(400) {
        out.export(batch).unwrap();
    }
    out.finish().unwrap();
    let (d, verbose) = tshark(&path, &[]);
    assert_eq!(d.messages.len(), 4);
    assert_eq!(
        verbose.matches("(Data Template)").count(),
        1,
        "templates once"
    );
    assert_dissected(&d, &verbose, &flows);
    std::fs::remove_dir_all(&dir).ok();
    eprintln!("tshark read 1500 records of a file in {:?}", t0.elapsed());
}

#[test]
fn tshark_decodes_every_datagram_of_a_udp_export() {
    if !tshark_ready() {
        return;
    }
    let t0 = Instant::now();
    let collector = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    collector
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let addr = collector.local_addr().unwrap();
    let options = UdpOptions {
        domain: 7,
        max_message: 1400,
        refresh_messages: 5,
        refresh_interval: Duration::from_secs(600),
    };
    let mut exporter = UdpExporter::connect(&addr.to_string(), options).unwrap();
    let flows = random_flows(0x0d9, 700, BASE_MS);
    let mut datagrams = Vec::new();
    for batch in flows.chunks(100) {
        let sent = exporter.export(batch).unwrap();
        // Read each batch before the next: the socket buffer keeps up.
        for _ in 0..sent.messages {
            let mut buf = [0u8; 2048];
            let n = collector
                .recv(&mut buf)
                .expect("a datagram from the exporter");
            assert!(n <= 1400, "datagram of {n} bytes");
            datagrams.push(buf[..n].to_vec());
        }
    }
    let dir = temp_dir("tshark-udp");
    let pcap = dir.join("export.pcap");
    write_pcap(&pcap, &datagrams);
    let (d, verbose) = tshark(&pcap, &["-d", &format!("udp.port=={IPFIX_PORT},cflow")]);
    assert_eq!(d.messages.len(), datagrams.len());
    let templates = verbose.matches("(Data Template)").count();
    assert_eq!(
        templates,
        datagrams.len().div_ceil(5),
        "templates every 5 messages"
    );
    assert_dissected(&d, &verbose, &flows);
    std::fs::remove_dir_all(&dir).ok();
    eprintln!(
        "tshark read {} datagrams in {:?}",
        datagrams.len(),
        t0.elapsed()
    );
}

/// Each payload as an Ethernet/IPv4/UDP frame to the IPFIX port.
fn write_pcap(path: &Path, payloads: &[Vec<u8>]) {
    use pcap_file::pcap::{PcapPacket, PcapWriter};
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(file).unwrap();
    for (i, p) in payloads.iter().enumerate() {
        let frame = udp_frame(p, 50_000, IPFIX_PORT);
        let ts = Duration::from_millis(BASE_MS + i as u64);
        w.write_packet(&PcapPacket::new(ts, frame.len() as u32, &frame))
            .unwrap();
    }
}

fn udp_frame(payload: &[u8], sport: u16, dport: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload.len());
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = [
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
    ];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let sum = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum::<u32>();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(total - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]); // no checksum (IPv4 allows it)
    f.extend_from_slice(payload);
    f
}
