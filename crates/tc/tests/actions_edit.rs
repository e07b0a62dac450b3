//! pedit, csum, skbedit and vlan on frames built and checked with
//! etherparse: parsing (good and bad words), the effect on the frame and
//! the skb, the counters, and the text tc prints.

use etherparse::{NetHeaders, PacketBuilder, PacketHeaders, TransportHeader};
use tc::{ActionRef, Actions, Control, Skb, parse_actions};

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn tcp4(ttl: u8) -> Vec<u8> {
    let mut f = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], ttl)
        .tcp(1000, 80, 7, 512)
        .write(&mut f, b"hello, tcp")
        .unwrap();
    f
}

fn udp4() -> Vec<u8> {
    let mut f = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(5000, 53)
        .write(&mut f, b"hello, udp!")
        .unwrap();
    f
}

fn udp6() -> Vec<u8> {
    let mut f = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B)
        .ipv6([0xfd; 16], [0xfe; 16], 64)
        .udp(5000, 53)
        .write(&mut f, b"six")
        .unwrap();
    f
}

/// Parses `words` (after `action`) into a fresh table.
fn one(words: &str) -> (Actions, ActionRef) {
    let mut t = Actions::default();
    let w: Vec<&str> = words.split_whitespace().collect();
    let (refs, used) = parse_actions(&w, &mut t).unwrap_or_else(|e| panic!("{words}: {e}"));
    assert_eq!(used, w.len(), "{words}: all words taken");
    assert_eq!(refs.len(), 1);
    (t, refs[0].clone())
}

fn err(words: &str) -> String {
    let w: Vec<&str> = words.split_whitespace().collect();
    parse_actions(&w, &mut Actions::default())
        .unwrap_err()
        .to_string()
}

fn run(t: &mut Actions, list: &[ActionRef], frame: &[u8]) -> (Control, Skb) {
    let mut skb = Skb::from_frame(frame, 1);
    let bytes = skb.len() as u64;
    let c = t.exec(list, &mut skb, bytes, &mut Vec::new());
    (c, skb)
}

/// Asserts the IPv4 header and TCP/UDP checksums are right, per etherparse.
fn assert_valid(frame: &[u8]) {
    let h = PacketHeaders::from_ethernet_slice(frame).unwrap();
    let payload = h.payload.slice();
    match h.net {
        Some(NetHeaders::Ipv4(ip, _)) => {
            assert_eq!(ip.header_checksum, ip.calc_header_checksum(), "ip");
            match h.transport {
                Some(TransportHeader::Tcp(t)) => {
                    assert_eq!(
                        t.checksum,
                        t.calc_checksum_ipv4(&ip, payload).unwrap(),
                        "tcp"
                    )
                }
                Some(TransportHeader::Udp(u)) => {
                    assert_eq!(
                        u.checksum,
                        u.calc_checksum_ipv4(&ip, payload).unwrap(),
                        "udp"
                    )
                }
                other => panic!("{other:?}"),
            }
        }
        Some(NetHeaders::Ipv6(ip, _)) => match h.transport {
            Some(TransportHeader::Udp(u)) => {
                assert_eq!(
                    u.checksum,
                    u.calc_checksum_ipv6(&ip, payload).unwrap(),
                    "udp6"
                )
            }
            Some(TransportHeader::Tcp(t)) => {
                assert_eq!(
                    t.checksum,
                    t.calc_checksum_ipv6(&ip, payload).unwrap(),
                    "tcp6"
                )
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

fn ipv4_of(frame: &[u8]) -> etherparse::Ipv4Header {
    match PacketHeaders::from_ethernet_slice(frame).unwrap().net {
        Some(NetHeaders::Ipv4(ip, _)) => ip,
        other => panic!("{other:?}"),
    }
}

#[test]
fn pedit_then_csum_gives_the_changed_fields_with_valid_checksums() {
    let words = "action pedit ex munge ip ttl set 9 munge ip src set 192.168.1.7 \
                 munge tcp dport set 8080 pipe action csum ip4h and tcp";
    let mut t = Actions::default();
    let w: Vec<&str> = words.split_whitespace().collect();
    let (refs, used) = parse_actions(&w, &mut t).unwrap();
    assert_eq!(used, w.len());
    let (c, skb) = run(&mut t, &refs, &tcp4(64));
    assert_eq!(c, Control::OK);
    let ip = ipv4_of(&skb.data);
    assert_eq!((ip.time_to_live, ip.source), (9, [192, 168, 1, 7]));
    let h = PacketHeaders::from_ethernet_slice(&skb.data).unwrap();
    let Some(TransportHeader::Tcp(tcp)) = h.transport else {
        panic!()
    };
    assert_eq!((tcp.source_port, tcp.destination_port), (1000, 8080));
    assert_eq!(h.payload.slice(), b"hello, tcp");
    assert_valid(&skb.data);
    // pedit alone leaves the checksums stale.
    let (mut t2, r) = one("action pedit ex munge ip ttl set 9");
    let (_, skb) = run(&mut t2, std::slice::from_ref(&r), &tcp4(64));
    let ip = ipv4_of(&skb.data);
    assert_ne!(ip.header_checksum, ip.calc_header_checksum());
    assert_eq!(t2.get(&r).unwrap().stats.packets, 1);
}

#[test]
fn csum_mends_udp_over_ipv4_and_ipv6_and_drops_a_short_packet() {
    for frame in [udp4(), udp6()] {
        let mut f = frame.clone();
        let n = f.len();
        f[n - 1] ^= 0xff; // the payload changed: the UDP checksum is stale
        let (mut t, r) = one("action csum udp");
        let (c, skb) = run(&mut t, std::slice::from_ref(&r), &f);
        assert_eq!(c, Control::OK);
        assert_valid(&skb.data);
        assert_ne!(skb.data, frame);
    }
    // An IPv4 length longer than the frame: the kernel cannot pull it, drops.
    let mut f = udp4();
    f.truncate(f.len() - 4);
    let (mut t, r) = one("action csum ip4h udp");
    let (c, _) = run(&mut t, std::slice::from_ref(&r), &f);
    assert_eq!(c, Control::SHOT);
    assert_eq!(t.get(&r).unwrap().stats.drops, 1);
    // ICMP over IPv4.
    let mut f = Vec::new();
    PacketBuilder::ethernet2(MAC_A, MAC_B)
        .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 3)
        .icmpv4_echo_request(1, 2)
        .write(&mut f, b"ping")
        .unwrap();
    let good = f.clone();
    f[14 + 20 + 2] ^= 0x55;
    let (mut t, r) = one("action csum icmp");
    let (_, skb) = run(&mut t, &[r], &f);
    assert_eq!(skb.data, good);
}

#[test]
fn pedit_keys_pack_as_tc_packs_them_and_print_as_tc_prints() {
    let (t, r) = one(
        "action pedit ex munge ip ttl set 9 munge offset 12 u16 set 0x1234 retain 0xff00 munge eth src set 02:00:00:00:00:99 pipe index 4",
    );
    let a = t.get(&r).unwrap();
    let text = tc_text(&t, "pedit");
    assert!(
        text.contains(
            " pedit action pipe keys 4\n \t index 4 ref 1 bind 1\n\t key #0  at ipv4+8: val 09000000 mask 00ffffff\n\t key #1  at 12: val 12000000 mask 00ffffff\n\t key #2  at eth+4: val 00000200 mask ffff0000\n\t key #3  at eth+8: val 00000099 mask 00000000"
        ),
        "{text}"
    );
    assert_eq!(a.index, 4);
    // `add` counts as the kernel does on a little-endian machine: the byte
    // of a u8 field wraps (ttl 1 + 255 = 0).
    let (mut t, r) = one("action pedit ex munge ip ttl decrement");
    let (_, skb) = run(&mut t, std::slice::from_ref(&r), &tcp4(1));
    assert_eq!(ipv4_of(&skb.data).time_to_live, 0);
    let (_, skb) = run(&mut t, &[r], &tcp4(64));
    assert_eq!(ipv4_of(&skb.data).time_to_live, 63);
    // invert and clear on raw offsets from the network header.
    let (mut t, r) =
        one("action pedit munge offset 8 u8 invert munge offset 0 u8 clear retain 0x0f");
    let (_, skb) = run(&mut t, &[r], &tcp4(0x0f));
    assert_eq!(skb.data[14 + 8], 0xf0);
    assert_eq!(skb.data[14], 0x40);
    // A key past the frame's end: an overlimit, the control still given.
    let (mut t, r) = one("action pedit munge offset 4000 u32 set 1");
    let (c, skb) = run(&mut t, std::slice::from_ref(&r), &tcp4(64));
    assert_eq!((c, skb.data), (Control::OK, tcp4(64)));
    assert_eq!(t.get(&r).unwrap().stats.overlimits, 1);
    // `at A offmask M shift S`: the offset grows by (byte at A & M) >> S
    // (here the IHL: 5 words, 20 bytes, so the TCP source port).
    let (mut t, r) = one("action pedit munge offset 0 u16 at 0 offmask 0x0f shift 0 set 4242");
    let (_, skb) = run(&mut t, std::slice::from_ref(&r), &tcp4(64));
    // (0x45 & 0x0f) >> 0 = 5: offset 5 is not on a 32-bit boundary: bad.
    assert_eq!(t.get(&r).unwrap().stats.overlimits, 1);
    assert_eq!(skb.data, tcp4(64));
    // (0x45 & 0x40) >> 4 = 4: the word at 4, its high half (the IPv4 id).
    let (mut t, r) = one("action pedit munge offset 0 u16 at 0 0x40 4 set 4242");
    let (_, skb) = run(&mut t, &[r], &tcp4(64));
    assert_eq!(ipv4_of(&skb.data).identification, 4242);
}

#[test]
fn pedit_refuses_bad_words_by_name() {
    for (w, why) in [
        ("action pedit munge ip ttl add 1", "Non extended mode"),
        (
            "action pedit munge tcp dport set 1",
            "needs 'pedit ex munge",
        ),
        (
            "action pedit ex munge ip sport set 1",
            "\"sport\" is not a field of ip",
        ),
        (
            "action pedit ex munge ip ttl frobnicate",
            "\"frobnicate\" is not a command",
        ),
        (
            "action pedit ex munge ip src set 1.2.3",
            "\"1.2.3\" is not a value",
        ),
        (
            "action pedit ex munge ip tos set 300",
            "pack_key8 bad value",
        ),
        (
            "action pedit munge offset 2 u32 set 1",
            "32 bit offsets must begin",
        ),
        (
            "action pedit munge offset 3 u16 set 1",
            "pack_key16 bad index value 3",
        ),
        (
            "action pedit munge offset 0 u64 set 1",
            "\"u64\" is not u8, u16 or u32",
        ),
        (
            "action pedit ex munge ip protocol decrement",
            "decrement command is not supported",
        ),
        (
            "action pedit ex munge icmp type set 1",
            "\"icmp\" is not offset",
        ),
        ("action pedit ex pipe", "pedit requires keys"),
        (
            "action pedit ex munge ip6 src set ::1 retain 0xff",
            "retain is not supported",
        ),
    ] {
        let e = err(w);
        assert!(e.contains(why), "{w}: {e}");
    }
}

#[test]
fn csum_parses_its_targets_and_prints_them() {
    let (t, _) = one("action csum ip4h and tcp or udp + icmp igmp drop");
    let text = tc_text(&t, "csum");
    assert!(
        text.contains(
            "action order 0: csum (iph, icmp, igmp, tcp, udp) action drop\n\tindex 1 ref 1 bind 1\n"
        ),
        "{text}"
    );
    for (w, why) in [
        (
            "action csum sctp",
            "csum sctp: sluice does not compute sctp",
        ),
        ("action csum udplite", "udplite"),
        ("action csum", "empty <UPDATE> list"),
        ("action csum bogus", "Illegal csum construct (bogus)"),
    ] {
        let e = err(w);
        assert!(e.contains(why), "{w}: {e}");
    }
}

/// `tc actions show KIND` of the table's actions.
fn tc_text(t: &Actions, kind: &str) -> String {
    let mut c = tc::Config::default();
    c.actions = t.clone();
    c.run(&["actions", "show", kind], tc::ShowOptions::default())
        .unwrap()
}

#[test]
fn skbedit_sets_mark_priority_and_queue() {
    let (mut t, r) = one("action skbedit priority 1:10 mark 0x5/0xff queue_mapping 3");
    let mut skb = Skb::from_frame(&tcp4(64), 1);
    skb.mark = 0xab00_ff77;
    let c = t.exec(std::slice::from_ref(&r), &mut skb, 40, &mut Vec::new());
    assert_eq!(c, Control::PIPE);
    assert_eq!(
        (skb.priority, skb.mark, skb.queue_mapping),
        (0x1_0010, 0xab00_ff05, 3)
    );
    assert_eq!(t.get(&r).unwrap().stats.bytes, 40);
    let text = tc_text(&t, "skbedit");
    assert!(
        text.contains(
            "skbedit queue_mapping 3 priority 1:10 mark 5/0xff pipe\n\t index 1 ref 1 bind 1"
        ),
        "{text}"
    );
    // inheritdsfield: the priority from the DS field (tos 0xb8: EF, 46).
    let mut f = tcp4(64);
    f[15] = 0xb8;
    let (mut t, r) = one("action skbedit inheritdsfield pass");
    let (c, skb) = run(&mut t, &[r], &f);
    assert_eq!((c, skb.priority), (Control::OK, 46));
    for (w, why) in [
        ("action skbedit ptype host", "ptype has no meaning"),
        ("action skbedit ptype sideways", "Illegal ptype (sideways)"),
        ("action skbedit mark x1", "Illegal mark \"x1\""),
        (
            "action skbedit queue_mapping 70000",
            "Illegal queue_mapping \"70000\"",
        ),
        ("action skbedit pipe", "is not queue_mapping"),
    ] {
        let e = err(w);
        assert!(e.contains(why), "{w}: {e}");
    }
}

#[test]
fn vlan_push_modify_pop_round_trip() {
    let plain = udp4();
    let (mut t, push) = one("action vlan push id 10 priority 5");
    let (c, skb) = run(&mut t, std::slice::from_ref(&push), &plain);
    assert_eq!(c, Control::PIPE);
    assert_eq!(skb.vlan, Some((0x8100, 5 << 13 | 10)));
    assert_eq!((skb.protocol, skb.network), (0x0800, 18));
    let h = PacketHeaders::from_ethernet_slice(&skb.data).unwrap();
    assert_eq!(
        h.vlan_ids().iter().map(|v| v.value()).collect::<Vec<_>>(),
        [10]
    );
    assert_valid(&skb.data);
    // Push onto a tagged frame: the new tag is outside the old one.
    let (mut t2, outer) = one("action vlan push id 20 protocol 802.1ad");
    let (_, q) = run(&mut t2, &[outer], &skb.data);
    assert_eq!(q.vlan, Some((0x88a8, 20)));
    assert_eq!(q.protocol, 0x8100);
    let h = PacketHeaders::from_ethernet_slice(&q.data).unwrap();
    assert_eq!(
        h.vlan_ids().iter().map(|v| v.value()).collect::<Vec<_>>(),
        [20, 10]
    );
    // Modify: the id and the TPID change, the priority stays.
    let (mut t3, m) = one("action vlan modify id 30");
    let (_, mo) = run(&mut t3, std::slice::from_ref(&m), &q.data);
    assert_eq!(mo.vlan, Some((0x8100, 30)));
    // Modify leaves an untagged frame alone.
    let (_, un) = run(&mut t3, &[m], &plain);
    assert_eq!(un.data, plain);
    // Pop twice: the plain frame again; a third pop changes nothing.
    let (mut t4, pop) = one("action vlan pop");
    let (_, p1) = run(&mut t4, std::slice::from_ref(&pop), &q.data);
    assert_eq!(p1.data, skb.data);
    let (_, p2) = run(&mut t4, std::slice::from_ref(&pop), &p1.data);
    assert_eq!(
        (p2.data.clone(), p2.vlan, p2.network),
        (plain.clone(), None, 14)
    );
    let (_, p3) = run(&mut t4, &[pop], &p2.data);
    assert_eq!(p3.data, plain);
    let text = tc_text(&t, "vlan");
    assert!(
        text.contains("vlan  push id 10 protocol 802.1Q priority 5 pipe\n\t index 1 ref 1 bind 1"),
        "{text}"
    );
    for (w, why) in [
        ("action vlan push", "id needs to be set for push"),
        ("action vlan pop id 3", "only valid for push/modify"),
        ("action vlan push id 4095", "out of range"),
        (
            "action vlan push id 3 protocol ip",
            "protocol not supported",
        ),
        ("action vlan push id 3 priority 8", "prio is invalid"),
        ("action vlan pop_eth", "pop_eth is not taken"),
        (
            "action vlan sideways",
            "\"sideways\" is not pop, push or modify",
        ),
    ] {
        let e = err(w);
        assert!(e.contains(why), "{w}: {e}");
    }
}

#[test]
fn a_u32_filter_with_pedit_and_csum_changes_the_frame_through_config() {
    let mut c = tc::Config::default();
    let show = tc::ShowOptions::default();
    c.run_batch(
        "qdisc add dev v0 clsact\n\
         filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 6 0xff \
         action pedit ex munge ip ttl set 9 pipe action csum ip4h",
        show,
    )
    .unwrap();
    let mut skb = Skb::from_frame(&tcp4(64), 1);
    let out = c.classify("v0", tc::ClsactHook::Ingress, &mut skb);
    assert_eq!(out.verdict, runtime::TcAction::Ok);
    assert_eq!(ipv4_of(&skb.data).time_to_live, 9);
    assert_valid(&skb.data);
    // A UDP frame does not match: unchanged.
    let mut u = Skb::from_frame(&udp4(), 1);
    let out = c.classify("v0", tc::ClsactHook::Ingress, &mut u);
    assert_eq!((out.verdict, u.data), (runtime::TcAction::Unspec, udp4()));
    let text = c
        .run(
            &["filter", "show", "dev", "v0", "ingress"],
            tc::ShowOptions {
                stats: true,
                json: false,
            },
        )
        .unwrap();
    assert!(
        text.contains("action order 1:  pedit action pipe keys 1"),
        "{text}"
    );
    assert!(
        text.contains("action order 2: csum (iph) action pass"),
        "{text}"
    );
}

/// Found by the `tc` fuzz target: `act` (any abbreviation of `action`)
/// after u32 underflowed and after flower looped forever; tc takes it for
/// an action kind and refuses it.
#[test]
fn an_abbreviated_action_keyword_is_refused() {
    for kind in ["u32 match ip protocol 6 0xff", "flower ip_proto tcp"] {
        let mut c = tc::Config::default();
        let show = tc::ShowOptions::default();
        c.run_batch("qdisc add dev v0 clsact", show).unwrap();
        let line = format!("filter add dev v0 ingress prio 1 protocol ip {kind} act");
        let e = c.run_batch(&line, show).unwrap_err().to_string();
        assert!(e.contains("bad action type act"), "{kind}: {e}");
    }
}
