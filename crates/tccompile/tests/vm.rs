//! The compiled programs in sluice's VM against the user-space chain:
//! every frame of every capture, the same verdict (tc and XDP), and at
//! the end the same counters (`tc -s filter show` of the user-space
//! configuration and of a fresh one given the programs' counters).

mod common;

use common::*;
use runtime::{PacketMeta, Verdict as V};

#[test]
fn every_capture_frame_gets_the_user_space_verdict_and_counters_in_the_vm() {
    let compiled = compiled();
    let mut user = config();
    let mut tc = vm_hook(&compiled.object, "tc_classify", 1);
    let mut xdp = vm_hook(&compiled.object, "xdp_classify", 1);
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    let frames = frames();
    let mut wrong = Vec::new();
    let mut seen = std::collections::BTreeMap::new();
    let mut too_long = 0;
    for (i, f) in frames.iter().enumerate() {
        // No hook sees a packet over 64 KiB (the VM refuses it).
        if f.len() > 65535 {
            too_long += 1;
            continue;
        }
        let want = user_space(&mut user, f);
        *seen.entry(format!("{:?}", want.tc)).or_insert(0u64) += 1;
        let got = vm_verdict(&tc.run(f, &meta).unwrap());
        if got != (V::Tc(want.tc), want.redirect) {
            wrong.push(format!("frame {i} tc: {got:?}, user space {want:?}"));
        }
        let got = vm_verdict(&xdp.run(f, &meta).unwrap()).0;
        if got != V::Xdp(xdp_of(&want)) {
            wrong.push(format!("frame {i} xdp: {got:?}, user space {want:?}"));
        }
    }
    eprintln!(
        "{} frames ({too_long} over 64 KiB not run), user-space verdicts {seen:?}",
        frames.len()
    );
    assert!(
        wrong.is_empty(),
        "{} differences, the first:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(20)].join("\n")
    );
    let want = show_stats(&mut user);
    for hook in [&tc, &xdp] {
        let counters = tccompile::Counters::from_vm(&compiled.manifest, hook.maps()).unwrap();
        let mut c = config();
        counters.apply(&compiled.manifest, &mut c).unwrap();
        let got = show_stats(&mut c);
        assert_eq!(got, want, "tc -s filter show");
        assert_eq!(
            counters.actions,
            user_counters(&user, &compiled.manifest),
            "action counters"
        );
    }
}

#[test]
fn at_egress_the_whole_frame_is_counted_as_tc_does() {
    let mut user = egress_config();
    let compiled =
        tccompile::compile(&user, DEV, tc::Hook::Egress, &tccompile::Options::default()).unwrap();
    let mut tc = vm_hook(&compiled.object, "tc_classify", 1);
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    for (i, f) in frames()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.len() <= 65535)
    {
        let want = user_space_at(&mut user, tc::Hook::Egress, f);
        let got = vm_verdict(&tc.run(f, &meta).unwrap());
        assert_eq!(got, (V::Tc(want.tc), want.redirect), "frame {i}");
    }
    let counters = tccompile::Counters::from_vm(&compiled.manifest, tc.maps()).unwrap();
    let mut c = egress_config();
    counters.apply(&compiled.manifest, &mut c).unwrap();
    assert_eq!(
        show_stats_at(&mut c, tc::Hook::Egress),
        show_stats_at(&mut user, tc::Hook::Egress)
    );
}

#[test]
fn u32_links_that_loop_stop_at_the_depth_limit_as_in_user_space() {
    let mut c = tc::Config::default();
    c.run_batch(
        "qdisc add dev v0 clsact\n\
         filter add dev v0 ingress prio 1 handle 3: protocol ip u32 divisor 1\n\
         filter add dev v0 ingress prio 1 protocol ip u32 ht 3: match ip protocol 17 0xff link 3:\n\
         filter add dev v0 ingress prio 1 protocol ip u32 ht 3: match ip protocol 6 0xff flowid 1:6 action drop\n\
         filter add dev v0 ingress prio 1 protocol ip u32 match u32 0 0 link 3: flowid 1:1 action pass",
        tc::ShowOptions::default(),
    )
    .unwrap();
    let compiled = tccompile::compile(&c, DEV, tc::Hook::Ingress, &tccompile::Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut tc = vm_hook(&compiled.object, "tc_classify", 1);
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    let mut seen = std::collections::BTreeSet::new();
    for (i, f) in frames()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.len() <= 65535)
    {
        let want = user_space(&mut c, f);
        seen.insert(format!("{:?}", want.tc));
        let got = vm_verdict(&tc.run(f, &meta).unwrap());
        assert_eq!(got, (V::Tc(want.tc), want.redirect), "frame {i}");
    }
    // UDP loops to the limit (unmatched), TCP drops, the rest passes.
    assert_eq!(seen.len(), 3, "{seen:?}");
}
