//! What the tests share: tcpdump's compilation of expressions (testkit's
//! driver), and the packets of tcpdump's test captures (testkit's list).
#![allow(dead_code)] // each test file uses part of it

use cbpf::{Insn, parse_decimal};
use testkit::tool::TCPDUMP;

/// tcpdump's compilation of `expr` for Ethernet, as `-ddd` prints it.
pub fn compile(expr: &str) -> Vec<Insn> {
    let out = TCPDUMP.output(["-y", "EN10MB", "-ddd", expr]);
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
    "ip multicast",
    "ip6 multicast",
    "arp src 10.0.0.1",
    "rarp",
    "stp",
    "ipx",
    "llc",
    "iso",
    "decnet",
    "atalk",
    "pppoed",
    "geneve",
    "udp portrange 5000-6000",
    "tcp dst portrange 1-1023",
    "ip[6:2] & 0x1fff != 0",
    "ip6 proto 17",
    "icmp[icmpcode] != 0",
    "ether dst ff:ff:ff:ff:ff:ff",
    "not (tcp or udp)",
    "ip host 192.168.1.1 and not port 22",
    "ip and len < 100",
];

/// A packet of the test captures as libpcap hands it to a filter: its
/// link type, length on the wire and captured bytes (cut at the file's
/// snapshot length, as libpcap cuts them).
pub struct Record {
    pub linktype: u32,
    pub wire: u32,
    pub data: Vec<u8>,
}

/// Every packet of every capture of tcpdump's suite, of any link type.
pub fn records() -> Vec<Record> {
    let mut out = Vec::new();
    for f in testkit::captures() {
        let Ok(mut src) = capture::PcapSource::open(&f) else {
            continue;
        };
        let cut = src
            .snaplen()
            .filter(|&s| s > 0)
            .map_or(usize::MAX, |s| s as usize);
        while let Some(Ok(r)) = src.next_raw() {
            out.push(Record {
                linktype: r.linktype,
                wire: r.orig_len,
                data: r.data[..r.data.len().min(cut)].to_vec(),
            });
        }
    }
    out
}
