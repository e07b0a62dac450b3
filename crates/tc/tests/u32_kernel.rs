//! sluice's u32 against the kernel's: a rule set using every u32 construct
//! is added with the real `tc` to a veth in a network namespace of this
//! test's own and parsed by sluice; what sluice shows for each rule must be
//! what `tc filter show` prints (less the per-filter header line, which is
//! the block's, not a rule's); then a few hundred varied frames are sent
//! into the veth and classified by sluice, and every mirred action must
//! have counted the same packets in both. Needs root (skips loudly
//! without, unless SLUICE_REQUIRE_KERNEL=1, then fails).

mod common;

use std::collections::BTreeMap;

use common::{frames, two_veths};
use tc::{Block, Classifier, ETH_P_ALL, Filter, Skb, U32};

/// (handle, the words after `u32`).
const RULES: &[(Option<&str>, &str)] = &[
    (Some("10:"), "divisor 1"),
    (Some("11:"), "divisor 1"),
    (Some("12:"), "divisor 16"),
    (Some("13:"), "divisor 1"),
    (None, "divisor 4"),
    // The root: by EtherType (read below the network header), and a
    // catch-all at a high order.
    (None, "match u16 0x0800 0xffff at -2 link 10:"),
    (None, "match u16 0x86dd 0xffff at -2 link 11:"),
    (
        None,
        "order 4000 match u32 0 0 classid 1:ff action mirred egress mirror dev vc",
    ),
    (
        None,
        "order 2 match u32 0 0 indev va action mirred egress mirror dev vc",
    ),
    // IPv4.
    (
        None,
        "ht 10: match ip src 10.0.0.1/32 match ip protocol 17 0xff flowid 1:1 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip dst 10.1.0.0/16 match ip tos 0x10 0xff classid 1:2 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip nofrag match ip df match ip ihl 6 0xf match ip protocol 6 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip firstfrag match ip dsfield 0x2e 0x3f action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip mf action mirred egress mirror dev vd",
    ),
    (
        None,
        "ht 10: match ip precedence 0x20 0xe0 match ip sport 1024 0xff00 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip dport 53 0xffff match ip icmp_type 0 0 action mirred egress mirror dev vc",
    ),
    (None, "ht 10: match ip src 192.168.0.0/16 flowid 1:3"),
    (
        None,
        "ht 10: match mark 0 0xff match ip protocol 47 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match u32 0x45000000 0xff000000 at 0 match u16 0x0040 0x00ff at 8 match u8 1 0xff at 8 indev vb action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: match ip protocol 6 0xff offset at 0 mask 0f00 shift 6 eat hashkey mask 0x0000ffff at 20 link 12:",
    ),
    (
        None,
        "ht 10: match ip protocol 17 0xff offset plus 20 hashkey mask 0x00000003 at 12 link 801:",
    ),
    (
        None,
        "ht 10: match ip protocol 1 0xff offset at 0 mask 0f00 shift 6 eat link 13:",
    ),
    (
        None,
        "ht 10: match ip src 10.0.0.0/8 skip_hw action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 10: order 1 match u32 0 0 skip_sw action mirred egress mirror dev vc",
    ),
    // TCP, hashed on the destination port.
    (
        None,
        "ht 12: sample tcp dst 80 0xffff divisor 16 match tcp dst 80 0xffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 12: sample tcp dst 443 0xffff divisor 16 match tcp dst 443 0xffff match tcp src 1024 0xfc00 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 12:5: match tcp dst 21 0xffff action mirred egress mirror dev vc",
    ),
    (
        Some("12::20"),
        "ht 12:6: match tcp dst 22 0xffff action mirred egress mirror dev vc",
    ),
    // UDP at a fixed offset, hashed on the source's low bits.
    (
        None,
        "ht 801: match udp dst 53 0xffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 801:1: match udp src 5353 0xffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 801:2: match u8 0 0 at nexthdr+0 action mirred egress mirror dev vc action mirred egress mirror dev vd",
    ),
    // ICMP after eating the IP header.
    (
        None,
        "ht 13: match icmp type 8 0xff match icmp code 0 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 13: match icmp type 3 0xff action mirred egress mirror dev vc",
    ),
    // IPv6.
    (
        None,
        "ht 11: order 5 match ip6 protocol 58 0xff indev va action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 src 2001:db8::1/128 action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 dst 2001:db8:1::/48 match ip6 protocol 17 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 priority 0x10 0xff match ip6 flowlabel 0x12345 0xfffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 sport 22 0xffff match ip6 protocol 6 0xff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 dport 80 0xffff action mirred egress mirror dev vc",
    ),
    (
        None,
        "ht 11: match ip6 icmp_type 128 0xff match ip6 icmp_code 0 0xff match ip6 protocol 58 0xff action mirred egress mirror dev vc",
    ),
];

/// Rules both must refuse, changing nothing.
const BAD: &[(Option<&str>, &str)] = &[
    (None, "match u32 0 0 bogus"),
    (None, "match u8 0x1ff 0xff at 0"),
    (None, "match u32 0 0 link 7:"),
    (None, "match u32 0 0 link 800:"),
    (None, "ht 7: match u32 0 0"),
    (None, "ht 12:10: match u32 0 0"),
    (None, "flowid 1:1"),
    (Some("5:"), "divisor 3"),
    (Some("1000:"), "divisor 2"),
    (Some("12::20"), "ht 12:6: match u32 0 0"),
    (None, "match u32 0 0 indev nosuch"),
];

/// The kernel's rule entries: each `filter ...` line's text after the
/// filter header, with its following lines, as tc printed them before the
/// newline that ends each filter; the header-only entry (the filter
/// itself, not a rule) left out.
fn kernel_entries(show: &str) -> Vec<String> {
    let header = "filter protocol all pref 5 u32 chain 0 ";
    let show = show.strip_suffix('\n').unwrap_or(show);
    let mut out: Vec<String> = Vec::new();
    for line in show.split('\n') {
        if line.starts_with("filter ") {
            let text = line
                .strip_prefix(header)
                .unwrap_or_else(|| panic!("unexpected: {line}"));
            out.push(text.to_string());
        } else if let Some(e) = out.last_mut() {
            e.push('\n');
            e.push_str(line);
        }
    }
    out.retain(|e| !e.is_empty());
    out
}

#[test]
fn u32_agrees_with_the_kernel() {
    if !testkit::root_available("u32 against the kernel") {
        return;
    }
    let ns = two_veths("u32");
    ns.must(&["tc", "qdisc", "add", "dev", "vb", "clsact"]);
    let tc_add = |handle: Option<&str>, words: &str| -> Result<String, testkit::CommandFailed> {
        let mut a = vec![
            "tc", "filter", "add", "dev", "vb", "ingress", "prio", "5", "protocol", "all",
        ];
        if let Some(h) = handle {
            a.extend(["handle", h]);
        }
        a.push("u32");
        a.extend(words.split_whitespace());
        ns.run(&a)
    };
    for (h, w) in RULES {
        tc_add(*h, w).unwrap_or_else(|e| panic!("tc refused {w}: {e}"));
    }
    let show = ns.must(&["tc", "filter", "show", "dev", "vb", "ingress"]);
    // This kernel may lack CONFIG_CLS_U32_MARK: then it neither matches
    // nor shows `mark`, and sluice is told so.
    let mut u = if show.contains("\n  mark 0x") {
        U32::new()
    } else {
        U32::new().without_mark()
    };
    for d in ["va", "vb", "vc", "vd"] {
        u.set_device(d, ns.ifindex(d));
    }
    let mut block = Block::default();
    let mut actions = tc::Actions::default();
    for (h, w) in RULES {
        let words: Vec<&str> = w.split_whitespace().collect();
        u.add(*h, &words, &mut actions)
            .unwrap_or_else(|e| panic!("sluice refused {w}: {e}"));
    }
    // Refusals: both refuse, and sluice changes nothing.
    for (h, w) in BAD {
        assert!(tc_add(*h, w).is_err(), "the kernel took {w}");
        let words: Vec<&str> = w.split_whitespace().collect();
        let before = (u.show(&actions, false), actions.clone());
        assert!(u.add(*h, &words, &mut actions).is_err(), "sluice took {w}");
        assert_eq!((u.show(&actions, false), actions.clone()), before, "{w}");
    }
    assert_eq!(
        ns.must(&["tc", "filter", "show", "dev", "vb", "ingress"]),
        show
    );
    // The rules as both show them.
    let want = kernel_entries(&show);
    let got = u.show(&actions, false);
    for (k, s) in want.iter().zip(&got) {
        assert_eq!(s, k, "\nsluice: {s:?}\nkernel: {k:?}");
    }
    assert_eq!(got.len(), want.len());
    // The same frames through both.
    let filter = Filter {
        prio: 5,
        protocol: ETH_P_ALL,
        classifier: Box::new(u),
    };
    block.add(0, filter).unwrap();
    let frames = frames();
    let vb = ns.ifindex("vb");
    for f in &frames {
        let mut skb = Skb::from_frame(f, vb);
        let n = skb.len() as u64;
        block.classify(&mut skb, n, &mut actions);
    }
    ns.send_frames("va", &frames);
    // `tc -s -j` is no JSON once a rule has an offset (6.1 prints a bare
    // string there), so the counters are read from the text.
    let stats = ns.must(&["tc", "-s", "filter", "show", "dev", "vb", "ingress"]);
    let mut kernel = BTreeMap::new();
    let mut index = None;
    for line in stats.lines() {
        if let Some(rest) = line.strip_prefix("\tindex ") {
            index = rest.split(' ').next().and_then(|i| i.parse::<u32>().ok());
        } else if let Some(rest) = line.strip_prefix("\tSent ") {
            let w: Vec<&str> = rest.split(' ').collect();
            let packets: u64 = w[2].parse().unwrap();
            kernel.insert(index.take().expect("an index before its counters"), packets);
        }
    }
    let sluice: BTreeMap<u32, u64> = actions.iter().map(|a| (a.index, a.stats.packets)).collect();
    eprintln!("per action packets: {sluice:?}");
    assert_eq!(sluice, kernel);
    let declared: usize = RULES
        .iter()
        .map(|(_, w)| w.matches("action ").count())
        .sum();
    assert_eq!(sluice.len(), declared);
    let busy = sluice.values().filter(|&&p| p > 0).count();
    assert!(busy >= 15, "only {busy} actions saw packets");
}
