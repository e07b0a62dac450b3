//! Compares with tcpdump on a capture this test writes, so every case the
//! shared captures lack is there: 802.1Q tags, ARP with a known target,
//! a TCP conversation with SACK, URG, ECN flags, RST and FIN, UDP to a port
//! without a decoder, ICMP echo/unreachable/time exceeded, ICMPv6 echo and
//! neighbour discovery, IPv6 TCP and UDP, fragments, bad checksums, and
//! packets cut short by the snapshot length. Every packet is compared,
//! under every flag set.

mod common;

use common::{flag_sets, tcpdump};
use dissect::Printer;

const MAC_A: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x0a];
const MAC_B: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x0b];
const A4: [u8; 4] = [10, 0, 0, 1];
const B4: [u8; 4] = [10, 0, 0, 2];
const C4: [u8; 4] = [192, 168, 7, 9];
const A6: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const B6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2];

fn sum(data: &[u8]) -> u32 {
    data.chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

fn pseudo(src: &[u8], dst: &[u8], proto: u8, len: usize) -> u32 {
    sum(src) + sum(dst) + u32::from(proto) + (len as u32 >> 16) + (len as u32 & 0xffff)
}

fn eth(ty: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = [&MAC_B[..], &MAC_A[..], &ty.to_be_bytes()].concat();
    f.extend_from_slice(payload);
    f
}

fn vlan(tci: u16, ty: u16, payload: &[u8]) -> Vec<u8> {
    eth(
        0x8100,
        &[&tci.to_be_bytes()[..], &ty.to_be_bytes(), payload].concat(),
    )
}

/// An IPv4 header (`frag`: flags and offset word) and payload.
fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], tos: u8, frag: u16, payload: &[u8]) -> Vec<u8> {
    ipv4_opts(proto, src, dst, (tos, frag), &[], payload)
}

/// An IPv4 header with options (a multiple of 4 bytes).
fn ipv4_opts(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    (tos, frag): (u8, u16),
    opts: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let len = (20 + opts.len() + payload.len()) as u16;
    let mut h = vec![0x45 + (opts.len() / 4) as u8, tos];
    h.extend_from_slice(&len.to_be_bytes());
    h.extend_from_slice(&[0x12, 0x34]);
    h.extend_from_slice(&frag.to_be_bytes());
    h.extend_from_slice(&[64, proto, 0, 0]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h.extend_from_slice(opts);
    let c = fold(sum(&h));
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

fn ipv6(nh: u8, src: [u8; 16], dst: [u8; 16], payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0x00, 0x12, 0x34];
    h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    h.extend_from_slice(&[nh, 64]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h.extend_from_slice(payload);
    h
}

struct Seg<'a> {
    ports: (u16, u16),
    seq: u32,
    ack: u32,
    flags: u8,
    opts: &'a [u8],
    data: &'a [u8],
}

/// A TCP segment with a correct checksum over `src`/`dst`.
fn tcp(src: &[u8], dst: &[u8], s: &Seg) -> Vec<u8> {
    let hlen = 20 + s.opts.len();
    let mut t = Vec::new();
    t.extend_from_slice(&s.ports.0.to_be_bytes());
    t.extend_from_slice(&s.ports.1.to_be_bytes());
    t.extend_from_slice(&s.seq.to_be_bytes());
    t.extend_from_slice(&s.ack.to_be_bytes());
    t.extend_from_slice(&[((hlen / 4) as u8) << 4, s.flags, 0x72, 0x10, 0, 0, 0, 7]);
    t.extend_from_slice(s.opts);
    t.extend_from_slice(s.data);
    let c = fold(pseudo(src, dst, 6, t.len()) + sum(&t));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

fn udp(src: &[u8], dst: &[u8], sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let len = (8 + data.len()) as u16;
    let mut u = [
        &sport.to_be_bytes()[..],
        &dport.to_be_bytes(),
        &len.to_be_bytes(),
        &[0, 0],
    ]
    .concat();
    u.extend_from_slice(data);
    let c = fold(pseudo(src, dst, 17, u.len()) + sum(&u));
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

fn icmp(ty: u8, code: u8, rest: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(rest);
    let c = fold(sum(&m));
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

fn icmp6(src: &[u8], dst: &[u8], ty: u8, rest: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, 0, 0, 0];
    m.extend_from_slice(rest);
    let c = fold(pseudo(src, dst, 58, m.len()) + sum(&m));
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

fn arp(op: u16, tha: [u8; 6]) -> Vec<u8> {
    let (spa, tpa) = if op == 1 { (A4, B4) } else { (B4, A4) };
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&MAC_A);
    a.extend_from_slice(&spa);
    a.extend_from_slice(&tha);
    a.extend_from_slice(&tpa);
    a
}

const SYN_OPTS: &[u8] = &[
    2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
];

/// The packets, each with the bytes kept by the capture (`None`: all).
fn packets() -> Vec<(Vec<u8>, Option<usize>)> {
    let t4 = |s: Seg| eth(0x0800, &ipv4(6, A4, B4, 0, 0x4000, &tcp(&A4, &B4, &s)));
    let t4r = |s: Seg| eth(0x0800, &ipv4(6, B4, A4, 0, 0x4000, &tcp(&B4, &A4, &s)));
    let seg = |seq, ack, flags, opts, data| Seg {
        ports: (40000, 5001),
        seq,
        ack,
        flags,
        opts,
        data,
    };
    let rseg = |seq, ack, flags, opts, data| Seg {
        ports: (5001, 40000),
        seq,
        ack,
        flags,
        opts,
        data,
    };
    let sack = [1, 1, 5, 10, 0, 0, 0x13, 0x8d, 0, 0, 0x17, 0x75];
    let echo = [
        0x00, 0x2a, 0x00, 0x01, b'h', b'i', b'!', b' ', b'x', b'y', b'\r', b'\n',
    ];
    let inner_udp = ipv4(17, B4, C4, 0, 0, &udp(&B4, &C4, 33000, 33434, b"probe"));
    let mut p = vec![
        (eth(0x0806, &arp(1, [0; 6])), None),
        (eth(0x0806, &arp(1, MAC_B)), None),
        (eth(0x0806, &arp(2, MAC_A)), None),
        (t4(seg(1000, 0, 0x02, SYN_OPTS, b"")), None),
        (t4r(rseg(5000, 1001, 0x12, SYN_OPTS, b"")), None),
        (t4(seg(1001, 5001, 0x10, b"", b"")), None),
        (t4(seg(1001, 5001, 0x18, b"", b"hello world\r\n")), None),
        (t4r(rseg(5001, 1014, 0x10, &sack, b"")), None),
        (t4(seg(1014, 5001, 0x30, b"", b"u")), None),
        (t4(seg(1015, 5001, 0xd0, b"", b"")), None),
        (t4(seg(1015, 5001, 0x11, b"", b"")), None),
        (t4r(rseg(5001, 0, 0x04, b"", b"")), None),
        (t4(seg(1016, 5001, 0x00, b"", b"")), None),
        (
            vlan(
                10,
                0x0800,
                &ipv4(6, A4, B4, 0, 0, &tcp(&A4, &B4, &seg(9, 9, 0x10, b"", b""))),
            ),
            None,
        ),
        (
            vlan(
                0xb064,
                0x0800,
                &ipv4(17, A4, B4, 0, 0, &udp(&A4, &B4, 40001, 40002, b"abc")),
            ),
            None,
        ),
        (
            eth(
                0x0800,
                &ipv4(17, A4, B4, 3, 0, &udp(&A4, &B4, 40001, 40002, b"abcd")),
            ),
            None,
        ),
        (
            eth(0x0800, &ipv4(1, A4, B4, 0, 0, &icmp(8, 0, &echo))),
            None,
        ),
        (
            eth(0x0800, &ipv4(1, B4, A4, 0, 0, &icmp(0, 0, &echo))),
            None,
        ),
        (
            eth(
                0x0800,
                &ipv4(
                    1,
                    A4,
                    B4,
                    0,
                    0,
                    &icmp(11, 0, &[&[0; 4], &inner_udp[..]].concat()),
                ),
            ),
            None,
        ),
        (
            eth(
                0x0800,
                &ipv4(
                    1,
                    A4,
                    B4,
                    0,
                    0,
                    &icmp(3, 3, &[&[0; 4], &inner_udp[..]].concat()),
                ),
            ),
            None,
        ),
        (
            eth(
                0x0800,
                &ipv4(
                    1,
                    A4,
                    B4,
                    0,
                    0,
                    &icmp(3, 1, &[&[0; 4], &inner_udp[..]].concat()),
                ),
            ),
            None,
        ),
        (
            eth(
                0x0800,
                &ipv4(
                    1,
                    A4,
                    B4,
                    0,
                    0,
                    &icmp(3, 4, &[&[0, 0, 5, 0xdc], &inner_udp[..]].concat()),
                ),
            ),
            None,
        ),
        (
            eth(0x86dd, &ipv6(58, A6, B6, &icmp6(&A6, &B6, 128, &echo))),
            None,
        ),
        (
            eth(0x86dd, &ipv6(58, B6, A6, &icmp6(&B6, &A6, 129, &echo))),
            None,
        ),
        (
            eth(
                0x86dd,
                &ipv6(6, A6, B6, &tcp(&A6, &B6, &seg(7, 0, 0x02, SYN_OPTS, b""))),
            ),
            None,
        ),
        (
            eth(
                0x86dd,
                &ipv6(17, A6, B6, &udp(&A6, &B6, 40001, 40002, b"abcdef")),
            ),
            None,
        ),
        // A first fragment and a later one.
        (
            eth(
                0x0800,
                &ipv4(
                    17,
                    A4,
                    B4,
                    0,
                    0x2000,
                    &udp(&A4, &B4, 40001, 40002, b"abcdefgh"),
                ),
            ),
            None,
        ),
        (
            eth(0x0800, &ipv4(17, A4, B4, 0, 0x0002, b"more data")),
            None,
        ),
    ];
    // Cut short: in the TCP options (at an option's kind, in its data),
    // the TCP header, the IP header, UDP.
    let syn = t4(seg(1, 0, 0x02, SYN_OPTS, b""));
    p.push((syn.clone(), Some(14 + 20 + 20 + 6)));
    p.push((syn.clone(), Some(14 + 20 + 20 + 10)));
    p.push((syn.clone(), Some(14 + 20 + 10)));
    p.push((syn, Some(14 + 12)));
    p.push((
        eth(
            0x0800,
            &ipv4(17, A4, B4, 0, 0, &udp(&A4, &B4, 40001, 40002, b"x")),
        ),
        Some(14 + 20 + 4),
    ));
    // Wrong checksums: IP header, TCP, UDP over IPv6, ICMP.
    let mut bad_ip = t4(seg(2, 0, 0x02, b"", b""));
    bad_ip[24] ^= 0x55;
    let mut bad_tcp = t4(seg(3, 0, 0x02, b"", b""));
    bad_tcp[14 + 20 + 16] ^= 0x55;
    let mut bad_udp6 = eth(
        0x86dd,
        &ipv6(17, A6, B6, &udp(&A6, &B6, 40001, 40002, b"q")),
    );
    bad_udp6[14 + 40 + 6] ^= 0x55;
    let mut bad_icmp = eth(0x0800, &ipv4(1, A4, B4, 0, 0, &icmp(8, 0, &echo)));
    bad_icmp[14 + 20 + 2] ^= 0x55;
    p.extend(
        [bad_ip, bad_tcp, bad_udp6, bad_icmp]
            .into_iter()
            .map(|f| (f, None)),
    );
    // Options longer than the header, first and later in the list; an
    // option tcpdump does not know.
    p.push((t4(seg(4, 0, 0x02, &[2, 9, 5, 180], b"")), None));
    p.push((t4(seg(5, 0, 0x02, &[1, 1, 8, 10, 0, 0], b"")), None));
    p.push((t4(seg(6, 0, 0x02, &[99, 4, 0xab, 0xcd], b"")), None));
    // IPv4 options: router alert, NOP/EOL, a recorded route, a
    // timestamp, one longer than the header, one cut by the capture.
    let u = udp(&A4, &B4, 40001, 40002, b"o");
    let rr = [7, 11, 8, 10, 0, 0, 9, 0, 0, 0, 0, 1];
    let ts = [68, 12, 9, 1, 10, 0, 0, 1, 0, 0, 0, 5];
    for opts in [
        &[148, 4, 0, 0][..],
        &[1, 1, 1, 0],
        &rr,
        &ts,
        &[148, 8, 0, 0],
    ] {
        p.push((eth(0x0800, &ipv4_opts(17, A4, B4, (0, 0), opts, &u)), None));
    }
    p.push((
        eth(0x0800, &ipv4_opts(17, A4, B4, (0, 0), &rr, &u)),
        Some(14 + 20 + 6),
    ));
    p
}

/// A pcap file (microsecond, Ethernet) of the packets; one timestamp
/// steps back, for `-ttt`.
fn write_pcap(path: &std::path::Path, packets: &[(Vec<u8>, Option<usize>)]) {
    let mut out = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&65535u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    let mut ts: u64 = 1_700_000_000_000_000;
    for (i, (frame, keep)) in packets.iter().enumerate() {
        ts = if i == 5 {
            ts - 1500
        } else {
            ts + 1234 * i as u64 + 7
        };
        let kept = keep.unwrap_or(frame.len()).min(frame.len());
        out.extend_from_slice(&((ts / 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((ts % 1_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&(kept as u32).to_le_bytes());
        out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        out.extend_from_slice(&frame[..kept]);
    }
    std::fs::write(path, out).expect("capture written");
}

#[test]
fn crafted_packets_match_tcpdump() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dissect-crafted.pcap");
    let packets = packets();
    write_pcap(&path, &packets);
    let mut failures = Vec::new();
    let mut compared = 0;
    for (flags, o) in flag_sets() {
        let expected = tcpdump(&path, flags);
        assert_eq!(
            expected.len(),
            packets.len(),
            "{flags:?}: one tcpdump record per packet"
        );
        let mut src = capture::PcapSource::open(&path).expect("capture opens");
        let mut printer = Printer::new(o);
        let mut i = 0;
        while let Some(frame) = src.next_raw() {
            let frame = frame.expect("record reads");
            let ours = printer.line(
                frame.data,
                frame.orig_len,
                frame.linktype,
                frame.timestamp_ns,
            );
            if ours != expected[i] {
                failures.push(format!(
                    "{flags:?} packet {}:\n  tcpdump: {}\n  dissect: {ours}",
                    i + 1,
                    expected[i]
                ));
            }
            compared += 1;
            i += 1;
        }
    }
    let shown: Vec<&String> = failures.iter().take(30).collect();
    assert!(
        failures.is_empty(),
        "{} differences:\n{shown:#?}",
        failures.len()
    );
    assert_eq!(compared, packets.len() * flag_sets().len());
}

/// Damaged input never panics: every crafted packet cut at every length,
/// and with each byte in turn flipped, under every flag set and several
/// link types.
#[test]
fn damaged_packets_do_not_panic() {
    let mut printed = 0;
    for (flags, o) in flag_sets() {
        let _ = flags;
        let mut printer = Printer::new(o);
        for (frame, _) in packets() {
            for cut in 0..=frame.len() {
                let part = &frame[..cut];
                printed += printer.line(part, frame.len() as u32, 1, 0).len().min(1);
            }
            for i in 0..frame.len() {
                let mut bad = frame.clone();
                bad[i] ^= 0xff;
                printed += printer.line(&bad, 3, 1, u64::MAX).len().min(1);
                printed += printer.line(&bad, u32::MAX, 101, 5).len().min(1);
            }
        }
    }
    assert!(printed > 0);
}
