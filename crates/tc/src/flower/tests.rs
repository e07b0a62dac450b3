//! The flower filter as a whole: every key read, refused with tc's words
//! when bad, matched on frames built by hand (VLAN-tagged too), masks
//! grouped and tried in order, port ranges, `continue`, handles and
//! deleting, and the text `tc filter show` prints.

use super::*;
use crate::action::Actions;
use crate::block::Block;
use crate::classifier::Filter;
use crate::control::Control;

const IP: u16 = 0x0800;
const IPV6: u16 = 0x86dd;

/// A rule added, or the message of its error.
fn add(f: &mut Flower, a: &mut Actions, handle: Option<&str>, words: &str) -> Result<(), String> {
    let w: Vec<&str> = words.split_whitespace().collect();
    f.add(handle, &w, a).map_err(|e| e.to_string())
}

fn flower(protocol: u16, rules: &[&str]) -> (Flower, Actions) {
    let (mut f, mut a) = (Flower::new(protocol), Actions::default());
    for r in rules {
        add(&mut f, &mut a, None, r).unwrap_or_else(|e| panic!("{r}: {e}"));
    }
    (f, a)
}

const MAC_D: [u8; 6] = [0x02, 0, 0, 0, 0, 0xd];
const MAC_S: [u8; 6] = [0x02, 0, 0, 0, 0, 0x5];

/// An Ethernet frame; `tags` are (TPID, TCI) VLAN tags before `ty`.
fn eth(tags: &[(u16, u16)], ty: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&MAC_D);
    f.extend_from_slice(&MAC_S);
    for (tpid, tci) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&ty.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An IPv4 header (tos, ttl, fragment field) and its payload.
fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], tos: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, tos, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0];
    h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    h[6..8].copy_from_slice(&frag.to_be_bytes());
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h.extend_from_slice(l4);
    h
}

fn ipv6(next: u8, src: [u8; 16], dst: [u8; 16], l4: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    h.extend_from_slice(&[next, 64]);
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h.extend_from_slice(l4);
    h
}

/// A TCP header with `flags` (or a UDP header when `flags` is None).
fn l4(sport: u16, dport: u16, flags: Option<u8>) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    match flags {
        Some(fl) => {
            h.extend_from_slice(&[0; 8]);
            h.extend_from_slice(&[0x50, fl, 0xff, 0xff, 0, 0, 0, 0]);
        }
        None => h.extend_from_slice(&[0, 8, 0, 0]),
    }
    h
}

fn tcp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    eth(
        &[],
        IP,
        &ipv4(6, src, dst, 0, 0, &l4(sport, dport, Some(0x02))),
    )
}

fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    eth(&[], IP, &ipv4(17, src, dst, 0, 0, &l4(sport, dport, None)))
}

/// The class the filter gives a frame, its control, or None.
fn classify(f: &mut Flower, a: &mut Actions, frame: &[u8]) -> Option<(u32, Control)> {
    let mut skb = Skb::from_frame(frame, 7);
    let mut emitted = Vec::new();
    let mut cx = Cx {
        actions: a,
        emitted: &mut emitted,
        bytes: 0,
    };
    f.classify(&mut skb, &mut cx)
        .map(|m| (m.classid, m.control))
}

fn class(f: &mut Flower, a: &mut Actions, frame: &[u8]) -> Option<u32> {
    classify(f, a, frame).map(|(c, _)| c)
}

#[test]
fn five_tuples_prefixes_and_masks_match() {
    let (mut f, mut a) = flower(
        IP,
        &[
            "ip_proto tcp src_ip 10.0.0.1 dst_ip 10.1.0.0/16 src_port 1000 dst_port 80 classid 1:1",
            "ip_proto udp dst_ip 10.2.0.0/255.255.0.0 dst_port 53 classid 1:2",
            "ip_proto tcp dst_port 0x1000/0xf000 classid 1:3",
            "dst_mac 02:00:00:00:00:0d/ff:ff:ff:00:00:ff src_mac 02:00:00:00:00:00/40 ip_proto udp classid 1:4",
        ],
    );
    assert_eq!(
        class(
            &mut f,
            &mut a,
            &tcp4([10, 0, 0, 1], [10, 1, 9, 9], 1000, 80)
        ),
        Some(0x1_0001)
    );
    assert_eq!(
        class(
            &mut f,
            &mut a,
            &tcp4([10, 0, 0, 2], [10, 1, 9, 9], 1000, 80)
        ),
        None
    );
    assert_eq!(
        class(&mut f, &mut a, &udp4([1, 1, 1, 1], [10, 2, 3, 4], 5, 53)),
        Some(0x1_0002)
    );
    assert_eq!(
        class(&mut f, &mut a, &tcp4([1, 1, 1, 1], [1, 1, 1, 1], 5, 0x1abc)),
        Some(0x1_0003)
    );
    assert_eq!(
        class(&mut f, &mut a, &tcp4([1, 1, 1, 1], [1, 1, 1, 1], 5, 0x2abc)),
        None
    );
    // Any other UDP packet: the MAC rule (the destination's low byte and
    // the source's first 40 bits).
    assert_eq!(
        class(&mut f, &mut a, &udp4([1, 1, 1, 1], [9, 9, 9, 9], 5, 54)),
        Some(0x1_0004)
    );
    assert_eq!(f.mask_count(), 4);
}

#[test]
fn ip_keys_tos_ttl_flags_and_icmp_match() {
    let (mut f, mut a) = flower(
        IP,
        &[
            "ip_proto tcp tcp_flags 0x2/0x12 classid 1:1",
            "ip_tos 0x10/0xfc ip_ttl 64 classid 1:2",
            "ip_flags frag/nofirstfrag classid 1:3",
            "ip_proto icmp type 8 code 0 classid 1:4",
            "ip_proto 0x2f classid 1:5",
        ],
    );
    // SYN (0x02) without ACK (0x10).
    assert_eq!(
        class(&mut f, &mut a, &tcp4([1; 4], [2; 4], 1, 2)),
        Some(0x1_0001)
    );
    let ack = eth(
        &[],
        IP,
        &ipv4(6, [1; 4], [2; 4], 0, 0, &l4(1, 2, Some(0x12))),
    );
    assert_eq!(class(&mut f, &mut a, &ack), None);
    let tos = eth(&[], IP, &ipv4(17, [1; 4], [2; 4], 0x13, 0, &l4(1, 2, None)));
    assert_eq!(class(&mut f, &mut a, &tos), Some(0x1_0002));
    // A later fragment; a first fragment is not `nofirstfrag`.
    let later = eth(&[], IP, &ipv4(17, [1; 4], [2; 4], 0, 0x0010, &[]));
    assert_eq!(class(&mut f, &mut a, &later), Some(0x1_0003));
    let first = eth(
        &[],
        IP,
        &ipv4(17, [1; 4], [2; 4], 0, 0x2000, &l4(1, 2, None)),
    );
    assert_eq!(class(&mut f, &mut a, &first), None);
    let ping = eth(&[], IP, &ipv4(1, [1; 4], [2; 4], 0, 0, &[8, 0, 0, 0]));
    assert_eq!(class(&mut f, &mut a, &ping), Some(0x1_0004));
    let reply = eth(&[], IP, &ipv4(1, [1; 4], [2; 4], 0, 0, &[0, 0, 0, 0]));
    assert_eq!(class(&mut f, &mut a, &reply), None);
    let gre = eth(&[], IP, &ipv4(47, [1; 4], [2; 4], 0, 0, &[0; 4]));
    assert_eq!(class(&mut f, &mut a, &gre), Some(0x1_0005));
}

#[test]
fn ipv6_arp_and_mpls_keys_match() {
    let (mut f6, mut a) = flower(
        IPV6,
        &[
            "ip_proto icmpv6 src_ip 2001:db8::/32 type 128 classid 1:6",
            "ip_proto udp dst_ip ::1 dst_port 53 classid 1:7",
        ],
    );
    let mut src = [0u8; 16];
    src[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    let echo = eth(&[], IPV6, &ipv6(58, src, [0; 16], &[128, 0, 0, 0]));
    assert_eq!(class(&mut f6, &mut a, &echo), Some(0x1_0006));
    let mut lo = [0u8; 16];
    lo[15] = 1;
    let dns = eth(&[], IPV6, &ipv6(17, src, lo, &l4(9, 53, None)));
    assert_eq!(class(&mut f6, &mut a, &dns), Some(0x1_0007));
    // Behind a destination-options header.
    let mut opts = vec![17, 0, 0, 0, 0, 0, 0, 0];
    opts.extend(l4(9, 53, None));
    let dns = eth(&[], IPV6, &ipv6(60, src, lo, &opts));
    assert_eq!(class(&mut f6, &mut a, &dns), Some(0x1_0007));

    let (mut fa, mut a) = flower(
        0x0806,
        &["arp_op request arp_tip 10.0.0.0/24 arp_sha 02:00:00:00:00:05 classid 1:8"],
    );
    let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 1];
    arp.extend_from_slice(&MAC_S);
    arp.extend_from_slice(&[10, 0, 0, 5]);
    arp.extend_from_slice(&[0; 6]);
    arp.extend_from_slice(&[10, 0, 0, 9]);
    assert_eq!(
        class(&mut fa, &mut a, &eth(&[], 0x0806, &arp)),
        Some(0x1_0008)
    );
    arp[7] = 2;
    assert_eq!(class(&mut fa, &mut a, &eth(&[], 0x0806, &arp)), None);

    let (mut fm, mut a) = flower(
        0x8847,
        &[
            "mpls_label 100 mpls_bos 0 classid 1:9",
            "mpls lse depth 2 label 200 bos 1 classid 1:10",
        ],
    );
    let lse = |label: u32, bos: u32| (label << 12 | bos << 8 | 64).to_be_bytes();
    let mut stack = lse(100, 0).to_vec();
    stack.extend(lse(300, 1));
    assert_eq!(
        class(&mut fm, &mut a, &eth(&[], 0x8847, &stack)),
        Some(0x1_0009)
    );
    let mut stack = lse(7, 0).to_vec();
    stack.extend(lse(200, 1));
    assert_eq!(
        class(&mut fm, &mut a, &eth(&[], 0x8847, &stack)),
        Some(0x1_0010)
    );
    assert_eq!(
        class(&mut fm, &mut a, &eth(&[], 0x8847, &lse(200, 1))),
        None
    );
}

#[test]
fn vlan_keys_match_tagged_frames() {
    let (mut f, mut a) = flower(
        0x8100,
        &[
            "vlan_id 100 vlan_prio 5 vlan_ethtype ip ip_proto udp dst_port 53 classid 1:1",
            "vlan_id 200 classid 1:2",
            "vlan_id 300 vlan_ethtype 802.1q cvlan_id 7 cvlan_ethtype ipv6 classid 1:3",
        ],
    );
    let udp = ipv4(17, [1; 4], [2; 4], 0, 0, &l4(1, 53, None));
    let tagged = eth(&[(0x8100, 5 << 13 | 100)], IP, &udp);
    assert_eq!(class(&mut f, &mut a, &tagged), Some(0x1_0001));
    let prio4 = eth(&[(0x8100, 4 << 13 | 100)], IP, &udp);
    assert_eq!(class(&mut f, &mut a, &prio4), None);
    assert_eq!(
        class(&mut f, &mut a, &eth(&[(0x8100, 200)], 0x88cc, &[0; 8])),
        Some(0x1_0002)
    );
    // 802.1ad outside: the TPID is part of the key.
    assert_eq!(
        class(&mut f, &mut a, &eth(&[(0x88a8, 200)], 0x88cc, &[0; 8])),
        None
    );
    let v6 = ipv6(59, [0; 16], [0; 16], &[]);
    let qinq = eth(&[(0x8100, 300), (0x8100, 7)], IPV6, &v6);
    assert_eq!(class(&mut f, &mut a, &qinq), Some(0x1_0003));
    let qinq8 = eth(&[(0x8100, 300), (0x8100, 8)], IPV6, &v6);
    assert_eq!(class(&mut f, &mut a, &qinq8), None);
    assert_eq!(class(&mut f, &mut a, &udp4([1; 4], [2; 4], 1, 53)), None);
}

#[test]
fn port_ranges_are_checked_rule_by_rule_in_their_mask() {
    let (mut f, mut a) = flower(
        IP,
        &[
            "ip_proto tcp dst_port 1000-2000 classid 1:1",
            "ip_proto tcp dst_port 1500-3000 src_ip 10.0.0.1 classid 1:2",
            "ip_proto tcp dst_port 1500-3000 classid 1:3",
        ],
    );
    // Two masks: the first (no address) holds 1:1 and 1:3.
    assert_eq!(f.mask_count(), 2);
    let c = |f: &mut Flower, a: &mut Actions, src: [u8; 4], port| {
        class(f, a, &tcp4(src, [2; 4], 9, port))
    };
    assert_eq!(c(&mut f, &mut a, [1; 4], 1000), Some(0x1_0001));
    assert_eq!(c(&mut f, &mut a, [1; 4], 1700), Some(0x1_0001));
    assert_eq!(c(&mut f, &mut a, [1; 4], 2500), Some(0x1_0003));
    assert_eq!(c(&mut f, &mut a, [10, 0, 0, 1], 2500), Some(0x1_0003));
    assert_eq!(c(&mut f, &mut a, [1; 4], 3001), None);
    assert_eq!(c(&mut f, &mut a, [1; 4], 999), None);
    f.delete("1", &mut a).unwrap();
    f.delete("3", &mut a).unwrap();
    assert_eq!(c(&mut f, &mut a, [10, 0, 0, 1], 1700), Some(0x1_0002));
    assert_eq!(c(&mut f, &mut a, [10, 0, 0, 2], 1700), None);
    // UDP ports do not match a TCP rule.
    assert_eq!(
        class(&mut f, &mut a, &udp4([10, 0, 0, 1], [2; 4], 9, 1700)),
        None
    );
}

#[test]
fn masks_are_tried_in_the_order_they_first_appeared() {
    let (mut f, mut a) = flower(
        IP,
        &[
            "ip_proto tcp dst_port 80 classid 1:1",
            "src_ip 10.0.0.1 classid 1:2",
            "ip_proto tcp dst_port 443 classid 1:3",
        ],
    );
    assert_eq!(f.mask_count(), 2);
    let order: Vec<(u32, usize)> = f.rules().map(|r| (r.handle, r.order)).collect();
    assert_eq!(order, [(1, 0), (3, 1), (2, 2)]);
    // Both match: the first mask wins, whatever the handles.
    assert_eq!(
        class(&mut f, &mut a, &tcp4([10, 0, 0, 1], [2; 4], 1, 443)),
        Some(0x1_0003)
    );
    assert_eq!(
        class(&mut f, &mut a, &tcp4([10, 0, 0, 1], [2; 4], 1, 22)),
        Some(0x1_0002)
    );
    // The masked keys find the rules.
    let k = dissect(&Skb::from_frame(&tcp4([10, 0, 0, 1], [2; 4], 1, 80), 1));
    assert_eq!(f.find(&k), Some(1));
    let r = f.rules().find(|r| r.handle == 2).unwrap();
    assert_eq!(k.masked(r.mask), *r.key);
    // Removing the first mask's rules removes the mask: the other comes
    // first.
    f.delete("1", &mut a).unwrap();
    f.delete("3", &mut a).unwrap();
    assert_eq!(f.mask_count(), 1);
    assert_eq!(
        class(&mut f, &mut a, &tcp4([10, 0, 0, 1], [2; 4], 1, 443)),
        Some(0x1_0002)
    );
}

#[test]
fn continue_ends_flower_and_the_walk_goes_to_the_next_filter() {
    let mut actions = Actions::default();
    let mut f = Flower::new(IP);
    add(
        &mut f,
        &mut actions,
        None,
        "ip_proto tcp classid 1:1 action continue",
    )
    .unwrap();
    add(&mut f, &mut actions, None, "src_ip 10.0.0.1 classid 1:2").unwrap();
    assert_eq!(
        classify(&mut f, &mut actions, &tcp4([10, 0, 0, 1], [2; 4], 1, 2)),
        Some((0x1_0001, Control::UNSPEC))
    );
    let mut g = Flower::new(IP);
    add(&mut g, &mut actions, None, "classid 1:9").unwrap();
    let mut block = Block::default();
    for (prio, c) in [(1, f), (2, g)] {
        block
            .add(
                0,
                Filter {
                    prio,
                    protocol: IP,
                    classifier: Box::new(c),
                },
            )
            .unwrap();
    }
    // The second rule of prio 1 would match, but flower stops at its
    // first hit: `continue` goes on to prio 2.
    let mut skb = Skb::from_frame(&tcp4([10, 0, 0, 1], [2; 4], 1, 2), 1);
    let out = block.classify(&mut skb, 40, &mut actions);
    assert_eq!(out.classid, 0x1_0009);
    let mut skb = Skb::from_frame(&udp4([10, 0, 0, 1], [2; 4], 1, 2), 1);
    assert_eq!(block.classify(&mut skb, 40, &mut actions).classid, 0x1_0002);
}

#[test]
fn handles_skip_sw_and_deleting() {
    let (mut f, mut a) = flower(IP, &["classid 1:1"]);
    add(&mut f, &mut a, Some("5"), "ip_proto udp classid 1:5").unwrap();
    add(&mut f, &mut a, None, "ip_proto tcp classid 1:2").unwrap();
    add(
        &mut f,
        &mut a,
        Some("0x10"),
        "ip_proto 0x11 src_ip 1.2.3.4 classid 1:6 skip_sw",
    )
    .unwrap();
    let handles: Vec<u32> = f.handles.iter().copied().collect();
    assert_eq!(handles, [1, 2, 5, 16]);
    let e = add(&mut f, &mut a, Some("5"), "ip_proto tcp").unwrap_err();
    assert_eq!(e, "Error: Filter already exists.");
    let e = add(&mut f, &mut a, None, "ip_proto tcp classid 1:7").unwrap_err();
    assert!(e.contains("File exists"), "{e}");
    // A skip_sw rule is passed over: the next mask's rule matches.
    assert_eq!(
        class(&mut f, &mut a, &udp4([1, 2, 3, 4], [2; 4], 1, 2)),
        Some(0x1_0001)
    );
    let e = add(&mut f, &mut a, None, "skip_sw skip_hw").unwrap_err();
    assert!(e.contains("Invalid argument"), "{e}");
    assert_eq!(f.delete("1", &mut a), Ok(false));
    assert_eq!(
        class(&mut f, &mut a, &udp4([1, 2, 3, 4], [2; 4], 1, 2)),
        Some(0x1_0005)
    );
    assert_eq!(
        f.delete("1", &mut a).unwrap_err().to_string(),
        "Error: Specified filter handle not found."
    );
    add(&mut f, &mut a, None, "classid 1:8").unwrap();
    assert!(f.rule(1).is_some());
    for h in ["1", "2", "5"] {
        assert_eq!(f.delete(h, &mut a), Ok(false));
    }
    assert_eq!(f.delete("0x10", &mut a), Ok(true));
    assert_eq!(f.mask_count(), 0);
}

#[test]
fn a_refused_rule_changes_nothing_and_releases_its_actions() {
    let (mut f, mut a) = flower(IP, &["ip_proto tcp classid 1:1 action drop"]);
    assert_eq!(a.iter().count(), 1);
    for bad in [
        "ip_proto tcp action drop dst_port 0",
        "ip_proto tcp classid 1:1 action pass",
        "action drop bogus",
        "action pass indev nowhere",
    ] {
        assert!(add(&mut f, &mut a, None, bad).is_err(), "{bad}");
        assert_eq!(a.iter().count(), 1, "{bad}");
    }
    assert_eq!(f.rules().count(), 1);
    f.delete("1", &mut a).unwrap();
    assert_eq!(a.iter().count(), 0);
}

mod words;
