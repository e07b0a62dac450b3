//! classify: per 5-tuple flow, packets and bytes, whatever the order the
//! flows' packets come in; what is not TCP or UDP over IP is not counted.

mod common;

use std::collections::BTreeMap;

use common::*;

/// `struct flow_key` of classify.c.
fn key(family: u8, src: &[u8], dst: &[u8], sport: u16, dport: u16, proto: u8) -> Vec<u8> {
    let mut k = vec![0u8; 40];
    k[..src.len()].copy_from_slice(src);
    k[16..16 + dst.len()].copy_from_slice(dst);
    k[32..34].copy_from_slice(&sport.to_le_bytes());
    k[34..36].copy_from_slice(&dport.to_le_bytes());
    k[36] = proto;
    k[37] = family;
    k
}

#[test]
fn counters_per_flow() {
    let mut h = hook("classify");
    let mut want: BTreeMap<Vec<u8>, (u64, u64)> = BTreeMap::new();
    let mut frames = Vec::new();
    for i in 0..300u32 {
        // 20 IPv4 UDP flows, 10 IPv4 TCP flows, 5 IPv6 UDP flows,
        // interleaved, of varying sizes.
        let n = i % 35;
        let size = (i % 7) as usize * 100;
        let (frame, k) = if n < 20 {
            let src = format!("10.0.{}.1", n);
            let f = packet::Builder::udp(&src, "10.9.9.9", 1000 + n as u16, 53)
                .payload(&vec![0; size])
                .build();
            (
                f,
                key(
                    4,
                    &[10, 0, n as u8, 1],
                    &[10, 9, 9, 9],
                    1000 + n as u16,
                    53,
                    17,
                ),
            )
        } else if n < 30 {
            let f = packet::Builder::tcp("10.1.1.1", "10.2.2.2", 40000 + n as u16, 443)
                .payload(&vec![0; size])
                .build();
            (
                f,
                key(4, &[10, 1, 1, 1], &[10, 2, 2, 2], 40000 + n as u16, 443, 6),
            )
        } else {
            let f = packet::Builder::udp("2001:db8::1", "2001:db8::2", n as u16, 4789)
                .payload(&vec![0; size])
                .build();
            let a: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
            let b: std::net::Ipv6Addr = "2001:db8::2".parse().unwrap();
            (f, key(6, &a.octets(), &b.octets(), n as u16, 4789, 17))
        };
        let e = want.entry(k).or_default();
        e.0 += 1;
        e.1 += frame.len() as u64;
        frames.push(frame);
    }
    // Not counted: ICMP, ARP, a frame cut inside the UDP ports.
    let icmp = packet::Builder::new("10.0.0.1", "10.0.0.2", packet::L4::Icmp).build();
    let cut = &frames[0][..14 + 20 + 3];
    let arp = [&[0xff; 12][..], &[0x08, 0x06], &[0; 28]].concat();
    let mut insns = 0;
    for f in frames
        .iter()
        .map(Vec::as_slice)
        .chain([icmp.as_slice(), cut, &arp])
    {
        let out = h.run(f, &meta()).unwrap();
        insns += out.stats.insns;
        assert_eq!(out.verdict, runtime::Verdict::Xdp(runtime::XdpAction::Pass));
        assert_eq!(out.packet, f);
    }
    let got: BTreeMap<Vec<u8>, (u64, u64)> = map(&h, "flow_table")
        .entries()
        .into_iter()
        .map(|(k, v)| {
            let w = |i: usize| u64::from_le_bytes(v[i * 8..i * 8 + 8].try_into().unwrap());
            (k, (w(0), w(1)))
        })
        .collect();
    assert_eq!(got, want);
    println!(
        "classify: {} flows, {:.1} insns per packet",
        got.len(),
        insns as f64 / (frames.len() + 3) as f64
    );
    let stats = map(&h, "classify_stats");
    assert_eq!(percpu_u64(stats, 0), 300);
    assert_eq!(percpu_u64(stats, 1), 3);
    assert_eq!(percpu_u64(stats, 2), 0);
}

#[test]
fn a_later_fragment_counts_without_ports() {
    let mut h = hook("classify");
    let mut f = packet::Builder::udp("10.0.0.1", "10.0.0.2", 7, 9).build();
    f[14 + 6..14 + 8].copy_from_slice(&0x0010u16.to_be_bytes());
    h.run(&f, &meta()).unwrap();
    let k = key(4, &[10, 0, 0, 1], &[10, 0, 0, 2], 0, 0, 17);
    assert!(map(&h, "flow_table").user_lookup(&k).is_ok());
}
