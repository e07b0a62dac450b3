//! nfdump's collector takes what a `UdpExporter` sends: `nfcapd` listens on
//! a loopback port and writes a file, `nfdump -o raw` prints it, and every
//! flow comes back (addresses, ports or ICMP type/code, protocol, packets,
//! bytes, times to the millisecond, TCP flags, end reason).

mod common;

use common::{random_flows, temp_dir, tools_for_test};
use ipfix::{Flow, UdpExporter, UdpOptions};
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BASE_MS: u64 = 1_770_000_000_000;

/// What nfdump keeps of a flow, in a form both sides can produce.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Seen {
    src: IpAddr,
    dst: IpAddr,
    protocol: u8,
    /// Ports, or ICMP type and code.
    l4: (u16, u16),
    packets: u64,
    bytes: u64,
    first_ms: u64,
    last_ms: u64,
    tcp_flags: u8,
    end_reason: u8,
}

fn seen(f: &Flow) -> Seen {
    Seen {
        src: f.src,
        dst: f.dst,
        protocol: f.protocol,
        l4: match f.icmp_type_code {
            Some(tc) => (tc >> 8, tc & 0xff),
            None => (f.src_port, f.dst_port),
        },
        packets: f.packets,
        bytes: f.bytes,
        first_ms: f.first_ns / 1_000_000,
        last_ms: f.last_ns / 1_000_000,
        tcp_flags: f.tcp_flags,
        end_reason: f.end_reason.code(),
    }
}

/// The records of `nfdump -o raw`: blocks of `key = value` lines.
fn parse_raw(text: &str) -> Vec<Seen> {
    let mut out = Vec::new();
    for block in text.split("Flow Record:").skip(1) {
        let get = |key: &str| -> &str {
            block
                .lines()
                .filter_map(|l| l.split_once('='))
                .find(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.split_whitespace().next().unwrap_or(""))
                .unwrap_or_else(|| panic!("nfdump record without {key:?}:\n{block}"))
        };
        let num = |key: &str| -> u64 {
            let v = get(key);
            match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            }
            .unwrap_or_else(|_| panic!("{key} = {v:?} is not a number"))
        };
        let protocol = num("proto") as u8;
        let l4 = if protocol == 1 || protocol == 58 {
            let (t, c) = get("ICMP").split_once('.').expect("ICMP type.code");
            (t.parse().unwrap(), c.parse().unwrap())
        } else {
            (num("src port") as u16, num("dst port") as u16)
        };
        out.push(Seen {
            src: get("src addr").parse().expect("a source address"),
            dst: get("dst addr").parse().expect("a destination address"),
            protocol,
            l4,
            packets: num("in packets"),
            bytes: num("in bytes"),
            first_ms: num("first"),
            last_ms: num("last"),
            tcp_flags: num("tcp flags") as u8,
            end_reason: num("end reason") as u8,
        });
    }
    out
}

/// nfcapd on 127.0.0.1:`port` writing into `dir`; killed (by its id) if the
/// test ends before it is stopped.
struct Nfcapd(Option<Child>);

impl Nfcapd {
    fn start(port: u16, dir: &Path) -> Nfcapd {
        let child = Command::new("nfcapd")
            .args([
                "-b",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-t",
                "300",
                "-w",
            ])
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nfcapd");
        let nf = Nfcapd(Some(child));
        // Listening once the port shows in /proc/net/udp.
        let needle = format!("0100007F:{port:04X}");
        let t0 = Instant::now();
        while !std::fs::read_to_string("/proc/net/udp")
            .unwrap_or_default()
            .contains(&needle)
        {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "nfcapd did not bind port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nf
    }

    /// SIGTERM (nfcapd then writes its file out) and its log.
    fn stop(mut self) -> String {
        let mut child = self.0.take().expect("running");
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
        let t0 = Instant::now();
        while child.try_wait().expect("wait for nfcapd").is_none() {
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("nfcapd did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().expect("nfcapd's output");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

impl Drop for Nfcapd {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_udp_port() -> u16 {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port()
}

/// The files nfcapd finished (`nfcapd.YYYYMMDDhhmm`, not `nfcapd.current.*`).
fn finished_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read nfcapd's directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("nfcapd.") && !n.contains("current"))
        })
        .collect();
    files.sort();
    files
}

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
    let mut got = Vec::new();
    for file in &files {
        let out = Command::new("nfdump")
            .arg("-r")
            .arg(file)
            .args(["-o", "raw"])
            .output()
            .expect("run nfdump");
        assert!(
            out.status.success(),
            "nfdump: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        got.extend(parse_raw(&String::from_utf8_lossy(&out.stdout)));
    }
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
