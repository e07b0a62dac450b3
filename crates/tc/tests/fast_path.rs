//! The fast path against the reference walk: random rule sets (flower
//! rules with random masks over a few fields and protocols, u32 exact
//! rules in one or several filters, actions that continue, pipe, drop,
//! accept, go to chain 1 or reclassify, matchall and port-range rules
//! breaking runs, deletions between packets) and random packets (mostly
//! built to hit rules, some short or of other protocols): every packet
//! gets the same outcome with the fast path on and off, and `tc -s filter
//! show` prints the same counters at the end. And a worst case of 1000
//! rules is decided by one lookup, not by the walk.

use proptest::prelude::*;
use tc::{ClsactHook, Config, ShowOptions, Skb};

/// Takes a choice among `xs` from the seed.
fn pick<T: Copy>(r: &mut u64, xs: &[T]) -> T {
    let n = xs.len() as u64;
    let v = xs[(*r % n) as usize];
    *r /= n;
    v
}

fn action(r: &mut u64) -> &'static str {
    pick(
        r,
        &[
            "action drop",
            "action ok",
            "action pipe",
            "action continue",
            "action goto chain 1",
            "classid 1:1",
            "classid 1:2 action continue",
            "classid 1:3 action drop",
            "action reclassify",
        ],
    )
}

/// Each priority has its kind and protocol (most of the time: now and
/// then another, which tc refuses), so that rules gather in filters and
/// filters of a kind follow each other.
const FLOWER: [(u16, &str); 6] = [
    (1, "ip"),
    (2, "ip"),
    (3, "all"),
    (4, "ipv6"),
    (7, "ip"),
    (11, "802.1q"),
];
const U32: [(u16, &str); 4] = [(5, "ip"), (6, "all"), (8, "ip"), (9, "ip")];
const MATCHALL: [u16; 3] = [6, 10, 10];

fn flower(mut r: u64) -> String {
    let r = &mut r;
    let (prio, proto) = pick(r, &FLOWER);
    let chain = pick(r, &[0, 0, 1]);
    let mut m = Vec::new();
    match proto {
        "ip" => {
            m.push(pick(
                r,
                &[
                    "",
                    "src_ip 10.0.0.1",
                    "src_ip 10.0.0.2",
                    "src_ip 10.0.0.0/30",
                ],
            ));
            m.push(pick(
                r,
                &["", "dst_ip 192.168.0.1", "dst_ip 192.168.0.0/24"],
            ));
        }
        "ipv6" => m.push(pick(r, &["", "src_ip 2001:db8::1", "src_ip 2001:db8::/64"])),
        "802.1q" => m.push(pick(r, &["", "vlan_id 5", "vlan_id 6"])),
        _ => m.push(pick(
            r,
            &["", "dst_mac 02:00:00:00:00:01", "src_mac 00:00:00:00:00:00"],
        )),
    }
    if proto == "ip" || proto == "ipv6" {
        let p = pick(r, &["", "ip_proto tcp", "ip_proto udp"]);
        m.push(p);
        if !p.is_empty() {
            m.push(pick(
                r,
                &["", "dst_port 80", "dst_port 443", "", "dst_port 80-90"],
            ));
        }
    }
    let skip = pick(r, &["", "", "", "", "skip_sw"]);
    format!(
        "filter add dev v0 ingress chain {chain} prio {prio} protocol {proto} flower {skip} {} {}",
        m.join(" "),
        action(r)
    )
}

fn u32(mut r: u64) -> String {
    let r = &mut r;
    let (prio, proto) = pick(r, &U32);
    let chain = pick(r, &[0, 0, 1]);
    let keys = [
        "match ip src 10.0.0.1/32",
        "match ip src 10.0.0.2/32",
        "match ip src 10.0.0.0/30",
        "match ip dst 192.168.0.1/32",
        "match ip protocol 6 0xff",
        "match ip protocol 17 0xff",
        "match ip dport 80 0xffff",
        "match u32 0 0 at 56",
        "match tcp dst 80 0xffff",
        "match u32 0 0",
    ];
    let a = pick(r, &keys);
    let b = pick(r, &["", "", keys[1], keys[4], keys[6]]);
    let mark = pick(r, &["", "", "", "", "", "match mark 1 0xff"]);
    // Now and then a rule with neither class nor actions (not terminal).
    let act = if pick(r, &[false, false, false, false, false, true]) {
        ""
    } else {
        action(r)
    };
    format!(
        "filter add dev v0 ingress chain {chain} prio {prio} protocol {proto} u32 {a} {b} {mark} {act}"
    )
}

fn command(r: u64) -> String {
    let mut s = r;
    match pick(&mut s, &[0, 0, 0, 0, 1, 1, 1, 2, 3]) {
        0 => flower(s),
        1 => u32(s),
        2 => {
            let prio = pick(&mut s, &MATCHALL);
            let act = pick(&mut s, &["action pipe", "action continue", "action drop"]);
            format!("filter add dev v0 ingress prio {prio} protocol all matchall {act}")
        }
        _ => {
            let prio = pick(&mut s, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
            let chain = pick(&mut s, &[0, 1]);
            format!("filter del dev v0 ingress chain {chain} prio {prio}")
        }
    }
}

fn packet(mut r: u64) -> Skb {
    let r = &mut r;
    let kind = pick(r, &[4, 4, 4, 4, 4, 6, 0, 8]);
    let mut f = vec![0u8; 14];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, pick(r, &[1, 2])]);
    if kind == 8 {
        // A VLAN-tagged IPv4 frame: its filter protocol is 802.1Q.
        f[12..14].copy_from_slice(&[0x81, 0x00]);
        f.extend([0, 5, 0, 0]);
    }
    match kind {
        4 | 8 => {
            let at = f.len() - 2;
            f[at..].copy_from_slice(&[0x08, 0x00]);
            let mut ip = vec![0u8; 20];
            ip[0] = 0x45;
            ip[8] = 64;
            ip[9] = pick(r, &[6, 17, 1]);
            ip[12..16].copy_from_slice(&[10, 0, pick(r, &[0, 0, 0, 1]), pick(r, &[1, 2, 3])]);
            ip[16..20].copy_from_slice(&pick(
                r,
                &[[192, 168, 0, 1], [192, 168, 0, 2], [1, 1, 1, 1]],
            ));
            f.extend(ip);
            f.extend(1234u16.to_be_bytes());
            f.extend(pick(r, &[80u16, 443, 85, 1000]).to_be_bytes());
            f.extend([0u8; 32]);
        }
        6 => {
            f[12..14].copy_from_slice(&[0x86, 0xdd]);
            let mut ip = vec![0u8; 40];
            ip[0] = 0x60;
            ip[6] = pick(r, &[6, 17]);
            ip[7] = 64;
            ip[8..10].copy_from_slice(&[0x20, 0x01]);
            ip[10..12].copy_from_slice(&[0x0d, 0xb8]);
            ip[23] = pick(r, &[1, 2]);
            f.extend(ip);
            f.extend(1234u16.to_be_bytes());
            f.extend(pick(r, &[80u16, 443]).to_be_bytes());
            f.extend([0u8; 16]);
        }
        _ => {
            f[12..14].copy_from_slice(&[0x08, 0x06]);
            f.extend([0u8; 28]);
        }
    }
    if pick(r, &[false, false, false, true]) {
        let len = 14 + (*r % 60) as usize;
        *r /= 60;
        f.truncate(len);
    }
    let mut skb = Skb::from_frame(&f, 1);
    skb.mark = pick(r, &[0, 1]);
    skb
}

/// Packets (`true`) and commands by their seeds, through both; what the
/// fast path did.
fn run(ops: &[(bool, u64)]) -> Result<tc::FastStats, TestCaseError> {
    let show = ShowOptions::default();
    let stats = ShowOptions {
        stats: true,
        json: false,
    };
    let (mut fast, mut slow) = (Config::default(), Config::default());
    slow.set_fast(false);
    for c in [&mut fast, &mut slow] {
        c.run_batch("qdisc add dev v0 clsact", show).unwrap();
    }
    let mut lines = Vec::new();
    for &(is_packet, seed) in ops {
        if is_packet {
            let skb = packet(seed);
            let (mut a, mut b) = (skb.clone(), skb);
            let fa = fast.classify("v0", ClsactHook::Ingress, &mut a);
            let fb = slow.classify("v0", ClsactHook::Ingress, &mut b);
            prop_assert_eq!(
                &fa,
                &fb,
                "packet {:x?}\nafter\n{}",
                b.data,
                lines.join("\n")
            );
            prop_assert_eq!(a, b);
        } else {
            let line = command(seed);
            let w = tc::words(&line);
            let w: Vec<&str> = w.iter().map(String::as_str).collect();
            let ra = fast.run(&w, show);
            let rb = slow.run(&w, show);
            prop_assert_eq!(&ra, &rb);
            if ra.is_ok() {
                lines.push(line);
            }
        }
    }
    let cmd = ["filter", "show", "dev", "v0", "ingress"];
    prop_assert_eq!(
        fast.run(&cmd, stats).unwrap(),
        slow.run(&cmd, stats).unwrap(),
        "after\n{}",
        lines.join("\n")
    );
    let (block, _) = fast.block_mut("v0", ClsactHook::Ingress).unwrap();
    Ok(block.fast_stats())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn the_fast_path_agrees_with_the_walk(
        ops in prop::collection::vec((prop::bool::weighted(0.6), any::<u64>()), 1..80)
    ) {
        run(&ops)?;
    }
}

#[test]
fn the_random_cases_take_every_path() {
    let mut total = tc::FastStats::default();
    let mut r = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        r
    };
    for _ in 0..50 {
        let ops: Vec<(bool, u64)> = (0..60).map(|_| (next() % 5 < 3, next())).collect();
        let s = run(&ops).unwrap();
        total.hits += s.hits;
        total.misses += s.misses;
        total.fallbacks += s.fallbacks;
    }
    assert!(
        total.hits > 100 && total.misses > 100 && total.fallbacks > 10,
        "{total:?}"
    );
}

#[test]
fn the_commands_mostly_take() {
    // The generators make rules tc accepts, most of the time.
    let (mut ok, mut n) = (0, 0);
    let mut c = Config::default();
    for seed in 0..2000u64 {
        if seed % 30 == 0 {
            c = Config::default();
            c.run_batch("qdisc add dev v0 clsact", ShowOptions::default())
                .unwrap();
        }
        let line = command(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        if line.contains(" del ") {
            continue;
        }
        let w = tc::words(&line);
        let w: Vec<&str> = w.iter().map(String::as_str).collect();
        n += 1;
        match c.run(&w, ShowOptions::default()) {
            Ok(_) => ok += 1,
            Err(e) if std::env::var("SHOW_ERRORS").is_ok() => eprintln!("{line}: {e}"),
            Err(_) => {}
        }
    }
    assert!(ok * 3 > n * 2, "{ok} of {n} taken");
}

/// 1000 rules, the packet matching the last: `batch` and the source.
fn worst_case(batch: &str, n: u32) -> (Config, Skb) {
    let mut c = Config::default();
    c.run_batch(batch, ShowOptions::default()).unwrap();
    let mut f = vec![0u8; 14 + 20 + 8];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[14 + 9] = 17;
    f[14 + 12..14 + 16].copy_from_slice(&[10, 0, (n >> 8) as u8, n as u8]);
    (c, Skb::from_frame(&f, 1))
}

fn check_fast(batch: String, n: u32) {
    let (mut c, mut skb) = worst_case(&batch, n);
    let out = c.classify("v0", ClsactHook::Ingress, &mut skb);
    assert_eq!(out.verdict, runtime::TcAction::Shot);
    let (block, _) = c.block_mut("v0", ClsactHook::Ingress).unwrap();
    let s = block.fast_stats();
    assert_eq!((s.hits, s.misses, s.fallbacks), (1, 0, 0), "{s:?}");
    assert!(s.probed <= 2, "{s:?}");
    // The reference walk agrees (and counts the rule's action again).
    let (block, actions) = c.block_mut("v0", ClsactHook::Ingress).unwrap();
    let out = block.classify_linear(&mut skb, 1, actions);
    assert_eq!(out.verdict, runtime::TcAction::Shot);
    assert_eq!(block.fast_stats().hits, 1);
}

fn ip(i: u32) -> String {
    format!("10.0.{}.{}", i >> 8, i & 0xff)
}

#[test]
fn a_thousand_rules_take_one_lookup() {
    let head = "qdisc add dev v0 clsact\n";
    let mut flower_filters = head.to_string();
    let mut flower_rules = head.to_string();
    let mut u32_filters = head.to_string();
    let mut u32_rules = head.to_string();
    for i in 1..=1000 {
        flower_filters += &format!(
            "filter add dev v0 ingress prio {i} protocol ip flower src_ip {} action drop\n",
            ip(i)
        );
        flower_rules += &format!(
            "filter add dev v0 ingress prio 1 handle {i} protocol ip flower src_ip {} action drop\n",
            ip(i)
        );
        u32_filters += &format!(
            "filter add dev v0 ingress prio {i} protocol ip u32 match ip src {}/32 action drop\n",
            ip(i)
        );
        u32_rules += &format!(
            "filter add dev v0 ingress prio 1 protocol ip u32 match ip src {}/32 action drop\n",
            ip(i)
        );
    }
    check_fast(flower_filters, 1000);
    check_fast(flower_rules, 1000);
    check_fast(u32_filters, 1000);
    check_fast(u32_rules, 1000);
}

#[test]
fn a_change_rebuilds_and_short_packets_take_the_walk() {
    let mut c = Config::default();
    c.run_batch(
        "qdisc add dev v0 clsact\n\
         filter add dev v0 ingress prio 1 protocol ip u32 match ip src 10.0.0.1/32 action drop",
        ShowOptions::default(),
    )
    .unwrap();
    let (_, mut skb) = worst_case("", 1);
    assert_eq!(
        c.classify("v0", ClsactHook::Ingress, &mut skb).verdict,
        runtime::TcAction::Shot
    );
    c.run_batch(
        "filter add dev v0 ingress prio 1 protocol ip u32 match ip src 10.0.0.1/32 match u32 0 0 at 60 classid 1:1",
        ShowOptions::default(),
    )
    .unwrap();
    // Still the first rule, but the second reads past this packet.
    assert_eq!(
        c.classify("v0", ClsactHook::Ingress, &mut skb).verdict,
        runtime::TcAction::Shot
    );
    let (block, _) = c.block_mut("v0", ClsactHook::Ingress).unwrap();
    let s = block.fast_stats();
    assert_eq!((s.hits, s.fallbacks, s.rebuilds), (1, 1, 2), "{s:?}");
}

#[test]
fn rules_over_more_words_than_a_compact_key_holds_agree_with_the_walk() {
    // MACs, both tags, IPv6 addresses, TOS/TTL, ports, ICMP: more words
    // of the flow key than a compact run key (8), so the full key is used.
    let rules = [
        "protocol 802.1q flower vlan_id 5 vlan_ethtype ip dst_mac 02:00:00:00:00:01 src_mac 00:00:00:00:00:00 ip_proto udp dst_port 80",
        "protocol ipv6 flower src_ip 2001:db8::1 dst_ip 2001:db8::2 ip_proto tcp src_port 1 dst_port 443",
        "protocol ip flower ip_tos 0x10 ip_ttl 64 src_ip 10.0.0.1 dst_ip 192.168.0.1 ip_proto icmp type 8 code 0",
        "protocol ip flower src_ip 10.0.0.0/30 dst_ip 192.168.0.0/24 ip_proto udp",
        "protocol all flower dst_mac 02:00:00:00:00:01",
    ];
    let show = ShowOptions::default();
    let (mut fast, mut slow) = (Config::default(), Config::default());
    slow.set_fast(false);
    for c in [&mut fast, &mut slow] {
        c.run_batch("qdisc add dev v0 clsact", show).unwrap();
        for (i, r) in rules.iter().enumerate() {
            let line = format!(
                "filter add dev v0 ingress prio {} {r} classid 1:{} action drop",
                i + 1,
                i + 1
            );
            c.run_batch(&line, show)
                .unwrap_or_else(|e| panic!("{line}: {e}"));
        }
    }
    let mut hits = 0;
    for seed in 0..20_000u64 {
        let skb = packet(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (mut a, mut b) = (skb.clone(), skb);
        let fa = fast.classify("v0", ClsactHook::Ingress, &mut a);
        let fb = slow.classify("v0", ClsactHook::Ingress, &mut b);
        assert_eq!(fa, fb, "packet {:x?}", b.data);
        hits += u32::from(fa.classid != 0);
    }
    let stats = ShowOptions {
        stats: true,
        json: false,
    };
    let cmd = ["filter", "show", "dev", "v0", "ingress"];
    assert_eq!(
        fast.run(&cmd, stats).unwrap(),
        slow.run(&cmd, stats).unwrap()
    );
    assert!(hits > 0, "no packet matched");
    let (block, _) = fast.block_mut("v0", ClsactHook::Ingress).unwrap();
    assert!(block.fast_stats().hits > 0);
}
