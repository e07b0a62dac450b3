//! The forwarding programs' header checks (RFC 1812 5.2.2), TTL handling
//! (5.3.1) and the frame they send: TTL decremented, checksum updated
//! incrementally and still right (RFC 1624), the next hop's MACs, the
//! redirect or XDP_TX; on a table parsed from `ip route` output.

mod common;

use common::*;
use lpm::{LcParams, RouteTable, lctrie_entries, lpm_trie_entries, radix_entries};
use runtime::*;

const ROUTES: &str = "\
default via 10.0.0.1 dev eth0 proto dhcp src 10.0.0.5 metric 100
10.1.0.0/16 via 192.0.2.1 dev eth1 proto static
10.2.0.0/24 dev eth1 proto kernel scope link src 10.2.0.1
";

/// The forwarding programs [`hooks`] gives.
const PROGRAMS: usize = 3;

const FORWARDED: u32 = 0;
const NO_ROUTE: u32 = 1;
const TTL_EXCEEDED: u32 = 2;
const BAD_HEADER: u32 = 3;
const NOT_IPV4: u32 = 4;

fn hooks(t: &RouteTable) -> Vec<(&'static str, Hook)> {
    vec![
        ("fwd_radix", loaded("fwd_radix", &radix_entries(t).unwrap())),
        (
            "fwd_lctrie",
            loaded(
                "fwd_lctrie",
                &lctrie_entries(t, &LcParams::default()).unwrap(),
            ),
        ),
        (
            "fwd_lpm_trie",
            loaded("fwd_lpm_trie", &lpm_trie_entries(t).unwrap()),
        ),
    ]
}

fn table() -> RouteTable {
    RouteTable::parse_ip_route(ROUTES).unwrap()
}

fn udp(dst: &str, ttl: u8) -> Vec<u8> {
    packet::Builder::udp("192.0.2.99", dst, 1000, 53)
        .ttl(ttl)
        .payload(b"forward me")
        .build()
}

/// Recomputes the checksum of the IPv4 header at `ip`.
fn fix(frame: &mut [u8], ip: usize) {
    let hlen = usize::from(frame[ip] & 0xf) * 4;
    frame[ip + 10..ip + 12].fill(0);
    let c = ipv4_checksum(&frame[ip..ip + hlen]);
    frame[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
}

/// Runs every program on `frame`: verdict, output, and which counter
/// moved.
fn each(t: &RouteTable, frame: &[u8], check: impl Fn(&str, Verdict, &[u8], &Outcome<'_>)) {
    for (name, mut h) in hooks(t) {
        let before: Vec<u64> = (0..5)
            .map(|k| percpu_u64(map(&h, "fwd_stats"), k))
            .collect();
        let o = h.run(frame, &meta()).unwrap();
        check(name, o.verdict, o.packet, &o);
        let moved: Vec<u32> = (0..5)
            .filter(|&k| percpu_u64(map(&h, "fwd_stats"), k) != before[k as usize])
            .collect();
        assert_eq!(moved.len(), 1, "{name}: counters {moved:?}");
    }
}

fn counter(t: &RouteTable, frame: &[u8]) -> Vec<u32> {
    hooks(t)
        .into_iter()
        .map(|(_, mut h)| {
            h.run(frame, &meta()).unwrap();
            (0..5)
                .find(|&k| percpu_u64(map(&h, "fwd_stats"), k) == 1)
                .unwrap()
        })
        .collect()
}

fn dropped(t: &RouteTable, frame: &[u8], why: &str) {
    each(t, frame, |name, v, _, _| {
        assert_eq!(v, Verdict::Xdp(XdpAction::Drop), "{name}: {why}");
    });
    assert_eq!(counter(t, frame), [BAD_HEADER; PROGRAMS], "{why}");
}

fn passed(t: &RouteTable, frame: &[u8], why: &str, count: u32) {
    each(t, frame, |name, v, out, _| {
        assert_eq!(v, Verdict::Xdp(XdpAction::Pass), "{name}: {why}");
        assert_eq!(out, frame, "{name}: {why}: changed");
    });
    assert_eq!(counter(t, frame), [count; PROGRAMS], "{why}");
}

/// The frame forwarded to `hop`: only the MACs, TTL and checksum changed,
/// the checksum right.
fn forwarded(t: &RouteTable, frame: &[u8], ip: usize, hop: u32) {
    let h = t.hop(hop).unwrap().clone();
    each(t, frame, |name, v, out, o| {
        let want = if h.ifindex == INGRESS {
            Verdict::Xdp(XdpAction::Tx)
        } else {
            Verdict::Xdp(XdpAction::Redirect)
        };
        assert_eq!(v, want, "{name}");
        if h.ifindex != INGRESS {
            assert_eq!(
                o.redirect.as_ref().unwrap().target,
                RedirectTarget::Device {
                    ifindex: h.ifindex,
                    ingress: false
                }
            );
        }
        assert_eq!(out.len(), frame.len());
        assert_eq!(&out[..6], &h.dmac, "{name}: destination MAC");
        assert_eq!(&out[6..12], &h.smac, "{name}: source MAC");
        assert_eq!(out[ip + 8], frame[ip + 8] - 1, "{name}: TTL");
        let hlen = usize::from(out[ip] & 0xf) * 4;
        assert_eq!(ipv4_checksum(&out[ip..ip + hlen]), 0, "{name}: checksum");
        for k in (12..out.len()).filter(|&k| ![ip + 8, ip + 10, ip + 11].contains(&k)) {
            assert_eq!(out[k], frame[k], "{name}: byte {k}");
        }
    });
    assert_eq!(counter(t, frame), [FORWARDED; PROGRAMS]);
}

#[test]
fn routes_and_next_hops() {
    let t = table();
    let id = |p: &str| t.get(p.parse().unwrap()).unwrap();
    // eth1 (ifindex 2): a redirect; eth0 is the ingress: XDP_TX.
    forwarded(&t, &udp("10.1.2.3", 64), IP, id("10.1.0.0/16"));
    forwarded(&t, &udp("10.2.0.255", 64), IP, id("10.2.0.0/24"));
    forwarded(&t, &udp("10.2.1.0", 64), IP, id("0.0.0.0/0"));
    forwarded(&t, &udp("255.255.255.255", 2), IP, id("0.0.0.0/0"));
    // Without the default route: to the stack.
    let t = t.without_default();
    passed(&t, &udp("10.2.1.0", 64), "no route", NO_ROUTE);
    forwarded(&t, &udp("10.1.255.255", 64), IP, id("10.1.0.0/16"));
}

#[test]
fn ttl_expiring_goes_to_the_stack() {
    let t = table();
    passed(&t, &udp("10.1.2.3", 1), "TTL 1", TTL_EXCEEDED);
    passed(&t, &udp("10.1.2.3", 0), "TTL 0", TTL_EXCEEDED);
}

#[test]
fn the_incremental_checksum_is_right_for_every_ttl_and_many_headers() {
    let t = table();
    let mut hooks = hooks(&t);
    for ttl in 2..=255u8 {
        for id in [0u16, 1, 0x00ff, 0xfeff, 0xff00, 0xfffe, 0xffff, 0x1234] {
            let mut f = udp("10.1.2.3", ttl);
            f[IP + 4..IP + 6].copy_from_slice(&id.to_be_bytes());
            fix(&mut f, IP);
            for (name, h) in &mut hooks {
                let out = h.run(&f, &meta()).unwrap();
                assert_eq!(out.packet[IP + 8], ttl - 1);
                assert_eq!(
                    ipv4_checksum(&out.packet[IP..IP + 20]),
                    0,
                    "{name}: TTL {ttl} id {id:#x}"
                );
            }
        }
    }
}

#[test]
fn bad_headers_are_dropped() {
    let t = table();
    let good = udp("10.1.2.3", 64);
    let mut f = good.clone();
    f[IP + 10] ^= 1;
    dropped(&t, &f, "bad checksum");
    let mut f = good.clone();
    f[IP] = 0x65;
    fix(&mut f, IP);
    dropped(&t, &f, "version 6");
    let mut f = good.clone();
    f[IP] = 0x44;
    fix(&mut f, IP);
    dropped(&t, &f, "IHL 4");
    let mut f = good.clone();
    let len = (good.len() - IP + 1) as u16;
    f[IP + 2..IP + 4].copy_from_slice(&len.to_be_bytes());
    fix(&mut f, IP);
    dropped(&t, &f, "total length past the frame");
    let mut f = good.clone();
    f[IP + 2..IP + 4].copy_from_slice(&19u16.to_be_bytes());
    fix(&mut f, IP);
    dropped(&t, &f, "total length shorter than the header");
    let mut f = packet::Builder::udp("192.0.2.99", "10.1.2.3", 1, 2)
        .payload(&[1; 64])
        .build();
    f[IP] = 0x4f;
    fix(&mut f, IP);
    dropped(&t, &f[..IP + 40], "header past the frame");
    dropped(&t, &good[..IP + 19], "shorter than a minimal header");
    dropped(&t, &good[..IP], "no header at all");
    passed(&t, &good[..10], "shorter than Ethernet", NOT_IPV4);
    let v6 = packet::Builder::udp("2001:db8::1", "2001:db8::2", 1, 2).build();
    passed(&t, &v6, "IPv6", NOT_IPV4);
}

#[test]
fn padding_options_and_vlans() {
    let t = table();
    let hop = t.get("10.1.0.0/16".parse().unwrap()).unwrap();
    let good = udp("10.1.2.3", 64);
    // Ethernet padding after the datagram.
    let mut f = good.clone();
    f.extend_from_slice(&[0; 12]);
    forwarded(&t, &f, IP, hop);
    // Options (NOP, NOP, NOP, end): IHL 6.
    let mut f = good.clone();
    f.splice(IP + 20..IP + 20, [1, 1, 1, 0]);
    f[IP] = 0x46;
    let len = u16::from_be_bytes([f[IP + 2], f[IP + 3]]) + 4;
    f[IP + 2..IP + 4].copy_from_slice(&len.to_be_bytes());
    fix(&mut f, IP);
    forwarded(&t, &f, IP, hop);
    f[IP + 21] = 7;
    dropped(&t, &f, "an option changed under the checksum");
    // A VLAN tag stays.
    let mut f = good.clone();
    f.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
    forwarded(&t, &f, IP + 4, hop);
}
