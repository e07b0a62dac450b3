//! The compiled programs in the kernel (BPF_PROG_TEST_RUN, through
//! difftest's Differ): every frame of every capture runs in sluice's VM
//! and in the kernel, which must agree (return value, packet, maps after
//! each), while the VM's verdict is checked against the user-space chain;
//! at the end the kernel's counters are the user-space chain's. Needs
//! root: skipped loudly without it, a failure with SLUICE_REQUIRE_KERNEL=1.

mod common;

use common::*;
use difftest::{Comparison, Differ};
use runtime::{PacketMeta, Verdict as V};

fn run(program: &str) {
    if !testkit::kernel_available("tc compile in the kernel") {
        return;
    }
    let compiled = compiled();
    let ncpus = kernel::possible_cpus() as u32;
    let hook = vm_hook(&compiled.object, program, ncpus);
    let mut d = Differ::new(hook, &compiled.object, "tccompile", 10)
        .unwrap_or_else(|e| panic!("loading {program} into the kernel: {e}"));
    let mut user = config();
    // The user-space chain over the frames the kernel ran.
    let mut user_kernel = config();
    let mut vm = vm_hook(&compiled.object, program, 1);
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    let (mut same, mut not_comparable, mut wrong) = (0, Vec::new(), Vec::new());
    for (i, f) in frames().iter().enumerate() {
        if f.len() > 65535 {
            continue;
        }
        let want = user_space(&mut user, f);
        let got = vm_verdict(&vm.run(f, &meta).unwrap());
        let expect = if program == "tc_classify" {
            (V::Tc(want.tc), want.redirect)
        } else {
            (V::Xdp(xdp_of(&want)), got.1)
        };
        if got != expect {
            wrong.push(format!("frame {i}: VM {got:?}, user space {want:?}"));
        }
        match d.packet(i as u64, 1000 * i as u64, f) {
            Comparison::Same => {
                same += 1;
                user_space(&mut user_kernel, f);
            }
            Comparison::NotComparable(n) => not_comparable.push(n.reason),
            Comparison::Diverged(dv) => {
                wrong.push(format!("frame {i}: kernel and VM differ: {dv:?}"))
            }
        }
    }
    d.finish();
    let mut reasons = std::collections::BTreeMap::new();
    for r in &not_comparable {
        *reasons.entry(r.clone()).or_insert(0) += 1;
    }
    eprintln!(
        "{program}: {same} frames the same in the kernel, {} not comparable: {reasons:?}",
        not_comparable.len()
    );
    assert!(
        wrong.is_empty(),
        "{} differences, the first:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(10)].join("\n")
    );
    // The kernel's counters are the user-space chain's over the frames
    // it ran (`tc -s filter show` of a configuration given them), and
    // the VM's over all frames the user-space chain's over all.
    let k =
        tccompile::CompiledCounters::from_kernel(&compiled.manifest, d.kernel_object()).unwrap();
    let mut c = config();
    k.apply(&compiled.manifest, &mut c).unwrap();
    assert_eq!(
        show_stats(&mut c),
        show_stats(&mut user_kernel),
        "kernel counters"
    );
    assert_eq!(k.actions, user_counters(&user_kernel, &compiled.manifest));
    let v = tccompile::CompiledCounters::from_vm(&compiled.manifest, vm.maps()).unwrap();
    assert_eq!(v.actions, user_counters(&user, &compiled.manifest));
}

#[test]
fn the_tc_program_agrees_in_the_kernel() {
    run("tc_classify");
}

#[test]
fn the_xdp_program_agrees_in_the_kernel() {
    run("xdp_classify");
}

#[test]
fn a_mirror_in_the_tc_program_agrees_in_the_kernel() {
    if !testkit::kernel_available("tc compile (mirror) in the kernel") {
        return;
    }
    let mut c = tc::Config::default();
    c.run_batch(
        "qdisc add dev v0 clsact\nqdisc add dev v1 clsact\n\
         filter add dev v0 ingress prio 1 protocol ip flower ip_proto udp action mirred egress mirror dev v1 action pass",
        tc::ShowOptions::default(),
    )
    .unwrap();
    // No device has this index: the kernel's clone fails harmlessly.
    c.devices.set("v1", OUT_IFINDEX);
    let opts = tccompile::CompileOptions {
        xdp: false,
        ..tccompile::CompileOptions::default()
    };
    let compiled = tccompile::compile(&c, "v0", tc::ClsactHook::Ingress, &opts).unwrap();
    let hook = vm_hook(
        &compiled.object,
        "tc_classify",
        kernel::possible_cpus() as u32,
    );
    let mut d = Differ::new(hook, &compiled.object, "tccompile_mirror", 5).unwrap();
    let mut same = 0;
    for (i, f) in frames()
        .iter()
        .enumerate()
        .filter(|(_, f)| (14..=3712).contains(&f.len()))
    {
        match d.packet(i as u64, 1000 * i as u64, f) {
            Comparison::Same => same += 1,
            Comparison::NotComparable(_) => {}
            Comparison::Diverged(dv) => panic!("frame {i}: {dv:?}"),
        }
    }
    d.finish();
    assert!(same > 3000, "{same}");
}
