//! The worked examples: the default table 800: with a few rules; a
//! two-level trie on the source /24 with 64K leaves, classified at
//! constant work; and bad rules refused by name with nothing half-applied.

use tc::{Block, Classifier, ETH_P_ALL, Filter, Skb, U32, new_classifier};

fn ipv4(src: [u8; 4], proto: u8, dport: u16) -> Skb {
    let mut f = vec![0u8; 14 + 20 + 8];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[14 + 9] = proto;
    f[14 + 12..14 + 16].copy_from_slice(&src);
    f[14 + 22..14 + 24].copy_from_slice(&dport.to_be_bytes());
    Skb::from_frame(&f, 1)
}

fn words(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

#[test]
fn the_default_table_with_a_few_rules() {
    let mut block = Block::default();
    let mut actions = tc::Actions::default();
    let mut u = new_classifier("u32").unwrap();
    for r in [
        "match ip src 10.0.0.1/32 flowid 1:1",
        "match ip protocol 17 0xff match ip dport 53 0xffff flowid 1:53",
        "match ip dst 0.0.0.0/0 action mirred egress mirror dev mon0",
    ] {
        u.add(None, &words(r), &mut actions).unwrap();
    }
    let shown = u.show(&actions, false);
    assert_eq!(shown[0], "fh 800: ht divisor 1 ");
    assert!(shown[1].starts_with("fh 800::800 order 2048 key ht 800 bkt 0 *flowid 1:1 "));
    assert!(shown[2].starts_with("fh 800::801 order 2049 "));
    assert!(shown[3].contains("terminal flowid"));
    block
        .add(
            0,
            Filter {
                prio: 1,
                protocol: ETH_P_ALL,
                classifier: u,
            },
        )
        .unwrap();
    let classid = |b: &mut Block, a: &mut tc::Actions, mut s: Skb| {
        let n = s.len() as u64;
        b.classify(&mut s, n, a).classid
    };
    assert_eq!(
        classid(&mut block, &mut actions, ipv4([10, 0, 0, 1], 17, 53)),
        0x1_0001
    );
    assert_eq!(
        classid(&mut block, &mut actions, ipv4([10, 0, 0, 2], 17, 53)),
        0x1_0053
    );
    let mut s = ipv4([10, 0, 0, 2], 6, 53);
    let n = s.len() as u64;
    let out = block.classify(&mut s, n, &mut actions);
    assert_eq!((out.classid, out.emitted.len()), (0, 1));
    assert_eq!(out.emitted[0].dev, "mon0");
}

#[test]
fn a_two_level_trie_of_64k_leaves_costs_the_same_for_every_address() {
    let mut u = U32::new();
    let mut actions = tc::Actions::default();
    let a = &mut actions;
    let mut add = |h: Option<&str>, r: &str| u.add(h, &words(r), a).unwrap();
    // 1: hashed on the third octet; under each bucket, a table hashed on
    // the fourth.
    add(Some("1:"), "divisor 256");
    add(
        None,
        "match ip src 10.0.0.0/16 hashkey mask 0x0000ff00 at 12 link 1:",
    );
    for c in 0..256u32 {
        let t = format!("{:x}:", 0x100 + c);
        add(Some(&t), "divisor 256");
        add(
            None,
            &format!(
                "ht 1:{c:x}: match ip src 10.0.{c}.0/24 hashkey mask 0x000000ff at 12 link {t}"
            ),
        );
        for d in 0..256u32 {
            add(
                None,
                &format!(
                    "ht {t}{d:x}: match ip src 10.0.{c}.{d}/32 flowid {:x}:{:x}",
                    c + 1,
                    d + 1
                ),
            );
        }
    }
    assert_eq!(u.knodes().count(), 1 + 256 + 65536);
    let mut cost = Vec::new();
    for (c, d) in [
        (0u8, 0u8),
        (0, 255),
        (17, 42),
        (128, 1),
        (255, 255),
        (200, 99),
    ] {
        let mut skb = ipv4([10, 0, c, d], 6, 80);
        u.visits = 0;
        let mut emitted = Vec::new();
        let mut cx = tc::Cx {
            actions: &mut actions,
            emitted: &mut emitted,
            bytes: 1,
        };
        let m = u.classify(&mut skb, &mut cx).expect("a leaf");
        assert_eq!(m.classid, (u32::from(c) + 1) << 16 | (u32::from(d) + 1));
        cost.push(u.visits);
    }
    // The root node, the node in 1:'s bucket, the leaf: three, always.
    assert_eq!(cost, [3; 6]);
    // Outside the trie: one node, no match.
    u.visits = 0;
    let mut emitted = Vec::new();
    let mut cx = tc::Cx {
        actions: &mut actions,
        emitted: &mut emitted,
        bytes: 1,
    };
    assert!(
        u.classify(&mut ipv4([11, 0, 0, 1], 6, 80), &mut cx)
            .is_none()
    );
    assert_eq!(u.visits, 1);
}

#[test]
fn bad_rules_are_refused_by_name_and_change_nothing() {
    let mut actions = tc::Actions::default();
    let mut u = new_classifier("u32").unwrap();
    u.add(Some("1:"), &words("divisor 4"), &mut actions)
        .unwrap();
    u.add(
        None,
        &words("match u32 0 0 action mirred egress mirror dev x"),
        &mut actions,
    )
    .unwrap();
    for (h, r, why) in [
        (
            None,
            "match u32 0 0 frobnicate action mirred egress mirror dev y",
            "\"frobnicate\"",
        ),
        (Some("1000:"), "divisor 2", "Illegal filter ID"),
        (Some("1:100:1"), "match u32 0 0", "Illegal filter ID"),
        (Some("1:1:1000"), "match u32 0 0", "Illegal filter ID"),
        (None, "match u32 0 0 ht 1000:", "Illegal \"ht\""),
        (
            None,
            "match u32 0 0 link 2: action mirred egress mirror dev y",
            "Link hash table not found",
        ),
        (Some("2:"), "divisor 3", "Illegal \"divisor\""),
        (Some("2:"), "divisor 512", "Illegal \"divisor\""),
        (
            None,
            "match u8 0x1ff 0xff at 0 action mirred egress mirror dev y",
            "Illegal \"match\"",
        ),
        (None, "match u16 0x10000 0xffff at 0", "wider than 16 bits"),
        (
            None,
            "ht 1:7: match u32 0 0 action mirred egress mirror dev y",
            "buckets exceed",
        ),
    ] {
        let before = (u.show(&actions, true), actions.clone());
        let e = u.add(h, &words(r), &mut actions).unwrap_err();
        assert!(e.to_string().contains(why), "{r}: {e}");
        assert_eq!((u.show(&actions, true), actions.clone()), before, "{r}");
    }
    assert!(
        new_classifier("basic")
            .unwrap_err()
            .to_string()
            .contains("\"basic\"")
    );
}
