//! Compares the printer's lines with `TZ=UTC tcpdump -n -r F [flags]` on
//! the shared tcpdump captures. A packet is compared only when it is in
//! scope by this rule (see `in_scope`): Ethernet, optionally 802.1Q-tagged,
//! carrying ARP, or IPv4/IPv6 (no extension header but hop-by-hop, no
//! fragment) with TCP, UDP, ICMP echo/unreachable/time exceeded or ICMPv6
//! echo/router/neighbour messages; TCP segments with payload and UDP
//! datagrams only when neither port is one tcpdump has a decoder for
//! (every port under 1024 and the list in `APP_PORTS`); no TCP option that
//! tcpdump decodes at length (MPTCP, TCP-AO, MD5, fast open).

mod common;

use common::{flag_sets, tcpdump};
use dissect::Printer;
use std::path::Path;

/// Ports over 1023 where tcpdump 4.99 hands the payload to a decoder.
const APP_PORTS: &[u16] = &[
    1645, 1646, 1701, 1723, 1812, 1813, 1900, 2049, 2055, 2123, 2152, 3503, 3784, 3785, 4341, 4342,
    4500, 4784, 4789, 5060, 5061, 5353, 5355, 5540, 5555, 5556, 5557, 6081, 6343, 6379, 6633, 6653,
    6696, 6697, 8080, 8472, 8554, 9001, 9002, 4739, 4738, 6635, 7123, 8053, 3868, 4789, 1813, 2000,
    2001, 3000, 3001, 5004, 5005, 6653, 10000, 11003, 1985, 2233, 3544, 4001, 4002, 1719, 3478,
    10001, 3799, 4433, 6784, 49152, 49153, 2104, 4790, 30490,
];

fn app_port(p: u16) -> bool {
    p < 1024 || APP_PORTS.contains(&p)
}

fn be16(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(o)?, *b.get(o + 1)?]))
}

fn transport_ok(proto: u8, b: &[u8], plen: usize, v6: bool, verbose: bool) -> bool {
    match proto {
        6 => {
            let (Some(sp), Some(dp), Some(off)) = (be16(b, 0), be16(b, 2), b.get(12)) else {
                return true;
            };
            let hlen = usize::from(off >> 4) * 4;
            if plen > hlen && (app_port(sp) || app_port(dp)) {
                return false;
            }
            // Options tcpdump decodes at length.
            let mut i = 20;
            while i < hlen.min(b.len()) {
                let k = b[i];
                if matches!(k, 19 | 29 | 30 | 34) {
                    return false;
                }
                if k == 0 {
                    break;
                }
                if k == 1 {
                    i += 1;
                    continue;
                }
                match b.get(i + 1) {
                    Some(&l) if l >= 2 => i += usize::from(l),
                    _ => break,
                }
            }
            true
        }
        17 => match (be16(b, 0), be16(b, 2)) {
            (Some(sp), Some(dp)) => !app_port(sp) && !app_port(dp),
            _ => true,
        },
        // With -v an error message prints the datagram it quotes: compared
        // when that is in scope and the message has no room for RFC 4884
        // extensions.
        1 if !v6 && verbose && matches!(b.first(), Some(3 | 11)) => {
            let inner = b.get(8..).unwrap_or(&[]);
            plen < 136 && inner.len() >= 20 && {
                let (hl, proto) = (usize::from(inner[0] & 0xf) * 4, inner[9]);
                let len = be16(inner, 2).map_or(0, usize::from);
                inner.len() >= hl
                    && transport_ok(proto, &inner[hl..], len.saturating_sub(hl), false, true)
            }
        }
        1 if !v6 => b.first().is_none_or(|t| matches!(t, 0 | 3 | 8 | 11)),
        58 if v6 && verbose => b.first().is_none_or(|t| matches!(t, 128 | 129)),
        58 if v6 => b.first().is_none_or(|t| matches!(t, 128 | 129 | 133..=136)),
        _ => false,
    }
}

/// The comparison rule, stated in the file's doc; with `-v`, neighbour
/// discovery is left out too (tcpdump prints its options).
fn in_scope(f: &[u8], verbose: bool) -> bool {
    let Some(mut ty) = be16(f, 12) else {
        return false;
    };
    let mut off = 14;
    while ty == 0x8100 {
        let Some(t) = be16(f, off + 2) else {
            return false;
        };
        ty = t;
        off += 4;
    }
    let b = &f[off.min(f.len())..];
    match ty {
        0x0806 => true,
        0x0800 => {
            let (Some(&vhl), Some(len), Some(frag), Some(&proto)) =
                (b.first(), be16(b, 2), be16(b, 6), b.get(9))
            else {
                return false;
            };
            let hlen = usize::from(vhl & 0xf) * 4;
            if vhl >> 4 != 4 || hlen < 20 || frag & 0x3fff != 0 || b.len() < hlen {
                return false;
            }
            transport_ok(
                proto,
                &b[hlen..],
                usize::from(len).saturating_sub(hlen),
                false,
                verbose,
            )
        }
        0x86dd => {
            let (Some(&first), Some(plen), Some(&nh)) = (b.first(), be16(b, 4), b.get(6)) else {
                return false;
            };
            if first >> 4 != 6 || b.len() < 40 {
                return false;
            }
            let (mut nh, mut o, mut plen) = (nh, 40, usize::from(plen));
            if nh == 0 {
                let (Some(&n), Some(&l)) = (b.get(40), b.get(41)) else {
                    return false;
                };
                nh = n;
                o += (usize::from(l) + 1) * 8;
                plen = plen.saturating_sub((usize::from(l) + 1) * 8);
            }
            o <= b.len() && transport_ok(nh, &b[o..], plen, true, verbose)
        }
        _ => false,
    }
}

/// What the comparisons covered and where they differed.
#[derive(Default)]
struct Tally {
    /// Packets compared, and the output lines they made.
    packets: usize,
    lines: usize,
    captures: std::collections::BTreeSet<String>,
    failures: Vec<String>,
}

/// Prints every packet of `path` (the printer keeps state across all of
/// them, as tcpdump does) and compares those in scope with tcpdump's;
/// `strict`: tcpdump must print a record for every packet (it stops early
/// on some damaged captures).
fn compare(path: &Path, flags: &[&str], o: dissect::PrintOptions, strict: bool, t: &mut Tally) {
    let name = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let expected = tcpdump(path, flags);
    let mut src = capture::PcapSource::open(path).expect("capture opens");
    let mut printer = Printer::new(o);
    let mut index = 0;
    while let Some(frame) = src.next_raw() {
        let frame = frame.expect("record reads");
        let ours = printer.line(
            frame.data,
            frame.orig_len,
            frame.linktype,
            frame.timestamp_ns,
        );
        let printed = index < expected.len();
        if printed
            && frame.linktype == dissect::LINKTYPE_ETHERNET
            && in_scope(frame.data, o.verbose > 0)
        {
            let theirs = expected.get(index).map(String::as_str).unwrap_or("<none>");
            if ours != theirs {
                t.failures.push(format!(
                    "{name} {flags:?} packet {}:\n  tcpdump: {theirs}\n  dissect: {ours}",
                    index + 1
                ));
            }
            t.packets += 1;
            t.lines += ours.lines().count();
            t.captures.insert(name.clone());
        }
        index += 1;
    }
    if strict {
        assert_eq!(
            index,
            expected.len(),
            "{name} {flags:?}: one tcpdump record per packet"
        );
    }
}

fn check(t: &Tally) {
    let shown: Vec<&String> = t.failures.iter().take(20).collect();
    assert!(
        t.failures.is_empty(),
        "{} differences:\n{shown:#?}",
        t.failures.len()
    );
    eprintln!(
        "compared {} packets ({} lines) over {} captures",
        t.packets,
        t.lines,
        t.captures.len()
    );
}

/// The shared captures with packets in scope (found by
/// `every_shared_capture`), each read with every flag set.
const CAPTURES: &[&str] = &[
    "accecn_handshake.pcap",
    "babel_update_oobr.pcap",
    "bgp-4byte-asn.pcap",
    "bgp-rt-prefix.pcap",
    "bigtcp-ipv6.pcap",
    "dhcp-rfc4388.pcap",
    "dns_tcp_8053.pcap",
    "eapon1.pcap",
    "gso-ipv4.pcap",
    "gso-ipv6.pcap",
    "heapoverflow-tcp_print.pcap",
    "icmp-cksum-oobr-3.pcapng",
    "icmpv6-length-zero.pcapng",
    "icmpv6-ns-nonce.pcap",
    "icmpv6.pcap",
    "ipv6-bad-version.pcap",
    "isis_iid_tlv.pcap",
    "kday4.pcap",
    "ldp-common-session.pcap",
    "lmp.pcap",
    "mptcp-fclose.pcap",
    "of10_7050q.pcapng",
    "of10_7050sx_bsn.pcap",
    "of10_p3295.pcap",
    "of10_pf5240.pcap",
    "of10_s4810.pcap",
    "pptp.pcap",
    "print-flags.pcap",
    "zmtp1.pcap",
];

#[test]
fn lines_match_tcpdump() {
    let mut t = Tally::default();
    for name in CAPTURES {
        for (flags, o) in flag_sets() {
            compare(&testkit::capture(name), flags, o, true, &mut t);
        }
    }
    check(&t);
    assert!(
        t.packets >= 1500 && t.captures.len() >= 25,
        "{} packets over {} captures",
        t.packets,
        t.captures.len()
    );
}

/// Every shared capture that the reader opens (slow: run with
/// `--ignored`); it found the list above.
#[test]
#[ignore]
fn every_shared_capture() {
    let names = testkit::captures();
    let mut t = Tally::default();
    for path in &names {
        if capture::PcapSource::open(path).is_err() {
            continue;
        }
        for (flags, o) in flag_sets() {
            compare(path, flags, o, false, &mut t);
        }
    }
    eprintln!("in scope: {:?}", t.captures);
    check(&t);
}
