//! Every example program on real packets: verdicts, maps, rewritten bytes.

mod common;

use common::*;
use packet::Builder;
use runtime::*;

const DROP: Verdict = Verdict::Xdp(XdpAction::Drop);
const PASS: Verdict = Verdict::Xdp(XdpAction::Pass);
const TX: Verdict = Verdict::Xdp(XdpAction::Tx);
const REDIRECT: Verdict = Verdict::Xdp(XdpAction::Redirect);

fn udp() -> Vec<u8> {
    Builder::udp("10.0.0.1", "10.0.0.2", 1234, 80)
        .payload(b"payload")
        .build()
}

#[test]
fn drop_and_pass() {
    let mut d = hook("xdp_drop");
    let mut p = hook("xdp_pass");
    for pkt in [udp(), vec![], vec![0u8; 3], vec![0xff; 1500]] {
        assert_eq!(d.run(&pkt, &meta(0)).unwrap().verdict, DROP);
        let out = p.run(&pkt, &meta(0)).unwrap();
        assert_eq!(out.verdict, PASS);
        assert_eq!(out.packet, &pkt[..]);
    }
}

#[test]
fn count_per_protocol() {
    let mut h = hook("xdp_count");
    let pkts = [
        Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build(),
        Builder::udp("2001:db8::1", "2001:db8::2", 1, 2).build(),
        Builder::tcp("10.0.0.1", "10.0.0.2", 1, 2).build(),
        Builder::new("10.0.0.1", "10.0.0.2", packet::L4::Icmp).build(),
        vec![0xff; 42], // broadcast garbage: not IP
    ];
    for p in &pkts {
        assert_eq!(h.run(p, &meta(0)).unwrap().verdict, PASS);
    }
    let m = map(&h, "proto_stats");
    let stat = |m: &maps::Map, k: u32| {
        let v = m.user_lookup(&k.to_le_bytes()).unwrap();
        (
            u64::from_le_bytes(v[..8].try_into().unwrap()),
            u64::from_le_bytes(v[8..16].try_into().unwrap()),
        )
    };
    assert_eq!(stat(m, 17), (2, (pkts[0].len() + pkts[1].len()) as u64));
    assert_eq!(stat(m, 6), (1, pkts[2].len() as u64));
    assert_eq!(stat(m, 1), (1, pkts[3].len() as u64));
    assert_eq!(stat(m, 255), (1, 42));
    assert_eq!(stat(m, 0), (0, 0));
}

#[test]
fn parse_tx_swaps_macs() {
    let mut h = hook("xdp_parse_tx");
    let pkt = Builder::udp("10.0.0.1", "10.0.0.2", 1, 2)
        .macs([1, 1, 1, 1, 1, 1], [2, 2, 2, 2, 2, 2])
        .build();
    let out = h.run(&pkt, &meta(0)).unwrap();
    assert_eq!(out.verdict, TX);
    let mut want = pkt.clone();
    want[..6].copy_from_slice(&[1; 6]);
    want[6..12].copy_from_slice(&[2; 6]);
    assert_eq!(out.packet, &want[..]);
    assert_eq!(h.run(&[0u8; 10], &meta(0)).unwrap().verdict, DROP);
}

fn lpm4(prefix: u32, addr: [u8; 4]) -> Vec<u8> {
    [prefix.to_le_bytes().as_slice(), &addr].concat()
}

#[test]
fn ddos_block_list_and_ports() {
    let mut h = hook("xdp_ddos");
    map(&h, "blocklist_v4")
        .user_update(&lpm4(16, [10, 1, 0, 0]), &0u64.to_le_bytes(), 0)
        .unwrap();
    let v6key = [
        128u32.to_le_bytes().as_slice(),
        &"2001:db8::66"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    ]
    .concat();
    let mut v6prefix = v6key.clone();
    v6prefix[..4].copy_from_slice(&32u32.to_le_bytes());
    map(&h, "blocklist_v6")
        .user_update(&v6prefix, &0u64.to_le_bytes(), 0)
        .unwrap();
    map(&h, "protected_ports")
        .user_update(&53u16.to_le_bytes(), &[1], 0)
        .unwrap();

    let blocked = Builder::udp("10.1.2.3", "10.0.0.2", 1, 80).build();
    assert_eq!(h.run(&blocked, &meta(0)).unwrap().verdict, DROP);
    assert_eq!(
        h.run(
            &Builder::udp("10.2.0.1", "10.0.0.2", 1, 80).build(),
            &meta(0)
        )
        .unwrap()
        .verdict,
        PASS
    );
    assert_eq!(
        h.run(
            &Builder::udp("2001:db8::9", "2001:db8::1", 1, 80).build(),
            &meta(0)
        )
        .unwrap()
        .verdict,
        DROP
    );
    assert_eq!(
        h.run(
            &Builder::udp("2001:db9::9", "2001:db8::1", 1, 80).build(),
            &meta(0)
        )
        .unwrap()
        .verdict,
        PASS
    );
    assert_eq!(
        h.run(
            &Builder::udp("10.3.0.1", "10.0.0.2", 1, 53).build(),
            &meta(0)
        )
        .unwrap()
        .verdict,
        DROP
    );
    assert_eq!(
        h.run(
            &Builder::tcp("10.3.0.1", "10.0.0.2", 1, 53).build(),
            &meta(0)
        )
        .unwrap()
        .verdict,
        PASS
    );
    assert_eq!(h.run(&[0xff; 60], &meta(0)).unwrap().verdict, PASS);

    // The block-list entry counts its hits.
    let hits = map(&h, "blocklist_v4")
        .user_lookup(&lpm4(32, [10, 1, 2, 3]))
        .unwrap();
    assert_eq!(hits, 1u64.to_le_bytes());
    let stats = map(&h, "drop_stats");
    let [passed, blocked, port, rate, not_ip] = [0, 1, 2, 3, 4].map(|k| percpu_u64(stats, k));
    assert_eq!((passed, blocked, port, rate, not_ip), (3, 2, 1, 0, 1));
}

#[test]
fn ddos_rate_limits_each_source() {
    let opts = LoadOptions {
        globals: vec![("rate_pps".into(), 2), ("burst".into(), 3)],
        ..LoadOptions::default()
    };
    let mut h = hook_with("xdp_ddos", &opts);
    let a = Builder::udp("10.9.0.1", "10.0.0.2", 1, 80).build();
    let b = Builder::udp("10.9.0.2", "10.0.0.2", 1, 80).build();
    let t0 = 1_000_000_000;
    let verdicts: Vec<Verdict> = (0..5)
        .map(|_| h.run(&a, &meta(t0)).unwrap().verdict)
        .collect();
    assert_eq!(verdicts, [PASS, PASS, PASS, DROP, DROP], "a burst of 3");
    assert_eq!(
        h.run(&b, &meta(t0)).unwrap().verdict,
        PASS,
        "another source has its own bucket"
    );
    // 0.6 s at 2 packets per second refills one token (and a fifth).
    assert_eq!(h.run(&a, &meta(t0 + 600_000_000)).unwrap().verdict, PASS);
    assert_eq!(h.run(&a, &meta(t0 + 600_000_000)).unwrap().verdict, DROP);
    assert_eq!(percpu_u64(map(&h, "drop_stats"), 3), 3);
}

#[test]
fn router_forwards_through_the_fib() {
    let mut h = router();
    let pkt = Builder::udp("10.0.0.1", "10.10.5.5", 1, 2).ttl(64).build();
    let out = h.run(&pkt, &meta(0)).unwrap();
    assert_eq!(out.verdict, REDIRECT);
    assert_eq!(
        out.redirect.unwrap().target,
        RedirectTarget::Device {
            ifindex: 3,
            ingress: false
        }
    );
    let o = out.packet;
    assert_eq!(&o[..6], &[2, 0, 0, 0, 0x33, 0x33], "next hop's MAC");
    assert_eq!(&o[6..12], &[2, 0, 0, 0, 3, 3], "egress interface's MAC");
    assert_eq!(o[14 + 8], 63, "TTL decremented");
    assert!(ipv4_checksum_ok(&o[14..34]), "checksum updated");
    assert_eq!(&o[34..], &pkt[34..], "the rest is untouched");
    // IPv6 through the FIB: hop limit decremented.
    let p6 = Builder::udp("2001:db8::1", "2001:db8:100::9", 1, 2)
        .ttl(9)
        .build();
    let out = h.run(&p6, &meta(0)).unwrap();
    assert_eq!(out.verdict, REDIRECT);
    assert_eq!(
        out.redirect.unwrap().target,
        RedirectTarget::Device {
            ifindex: 4,
            ingress: false
        }
    );
    assert_eq!(out.packet[14 + 7], 8);
    assert_eq!(&out.packet[..6], &[2, 0, 0, 0, 0x44, 0x44]);
}

#[test]
fn router_uses_its_own_routes_and_passes_the_rest() {
    let mut h = router();
    // routes_v4 has 172.16.0.0/12 via ifindex 7.
    let nh = [
        7u32.to_le_bytes().as_slice(),
        &[2, 0, 0, 0, 7, 7],
        &[2, 0, 0, 0, 0x77, 0x77],
    ]
    .concat();
    map(&h, "routes_v4")
        .user_update(&lpm4(12, [172, 16, 0, 0]), &nh, 0)
        .unwrap();
    let out = h
        .run(
            &Builder::udp("10.0.0.1", "172.20.1.1", 1, 2).build(),
            &meta(0),
        )
        .unwrap();
    assert_eq!(out.verdict, REDIRECT);
    assert_eq!(
        out.redirect.unwrap().target,
        RedirectTarget::Device {
            ifindex: 7,
            ingress: false
        }
    );
    assert_eq!(
        &out.packet[..12],
        &[2, 0, 0, 0, 0x77, 0x77, 2, 0, 0, 0, 7, 7]
    );
    assert!(ipv4_checksum_ok(&out.packet[14..34]));
    // Unroutable: to the stack, TTL restored.
    let pkt = Builder::udp("10.0.0.1", "8.8.8.8", 1, 2).build();
    let out = h.run(&pkt, &meta(0)).unwrap();
    assert_eq!((out.verdict, out.packet), (PASS, &pkt[..]));
    // TTL 1: to the stack for the ICMP time-exceeded.
    let pkt = Builder::udp("10.0.0.1", "10.10.5.5", 1, 2).ttl(1).build();
    assert_eq!(h.run(&pkt, &meta(0)).unwrap().verdict, PASS);
    // Blackhole routes drop.
    assert_eq!(
        h.run(
            &Builder::udp("10.0.0.1", "10.66.1.1", 1, 2).build(),
            &meta(0)
        )
        .unwrap()
        .verdict,
        DROP
    );
    // No devmap entry for the egress: the redirect falls back to the stack.
    map(&h, "tx_ports").delete(&3u32.to_le_bytes()).unwrap();
    assert_eq!(
        h.run(
            &Builder::udp("10.0.0.1", "10.10.5.5", 1, 2).build(),
            &meta(0)
        )
        .unwrap()
        .verdict,
        PASS
    );
    let stats = map(&h, "router_stats");
    assert_eq!(percpu_u64(stats, 0), 1);
    assert_eq!(percpu_u64(stats, 2), 1);
}

/// Maglev: each backend's preference list fills the ring in turns.
fn maglev(backends: &[u32], size: usize) -> Vec<u32> {
    let h = |x: u32, salt: u32| {
        let mut v = x.wrapping_mul(0x9e37_79b1) ^ salt;
        v ^= v >> 16;
        v.wrapping_mul(0x85eb_ca6b) ^ (v >> 13)
    };
    let mut next = vec![0usize; backends.len()];
    let mut ring = vec![u32::MAX; size];
    let mut filled = 0;
    while filled < size {
        for (i, &b) in backends.iter().enumerate() {
            let offset = h(b, 1) as usize % size;
            let skip = h(b, 2) as usize % (size - 1) + 1;
            loop {
                let pos = (offset + next[i] * skip) % size;
                next[i] += 1;
                if ring[pos] == u32::MAX {
                    ring[pos] = i as u32;
                    filled += 1;
                    break;
                }
            }
            if filled == size {
                break;
            }
        }
    }
    ring
}

#[test]
fn load_balancer_encapsulates_to_a_real() {
    let mut h = hook("xdp_lb");
    let vip = [[10u8, 0, 0, 100].as_slice(), &80u16.to_be_bytes(), &[6, 0]].concat();
    map(&h, "vip_map").user_update(&vip, &[0u8; 8], 0).unwrap();
    let reals = [[192u8, 168, 1, 10], [192, 168, 1, 11], [192, 168, 1, 12]];
    for (i, r) in reals.iter().enumerate() {
        map(&h, "reals")
            .user_update(&(i as u32).to_le_bytes(), r, 0)
            .unwrap();
    }
    let ring = maglev(&[10, 11, 12], 251);
    for (pos, real) in ring.iter().enumerate() {
        map(&h, "ch_rings")
            .user_update(&(pos as u32).to_le_bytes(), &real.to_le_bytes(), 0)
            .unwrap();
    }
    let cfg = [
        [2u8, 0, 0, 0, 0x99, 0x99, 0, 0].as_slice(),
        &[10, 0, 0, 254],
    ]
    .concat();
    map(&h, "lb_config")
        .user_update(&0u32.to_le_bytes(), &cfg, 0)
        .unwrap();

    let mut chosen = std::collections::HashSet::new();
    for sport in 1000..1064u16 {
        let pkt = Builder::tcp("172.16.0.1", "10.0.0.100", sport, 80)
            .payload(b"GET /")
            .build();
        let out = h.run(&pkt, &meta(0)).unwrap();
        assert_eq!(out.verdict, TX);
        let o = out.packet.to_vec();
        assert_eq!(o.len(), pkt.len() + 20);
        assert_eq!(&o[..6], &[2, 0, 0, 0, 0x99, 0x99], "to the gateway");
        assert_eq!(&o[6..12], &pkt[..6], "from the VIP's MAC");
        let outer = &o[14..34];
        assert_eq!((outer[0], outer[9]), (0x45, 4), "IPv4 in IPv4");
        assert!(ipv4_checksum_ok(outer));
        assert_eq!(&outer[12..16], &[10, 0, 0, 254]);
        assert!(reals.iter().any(|r| &outer[16..20] == r));
        assert_eq!(
            u16::from_be_bytes([outer[2], outer[3]]) as usize,
            pkt.len() - 14 + 20
        );
        assert_eq!(&o[34..], &pkt[14..], "the inner packet is intact");
        chosen.insert(outer[16..20].to_vec());
        // The same flow sticks to its real.
        let again = h.run(&pkt, &meta(0)).unwrap();
        assert_eq!(&again.packet[30..34], &o[30..34]);
    }
    assert_eq!(chosen.len(), 3, "64 flows spread over all three reals");
    assert_eq!(map(&h, "conn_table").len(), 64);
    // Not a VIP: untouched.
    let other = Builder::tcp("172.16.0.1", "10.0.0.100", 1000, 443).build();
    let out = h.run(&other, &meta(0)).unwrap();
    assert_eq!((out.verdict, out.packet), (PASS, &other[..]));
}

#[test]
fn tc_classify_marks_drops_and_rewrites() {
    let mut h = hook("tc_classify");
    let ok = Verdict::Tc(TcAction::Ok);
    // Telnet is dropped.
    let out = h
        .run(
            &Builder::tcp("10.0.0.1", "10.0.0.2", 5000, 23).build(),
            &meta(0),
        )
        .unwrap();
    assert_eq!(out.verdict, Verdict::Tc(TcAction::Shot));
    // CS1 is cleared, the checksum stays right; mark and classid follow.
    let pkt = Builder::udp("10.0.0.1", "10.0.0.2", 1, 2)
        .tos(8 << 2)
        .build();
    let out = h.run(&pkt, &meta(0)).unwrap();
    assert_eq!(out.verdict, ok);
    assert_eq!(out.packet[15], 0, "DSCP cleared");
    assert!(ipv4_checksum_ok(&out.packet[14..34]));
    assert_eq!(&out.packet[16..24], &pkt[16..24]);
    assert_eq!(
        &out.packet[26..],
        &pkt[26..],
        "only TOS and checksum change"
    );
    let skb = out.skb.unwrap();
    assert_eq!(skb.mark, 0x100 | 17);
    // The kernel keeps the class's minor (`qdisc_skb_cb->tc_classid` is
    // 16 bits); cls_bpf takes the major from the filter's `classid`.
    assert_eq!(skb.tc_classid, 9);
    // IPv6 with EF (46).
    let p6 = Builder::tcp("2001:db8::1", "2001:db8::2", 1, 443)
        .tos(46 << 2)
        .build();
    let out = h.run(&p6, &meta(0)).unwrap();
    assert_eq!(out.verdict, ok);
    assert_eq!(out.packet, &p6[..]);
    let skb = out.skb.unwrap();
    assert_eq!((skb.mark, skb.tc_classid), (0x106, 47));
    assert_eq!(percpu_u64(map(&h, "class_stats"), 46), 1);
    assert_eq!(percpu_u64(map(&h, "class_stats"), 8), 1);
    // Not IP: untouched.
    assert_eq!(h.run(&[0xff; 60], &meta(0)).unwrap().verdict, ok);
}
