//! The u32 filter as a whole: what tc shows for each rule (strings from
//! `tc filter show` on iproute2 6.1 and kernel 6.18), handle and order
//! allocation, the kernel's checks, and deleting.

use super::*;

/// A rule added, or the message of its error.
fn add(u: &mut U32, a: &mut Actions, handle: Option<&str>, words: &str) -> Result<(), String> {
    let w: Vec<&str> = words.split_whitespace().collect();
    u.add(handle, &w, a).map_err(|e| e.to_string())
}

#[test]
fn show_prints_what_tc_prints() {
    let (mut u, mut a) = (U32::new(), Actions::default());
    u.set_device("va", 2);
    add(&mut u, &mut a, None, "match ip src 10.0.0.1/32 flowid 1:1").unwrap();
    add(&mut u, &mut a, None, "match ip dst 10.1.0.0/16 match ip tos 0x10 0xff match ip protocol 6 0xff match ip ihl 5 0xf match ip sport 80 0xffff match ip dport 443 0xffff classid 1:2 action mirred egress mirror dev va").unwrap();
    add(
        &mut u,
        &mut a,
        None,
        "match ip firstfrag match ip mf match ip dsfield 0x2e 0x3f order 7 flowid 1:4",
    )
    .unwrap();
    add(&mut u, &mut a, Some("1:"), "divisor 16").unwrap();
    add(&mut u, &mut a, None, "ht 800:: match ip protocol 6 0xff offset at 0 mask 0f00 shift 6 eat hashkey mask 0x000000ff at 4 link 1:").unwrap();
    add(&mut u, &mut a, None, "ht 1: sample ip src 10.0.0.5/32 hashkey mask 0xff at 12 match ip src 10.0.0.5/32 flowid 1:7 indev va action mirred egress mirror dev va").unwrap();
    add(
        &mut u,
        &mut a,
        None,
        "ht 1:3: match u32 0 0 skip_hw classid 1:8",
    )
    .unwrap();
    add(&mut u, &mut a, None, "divisor 4").unwrap();
    add(
        &mut u,
        &mut a,
        None,
        "match u8 0x11 0xff at nexthdr+8 action mirred egress mirror dev va",
    )
    .unwrap();
    let want = [
        "fh 801: ht divisor 4 ",
        "fh 1: ht divisor 16 ",
        "fh 1:3:800 order 2048 key ht 1 bkt 3 *flowid 1:8 skip_hw not_in_hw \n  match 00000000/00000000 at 0",
        "fh 1:5:800 order 2048 key ht 1 bkt 5 *flowid 1:7 not_in_hw \n  match 0a000005/ffffffff at 12\n    hash mask 000000ff at 12 \n  input dev va\n\n\taction order 1: mirred (Egress Mirror to device va) pipe\n\tindex 2 ref 1 bind 1\n",
        "fh 800: ht divisor 1 ",
        "fh 800::7 order 7 key ht 800 bkt 0 *flowid 1:4 not_in_hw \n  match 00002000/00003fff at 4\n  match 002e0000/003f0000 at 0",
        "fh 800::800 order 2048 key ht 800 bkt 0 *flowid 1:1 not_in_hw \n  match 0a000001/ffffffff at 12",
        "fh 800::801 order 2049 key ht 800 bkt 0 *flowid 1:2 not_in_hw \n  match 0a010000/ffff0000 at 16\n  match 05100000/0fff0000 at 0\n  match 00060000/00ff0000 at 8\n  match 005001bb/ffffffff at 20\n\taction order 1: mirred (Egress Mirror to device va) pipe\n\tindex 1 ref 1 bind 1\n",
        "fh 800::802 order 2050 key ht 800 bkt 0 link 1: not_in_hw \n  match 00060000/00ff0000 at 8\n    offset 0f00>>6 at 0  eat \n    hash mask 000000ff at 4 ",
        "fh 800::803 order 2051 key ht 800 bkt 0 terminal flowid not_in_hw \n  match 11000000/ff000000 at nexthdr+8\n\taction order 1: mirred (Egress Mirror to device va) pipe\n\tindex 3 ref 1 bind 1\n",
    ];
    assert_eq!(u.show(&a, false), want);
    let j = u.json(&a, true);
    assert_eq!(j[3]["fh"], "1:5:800");
    assert_eq!(j[3]["actions"][0]["stats"]["packets"], 0);
    assert_eq!(j[7]["match"][3]["value"], "5001bb");
    assert!(u.show(&a, true)[3].contains("\tAction statistics:\n\tSent 0 bytes 0 pkt"));
}

#[test]
fn handles_and_orders_are_allocated_as_the_kernel_does() {
    let (mut u, mut a) = (U32::new(), Actions::default());
    add(&mut u, &mut a, None, "order 5 match u32 0 0 flowid 1:1").unwrap();
    add(&mut u, &mut a, None, "match u32 0 0 flowid 1:1").unwrap();
    add(&mut u, &mut a, Some("800::20"), "match u32 0 0 flowid 1:1").unwrap();
    add(&mut u, &mut a, Some("::801"), "match u32 0 0 flowid 1:1").unwrap();
    add(&mut u, &mut a, None, "match u32 0 0 flowid 1:1").unwrap();
    let h: Vec<u32> = u.knodes().map(|n| n.handle & 0xfff).collect();
    assert_eq!(h, [5, 0x20, 0x800, 0x801, 0x802]);
    // Table ids: 801: on, cyclic; an explicit one beside them.
    add(&mut u, &mut a, None, "divisor 2").unwrap();
    add(&mut u, &mut a, Some("5:"), "divisor 2").unwrap();
    add(&mut u, &mut a, None, "divisor 2").unwrap();
    assert_eq!(
        u.order,
        [0x8020_0000, 0x0050_0000, 0x8010_0000, 0x8000_0000]
    );
    u.delete("801:", &mut a).unwrap();
    add(&mut u, &mut a, None, "divisor 2").unwrap();
    assert_eq!(u.order[0], 0x8030_0000, "cyclic: 803: before 801: again");
    // The kernel's refusals.
    for (h, w, why) in [
        (Some("800::20"), "match u32 0 0", "already exists"),
        (None, "order 5 match u32 0 0", "No space left"),
        (None, "flowid 1:1", "Selector not specified"),
        (None, "match u32 0 0 link 7:", "Link hash table not found"),
        (None, "match u32 0 0 link 800:", "Not linking to root"),
        (
            None,
            "ht 7: match u32 0 0",
            "Specified hash table not found",
        ),
        (None, "ht 5:2: match u32 0 0", "buckets exceed"),
        (Some("5:"), "match u32 0 0", "already exists"),
        (Some("6:"), "match u32 0 0", "address mismatch"),
        (Some("6:0:1"), "divisor 2", "only be used on a hash table"),
        (
            None,
            "match u32 0 0 indev nosuch",
            "Network device not found",
        ),
    ] {
        let e = add(&mut u, &mut a, h, w).unwrap_err();
        assert!(e.contains(why), "{w}: {e}");
    }
}

#[test]
fn skip_sw_rules_are_taken_and_never_match() {
    // The kernel takes them with nothing to offload to, and shows
    // `skip_sw not_in_hw`.
    let (mut u, mut a) = (U32::new(), Actions::default());
    add(&mut u, &mut a, None, "match u32 0 0 skip_sw flowid 1:1").unwrap();
    add(&mut u, &mut a, None, "match u32 0 0 flowid 1:2").unwrap();
    assert!(u.show(&a, false)[1].contains("*flowid 1:1 skip_sw not_in_hw "));
    let mut skb = Skb::from_frame(&[0u8; 60], 1);
    let mut e = Vec::new();
    let mut cx = Cx {
        actions: &mut a,
        emitted: &mut e,
        bytes: 1,
    };
    assert_eq!(
        u.classify(&mut skb, &mut cx).map(|m| m.classid),
        Some(0x1_0002)
    );
}

#[test]
fn deleting_rules_and_tables() {
    let (mut u, mut a) = (U32::new(), Actions::default());
    add(&mut u, &mut a, Some("1:"), "divisor 4").unwrap();
    add(
        &mut u,
        &mut a,
        None,
        "ht 1:2: match u32 0 0 action mirred egress mirror dev x",
    )
    .unwrap();
    add(&mut u, &mut a, None, "match u32 0 0 link 1:").unwrap();
    assert!(
        u.delete("1:", &mut a)
            .unwrap_err()
            .to_string()
            .contains("in-use")
    );
    assert!(
        u.delete("800:", &mut a)
            .unwrap_err()
            .to_string()
            .contains("root")
    );
    assert_eq!(u.delete("800::800", &mut a), Ok(false));
    assert_eq!(a.iter().count(), 1);
    assert_eq!(u.delete("1:", &mut a), Ok(true));
    assert_eq!(
        a.iter().count(),
        0,
        "the table's rules released their actions"
    );
    assert!(
        u.delete("1:", &mut a)
            .unwrap_err()
            .to_string()
            .contains("not found")
    );
}

#[test]
fn mark_is_matched_unless_the_kernel_lacks_it() {
    let mut skb = Skb::from_frame(&[0u8; 60], 1);
    for (u, want) in [
        (U32::new(), None),
        (U32::new().without_mark(), Some(0x1_0001)),
    ] {
        let (mut u, mut a) = (u, Actions::default());
        add(
            &mut u,
            &mut a,
            None,
            "match mark 0x10 0xf0 match u32 0 0 flowid 1:1",
        )
        .unwrap();
        let mut e = Vec::new();
        let mut cx = Cx {
            actions: &mut a,
            emitted: &mut e,
            bytes: 1,
        };
        assert_eq!(u.classify(&mut skb, &mut cx).map(|m| m.classid), want);
        assert_eq!(
            u.show(&a, false)[1].contains("mark 0x0010 0x00f0 (success 0)"),
            want.is_none()
        );
    }
}

/// Checked on this kernel: clsact's two hooks share one `tc_u_common`;
/// each new priority's root takes the next table id, cyclically, until no
/// u32 filter is left.
#[test]
fn the_u32_filters_of_a_qdisc_share_table_ids() {
    use crate::{Config, ShowOptions};
    let mut c = Config::default();
    let roots = |c: &mut Config, hook: &str| -> Vec<String> {
        let text = c
            .run(
                &["filter", "show", "dev", "x", hook],
                ShowOptions::default(),
            )
            .unwrap();
        text.lines()
            .filter(|l| l.ends_with("ht divisor 1 "))
            .map(|l| l.split_whitespace().nth(9).unwrap().to_string())
            .collect()
    };
    c.run_batch(
        "qdisc add dev x clsact\n\
         filter add dev x ingress prio 1 u32 match u32 0 0\n\
         filter add dev x egress prio 1 u32 match u32 0 0\n\
         filter add dev x ingress prio 2 u32 match u32 0 0\n\
         filter add dev x ingress prio 3 handle 5: u32 divisor 4",
        ShowOptions::default(),
    )
    .unwrap();
    assert_eq!(roots(&mut c, "ingress"), ["800:", "802:", "803:"]);
    assert_eq!(roots(&mut c, "egress"), ["801:"]);
    c.run_batch(
        "filter del dev x ingress prio 2\n\
         filter add dev x ingress prio 4 u32 match u32 0 0",
        ShowOptions::default(),
    )
    .unwrap();
    assert_eq!(roots(&mut c, "ingress"), ["800:", "803:", "804:"]);
    c.run_batch(
        "filter del dev x ingress\nfilter del dev x egress\n\
         filter add dev x egress prio 9 u32 match u32 0 0",
        ShowOptions::default(),
    )
    .unwrap();
    assert_eq!(roots(&mut c, "egress"), ["800:"], "alone again: 800:");
}
