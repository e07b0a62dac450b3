//! nfdump, the collector operators run, driven for checks against it:
//! [`Nfcapd`] listens on a loopback UDP port and writes its files, and
//! [`read_files`] reads them back with `nfdump -o raw` into [`Seen`]
//! records, which [`seen`] makes of the flows sent. Processes started here
//! are stopped by their own id.

use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Flow;

/// What nfdump keeps of a flow, in a form both sides can produce.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seen {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    /// Ports, or ICMP type and code.
    pub l4: (u16, u16),
    pub packets: u64,
    pub bytes: u64,
    pub first_ms: u64,
    pub last_ms: u64,
    pub tcp_flags: u8,
    pub end_reason: u8,
}

pub fn seen(f: &Flow) -> Seen {
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
pub fn parse_raw(text: &str) -> Vec<Seen> {
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
pub struct Nfcapd(Option<Child>);

impl Nfcapd {
    pub fn start(port: u16, dir: &Path) -> Nfcapd {
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
            .expect("start nfcapd (Debian package nfdump)");
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
    pub fn stop(mut self) -> String {
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

pub fn free_udp_port() -> u16 {
    UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port()
}

/// The files nfcapd finished (`nfcapd.YYYYMMDDhhmm`, not `nfcapd.current.*`).
pub fn finished_files(dir: &Path) -> Vec<PathBuf> {
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

/// Every record of nfcapd's finished files in `dir`, as `nfdump -o raw`
/// prints them.
pub fn read_files(dir: &Path) -> Result<Vec<Seen>, NfdumpError> {
    read_files_text(dir).map_err(NfdumpError)
}

fn read_files_text(dir: &Path) -> Result<Vec<Seen>, String> {
    let mut got = Vec::new();
    for file in finished_files(dir) {
        let out = Command::new("nfdump")
            .arg("-r")
            .arg(&file)
            .args(["-o", "raw"])
            .output()
            .map_err(|e| format!("nfdump: {e}"))?;
        if !out.status.success() {
            return Err(format!("nfdump: {}", String::from_utf8_lossy(&out.stderr)));
        }
        got.extend(parse_raw(&String::from_utf8_lossy(&out.stdout)));
    }
    Ok(got)
}

/// nfdump did not run, failed, or printed what is not a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NfdumpError(pub String);
