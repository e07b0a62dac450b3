//! police: the token bucket in packet time against buckets worked by
//! hand, the mtu, packet rates, counters, words and text.

use tc::{ActionRef, Actions, Control, Skb, parse_actions};

fn one(words: &str) -> (Actions, ActionRef) {
    let mut t = Actions::default();
    let w: Vec<&str> = words.split_whitespace().collect();
    let (refs, used) = parse_actions(&w, &mut t).unwrap_or_else(|e| panic!("{words}: {e}"));
    assert_eq!(used, w.len());
    (t, refs[0].clone())
}

/// Sends packets of `len` bytes at the times `ns` (nanoseconds).
fn send(t: &mut Actions, r: &ActionRef, len: u64, ns: impl Iterator<Item = u64>) -> Vec<Control> {
    ns.map(|at| {
        let mut skb = Skb::from_frame(&[0; 60], 1).at(at);
        t.exec(std::slice::from_ref(r), &mut skb, len, &mut Vec::new())
    })
    .collect()
}

#[test]
fn a_stream_at_twice_the_rate_gives_the_hand_worked_pattern() {
    // 1 Mbit/s is 125000 bytes/s: a 1000-byte packet costs 8 ms; the
    // 10 KiB burst holds 81.92 ms. Packets every 4 ms: each conforming one
    // leaves 4 ms less. Packet 0 leaves 73.92, packet k 73.92 - 4k: 0 to
    // 18 conform, 19 would leave -2.08 and exceeds (the bucket keeps its
    // last conforming time, 18's); 20 sees 8 ms more: 1.92 + 8 - 8 = 1.92,
    // conforms; 21 sees 4 ms: exceeds; and so on, every other one.
    let (mut t, r) = one("action police rate 1mbit burst 10k conform-exceed drop/pipe");
    let got = send(&mut t, &r, 1000, (0..40).map(|i| i * 4_000_000));
    let want: Vec<Control> = (0..40)
        .map(|i| {
            if i <= 18 || i % 2 == 0 {
                Control::PIPE
            } else {
                Control::SHOT
            }
        })
        .collect();
    assert_eq!(got, want);
    let s = t.get(&r).unwrap().stats;
    assert_eq!(
        (s.packets, s.bytes, s.overlimits, s.drops),
        (40, 40_000, 11, 11)
    );
    // After a quiet 81.92 ms the bucket is full again: 10 in a row conform
    // (81.92 / 8 = 10.24), the 11th at the same instant does not.
    let got = send(&mut t, &r, 1000, std::iter::repeat_n(1_000_000_000, 11));
    assert_eq!(got[..10], [Control::PIPE; 10]);
    assert_eq!(got[10], Control::SHOT);
}

#[test]
fn packets_over_the_mtu_exceed_and_the_default_exceed_is_reclassify() {
    // No mtu given: the kernel's 255 cells of 8 bytes, 2040.
    let (mut t, r) = one("action police rate 1mbit burst 100k");
    let got = send(&mut t, &r, 2041, 0..1);
    assert_eq!(got, [Control::Act(runtime::TcAction::Reclassify)]);
    assert_eq!(send(&mut t, &r, 2040, 0..1), [Control::OK]);
    let s = t.get(&r).unwrap().stats;
    assert_eq!((s.overlimits, s.drops), (1, 0));
    // mtu alone: a size limit, nothing else.
    let (mut t, r) = one("action police mtu 1500 drop");
    assert_eq!(send(&mut t, &r, 1500, 0..3), [Control::OK; 3]);
    assert_eq!(send(&mut t, &r, 1501, 0..1), [Control::SHOT]);
    assert_eq!(t.get(&r).unwrap().stats.drops, 1);
}

#[test]
fn a_packet_rate_bucket_counts_packets_and_peakrate_limits_bursts() {
    // 10 packets/s, 2 at once: 2 pass, the 3rd at the same time not; 100
    // ms later one more.
    let (mut t, r) = one("action police pkts_rate 10 pkts_burst 2 drop");
    let got = send(
        &mut t,
        &r,
        1500,
        [0, 0, 0, 100_000_000, 100_000_000].into_iter(),
    );
    use Control as C;
    assert_eq!(got, [C::OK, C::OK, C::SHOT, C::OK, C::SHOT]);
    // A peak rate of 2 Mbit/s with a 1500-byte mtu: the peak bucket holds
    // one 1500-byte packet (6 ms), so a second one at the same instant
    // exceeds although the 1 Mbit/s bucket (100 KiB) has room.
    let (mut t, r) = one("action police rate 1mbit burst 100k peakrate 2mbit mtu 1500 drop");
    let got = send(&mut t, &r, 1500, [0, 0, 6_000_000].into_iter());
    assert_eq!(got, [C::OK, C::SHOT, C::OK]);
}

#[test]
fn police_prints_as_iproute2_and_refuses_bad_words_by_name() {
    let mut c = tc::Config::default();
    let show = tc::ShowOptions::default();
    c.run_batch(
        "actions add action police rate 1mbit burst 10k drop index 3\n\
         actions add action police rate 8mbit burst 64k mtu 9000 conform-exceed continue/pipe overhead 4 linklayer atm",
        show,
    )
    .unwrap();
    let text = c.run(&["actions", "show", "police"], show).unwrap();
    assert_eq!(
        text,
        "total acts 2\n\
         \n\taction order 0:  police 0x1 rate 8Mbit burst 64Kb mtu 9000b action continue/pipe overhead 4b linklayer atm \n\tref 1 bind 0 \n\
         \n\taction order 1:  police 0x3 rate 1Mbit burst 10Kb mtu 2Kb action drop overhead 0b \n\tref 1 bind 0 \n"
    );
    let j = c
        .run(
            &["actions", "show", "police"],
            tc::ShowOptions { json: true, ..show },
        )
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let a = &v[0]["actions"][1];
    assert_eq!(
        (a["kind"].as_str(), a["index"].as_u64()),
        (Some("police"), Some(3))
    );
    assert_eq!(a["control_action"]["type"], "drop");
    c.run(&["actions", "del", "action", "police", "index", "3"], show)
        .unwrap();
    assert!(
        c.run(&["actions", "show", "police"], show)
            .unwrap()
            .starts_with("total acts 1")
    );
    for (w, why) in [
        ("action police rate 1mbit", "'burst' requires 'rate'"),
        ("action police burst 10k drop", "MUST be specified"),
        (
            "action police rate 1mbit burst 10k avrate 1mbit",
            "\"avrate\" needs a rate estimator",
        ),
        (
            "action police rate fast burst 10k",
            "argument \"fast\" is wrong: rate",
        ),
        (
            "action police rate 1mbit burst 10k/3",
            "argument \"10k/3\" is wrong: buffer",
        ),
        (
            "action police rate 1mbit burst 10k linklayer tokenring",
            "\"tokenring\" is wrong: linklayer",
        ),
        (
            "action police rate 1mbit burst 10k peakrate 2mbit",
            "'mtu' is required",
        ),
        (
            "action police rate 1mbit burst 10k rate 2mbit",
            "duplicate \"rate\"",
        ),
        (
            "action police rate 1mbit burst 10k conform-exceed drop/sideways",
            "bad control \"sideways\"",
        ),
        (
            "action police rate 1mbit burst 10k pkts_rate 5 pkts_burst 1",
            "not allowed in same action",
        ),
    ] {
        let e = parse_actions(
            &w.split_whitespace().collect::<Vec<_>>(),
            &mut Actions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains(why), "{w}: {e}");
    }
}
