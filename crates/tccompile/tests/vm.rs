//! The compiled programs in sluice's VM against the user-space chain:
//! every frame of every capture, the same verdict (tc and XDP) and class, and at
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
        let out = tc.run(f, &meta).unwrap();
        let classid = out.skb.as_ref().map_or(0, |s| s.tc_classid);
        let got = vm_verdict(&out);
        // cls_bpf keeps the minor of what the program writes (the
        // filter's `classid` gives the major).
        if got != (V::Tc(want.tc), want.redirect) || classid != want.classid & 0xffff {
            wrong.push(format!(
                "frame {i} tc: {got:?} class {classid:#x}, user space {want:?}"
            ));
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
        let counters =
            tccompile::CompiledCounters::from_vm(&compiled.manifest, hook.maps()).unwrap();
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
    let compiled = tccompile::compile(
        &user,
        DEV,
        tc::ClsactHook::Egress,
        &tccompile::CompileOptions::default(),
    )
    .unwrap();
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
        let want = user_space_at(&mut user, tc::ClsactHook::Egress, f);
        let got = vm_verdict(&tc.run(f, &meta).unwrap());
        assert_eq!(got, (V::Tc(want.tc), want.redirect), "frame {i}");
    }
    let counters = tccompile::CompiledCounters::from_vm(&compiled.manifest, tc.maps()).unwrap();
    let mut c = egress_config();
    counters.apply(&compiled.manifest, &mut c).unwrap();
    assert_eq!(
        show_stats_at(&mut c, tc::ClsactHook::Egress),
        show_stats_at(&mut user, tc::ClsactHook::Egress)
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
    let compiled = tccompile::compile(
        &c,
        DEV,
        tc::ClsactHook::Ingress,
        &tccompile::CompileOptions::default(),
    )
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

#[test]
fn a_mask_of_hundreds_of_rules_compiled_in_parts_decides_as_in_user_space() {
    // 600 rules under one mask: three functions of the compiled program
    // (256 rules each at most). A skip_sw rule, a `continue` and a drop in
    // later parts, a matchall after them for what goes on.
    let mut lines = String::from("qdisc add dev v0 clsact\n");
    for i in 1..=600u32 {
        let extra = match i {
            5 | 300 => " skip_sw",
            _ => "",
        };
        let action = match i {
            260 | 590 => "action continue",
            270 => "action drop",
            _ => "action pass",
        };
        lines += &format!(
            "filter add dev v0 ingress prio 1 protocol ip flower{extra} dst_ip 10.0.{}.{} ip_proto udp dst_port {} classid 1:{i:x} {action}\n",
            i >> 8,
            i & 0xff,
            1000 + i
        );
    }
    lines += "filter add dev v0 ingress prio 2 protocol all matchall classid 1:ffff action drop\n";
    let mut user = tc::Config::default();
    user.run_batch(&lines, tc::ShowOptions::default()).unwrap();
    let compiled = tccompile::compile(
        &user,
        DEV,
        tc::ClsactHook::Ingress,
        &tccompile::CompileOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(compiled.c.contains("_mask0_part2("), "three parts");
    let mut tc = vm_hook(&compiled.object, "tc_classify", 1);
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    let mut verdicts = std::collections::BTreeMap::new();
    // Every rule's frame, and one matching none.
    for i in 1..=601u32 {
        let dst = [10, 0, (i >> 8) as u8, i as u8];
        let f = tc::bench::udp_frame([192, 0, 2, 1], dst, 7, (1000 + i) as u16);
        let want = user_space(&mut user, &f);
        let out = tc.run(&f, &meta).unwrap();
        let classid = out.skb.as_ref().map_or(0, |s| s.tc_classid);
        let got = vm_verdict(&out);
        assert_eq!(
            (got, classid),
            ((V::Tc(want.tc), want.redirect), want.classid & 0xffff),
            "rule {i}"
        );
        *verdicts.entry(format!("{:?}", want.tc)).or_insert(0) += 1;
    }
    // Drops: rule 270, and the matchall after 5, 260, 300, 590 and 601.
    assert_eq!(verdicts.get("Shot"), Some(&6), "{verdicts:?}");
    let counters = tccompile::CompiledCounters::from_vm(&compiled.manifest, tc.maps()).unwrap();
    let mut c = tc::Config::default();
    c.run_batch(&lines, tc::ShowOptions::default()).unwrap();
    counters.apply(&compiled.manifest, &mut c).unwrap();
    assert_eq!(
        show_stats(&mut c),
        show_stats(&mut user),
        "tc -s filter show"
    );
}
