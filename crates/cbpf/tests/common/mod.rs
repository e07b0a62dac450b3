//! What the tests share: tcpdump's compilation of expressions, and the
//! packets of tcpdump's Ethernet test captures.

use std::path::PathBuf;
use std::process::Command;

use cbpf::{Insn, parse_decimal};

/// tcpdump's compilation of `expr` for Ethernet, as `-ddd` prints it.
pub fn compile(expr: &str) -> Vec<Insn> {
    let out = Command::new("tcpdump")
        .args(["-y", "EN10MB", "-ddd", expr])
        .output()
        .expect("tcpdump runs (./dev.sh setup installs it)");
    assert!(
        out.status.success(),
        "{expr}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_decimal(&String::from_utf8_lossy(&out.stdout)).expect("tcpdump -ddd parses")
}

pub const EXPRESSIONS: &[&str] = &[
    "ip",
    "ip6",
    "arp",
    "tcp",
    "udp",
    "icmp",
    "icmp6",
    "vlan",
    "not ip",
    "udp port 53",
    "tcp port 80 or tcp port 443",
    "portrange 1000-2000",
    "host 10.0.0.1",
    "net 192.168.0.0/16",
    "src net 10.0.0.0/8 and dst port 22",
    "ether broadcast",
    "ether multicast",
    "ip broadcast",
    "tcp[tcpflags] & tcp-syn != 0",
    "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
    "ip[2:2] - ((ip[0]&0xf)<<2) > 100",
    "ip[8] < 64",
    "ip[1] & 0xfc == 0xb8",
    "len > 100",
    "less 60",
    "greater 1000",
    "icmp[icmptype] == icmp-echo",
    "ip6 and tcp",
    "ip6 host ::1",
    "ip6 net 2001:db8::/32",
    "udp and (ip[6:2] & 0x1fff) == 0",
    "ip proto 47",
    "vlan and ip",
    "vlan 10",
    "mpls",
    "pppoes",
    "ether proto 0x88cc",
    "ether src 00:11:22:33:44:55",
    "tcp[13] == 2",
    "udp[8:4] = 0x12345678",
    "ip[0] >> 4 == 4",
    "ip[0] & 0xf != 5",
    "ip6[6] == 58",
    "icmp6[icmp6type] == icmp6-echo",
    "ip and ip[9] * 2 / 3 % 5 ^ 1 = 2",
];

/// Every tcpdump capture's packets, as `(wire length, bytes)`.
pub fn packets() -> Vec<(u32, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pcaps/tcpdump");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the shared captures")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    files.sort();
    for f in files {
        let Ok(bytes) = std::fs::read(&f) else {
            continue;
        };
        // Classic pcap, little-endian, Ethernet only: the frames the
        // expressions above are compiled for.
        if bytes.len() < 24
            || bytes[..4] != [0xd4, 0xc3, 0xb2, 0xa1]
            || bytes[20..24] != [1, 0, 0, 0]
        {
            continue;
        }
        let mut at = 24;
        while at + 16 <= bytes.len() {
            let w = |o: usize| u32::from_le_bytes(bytes[at + o..at + o + 4].try_into().unwrap());
            let (incl, orig) = (w(8) as usize, w(12));
            if at + 16 + incl > bytes.len() {
                break;
            }
            out.push((orig, bytes[at + 16..at + 16 + incl].to_vec()));
            at += 16 + incl;
        }
    }
    out
}
