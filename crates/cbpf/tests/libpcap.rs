//! Against libpcap itself (linked from the system, as tcpdump uses it):
//! every opcode printed as its `bpf_image` prints it, and filters compiled
//! by tcpdump deciding every packet of tcpdump's test captures as its
//! `bpf_filter` does.

use std::ffi::{CStr, c_char, c_int, c_uint};
use std::path::PathBuf;
use std::process::Command;

use cbpf::{Insn, Meta, image_line, parse_decimal, run};

/// libpcap's `struct bpf_insn`: the same layout as `struct sock_filter`.
#[repr(C)]
struct BpfInsn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

#[link(name = "pcap")]
unsafe extern "C" {
    fn bpf_image(p: *const BpfInsn, n: c_int) -> *const c_char;
    fn bpf_filter(pc: *const BpfInsn, p: *const u8, wirelen: c_uint, buflen: c_uint) -> c_uint;
}

fn theirs(p: &Insn, n: usize) -> String {
    let insn = BpfInsn {
        code: p.code,
        jt: p.jt,
        jf: p.jf,
        k: p.k,
    };
    // SAFETY: a valid instruction; bpf_image returns a NUL-terminated
    // string in a buffer of its own, read before the next call.
    unsafe { CStr::from_ptr(bpf_image(&insn, n as c_int)) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_opcode_prints_as_libpcap_prints_it() {
    let ks = [
        0u32,
        1,
        12,
        0x800,
        0x7fff_ffff,
        0xffff_ffff,
        cbpf::ancillary::AD_OFF,
        cbpf::ancillary::AD_OFF + 4,
        cbpf::ancillary::AD_OFF + 48,
        cbpf::ancillary::AD_OFF + 60,
        cbpf::ancillary::AD_OFF + 64,
    ];
    let mut compared = 0;
    for code in 0..=0xffffu16 {
        for &k in &ks {
            for (n, jt, jf) in [(0usize, 0u8, 0u8), (7, 3, 255)] {
                let p = Insn { code, jt, jf, k };
                assert_eq!(image_line(&p, n), theirs(&p, n), "{p:?} at {n}");
                compared += 1;
            }
        }
    }
    println!("{compared} instructions printed alike");
}

/// tcpdump's compilation of `expr` for Ethernet, as `-ddd` prints it.
fn compile(expr: &str) -> Vec<Insn> {
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
fn packets() -> Vec<(u32, Vec<u8>)> {
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

#[test]
fn filters_decide_every_packet_as_libpcap_does() {
    let packets = packets();
    assert!(packets.len() > 1000, "{} packets", packets.len());
    let mut compared = 0u64;
    let mut matched = 0u64;
    for expr in EXPRESSIONS {
        let prog = compile(expr);
        cbpf::check(&prog).unwrap_or_else(|e| panic!("{expr}: {e}"));
        let theirs: Vec<BpfInsn> = prog
            .iter()
            .map(|p| BpfInsn {
                code: p.code,
                jt: p.jt,
                jf: p.jf,
                k: p.k,
            })
            .collect();
        for (i, (wire, data)) in packets.iter().enumerate() {
            let meta = Meta {
                len: Some(*wire),
                ..Meta::default()
            };
            let ours = run(&prog, data, &meta).expect("checked programs run").ret;
            // SAFETY: a program of `theirs.len()` valid instructions and a
            // buffer of `data.len()` bytes.
            let want =
                unsafe { bpf_filter(theirs.as_ptr(), data.as_ptr(), *wire, data.len() as c_uint) };
            assert_eq!(ours, want, "`{expr}` on packet {i}");
            compared += 1;
            matched += u64::from(ours != 0);
        }
    }
    println!(
        "{} expressions x {} packets: {compared} decisions equal to libpcap's ({matched} matches)",
        EXPRESSIONS.len(),
        packets.len()
    );
    assert!(matched > 1000);
}

#[test]
fn tcpdump_d_dd_ddd_print_the_same_text() {
    for expr in EXPRESSIONS {
        let prog = compile(expr);
        for (flag, ours) in [
            ("-d", cbpf::image(&prog)),
            ("-dd", cbpf::image_c(&prog)),
            ("-ddd", cbpf::image_decimal(&prog)),
        ] {
            let out = Command::new("tcpdump")
                .args(["-y", "EN10MB", flag, expr])
                .output()
                .unwrap();
            assert_eq!(
                ours,
                String::from_utf8_lossy(&out.stdout),
                "tcpdump {flag} '{expr}'"
            );
        }
    }
}
