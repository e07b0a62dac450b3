//! A u32 configuration with mirred actions, in the kernel (real `tc`, live
//! veth traffic in a namespace of the test's own) and in sluice, over every
//! Ethernet frame of tcpdump's captures: every action counter and the
//! clsact qdisc's packets and drops must agree. Needs root (skips loudly
//! without, unless SLUICE_REQUIRE_KERNEL=1, then fails).

use difftest::tc::tc_diff;
use tc::ClsactHook;

const LINES: &str = "\
qdisc add dev vb clsact
qdisc add dev vc clsact
qdisc add dev vd clsact
filter add dev vb ingress prio 1 protocol ip u32 match ip protocol 6 0xff match tcp dst 23 0xffff action mirred egress redirect dev vd
filter add dev vb ingress prio 2 protocol ip u32 match ip protocol 17 0xff action mirred egress mirror dev vc
filter add dev vb ingress prio 2 protocol ip u32 match ip src 10.0.0.0/8 action mirred egress mirror dev vc pipe action mirred egress redirect dev vd
filter add dev vb ingress prio 3 protocol ipv6 u32 match ip6 protocol 58 0xff action mirred egress mirror dev vc continue
filter add dev vb ingress prio 4 protocol all u32 match u32 0 0 action mirred egress mirror dev vc
filter add dev vc egress prio 1 protocol all u32 match u16 0x0800 0xffff at -2 action mirred egress mirror dev vd
filter add dev vd egress prio 1 protocol ip u32 match ip protocol 6 0xff action mirred egress redirect dev ve
";

#[test]
fn u32_and_mirred_count_alike_in_the_kernel_and_in_sluice() {
    if !testkit::kernel_available("tc against the kernel") {
        return;
    }
    let frames: Vec<Vec<u8>> = testkit::captures()
        .iter()
        .flat_map(|p| capture::PcapSource::open(p).unwrap().filter_map(Result::ok))
        .filter(|f| !matches!(f.link, capture::LinkKind::Foreign(_)))
        .map(|f| f.data)
        .collect();
    let d = tc_diff(LINES, "vb", ClsactHook::Ingress, &frames).unwrap();
    for (h, c) in d.differing() {
        eprintln!(
            "{} {}: {}: kernel {:?}, sluice {:?}",
            h.dev, h.hook, c.what, c.kernel, c.sluice
        );
    }
    eprintln!(
        "{} frames ({} unsendable); qdisc kernel {:?} sluice {:?}",
        d.frames, d.unsendable, d.kernel_qdisc, d.sluice_qdisc
    );
    assert!(d.frames > 1000, "{}", d.frames);
    assert_eq!(d.hooks.len(), 3);
    let counted: u64 = d.hooks[0].counters.iter().map(|c| c.sluice.packets).sum();
    assert!(counted > 100, "{:?}", d.hooks[0].counters);
    assert!(d.agrees(), "kernel and sluice differ");
    for h in &d.hooks {
        assert_eq!(h.kernel_show, h.sluice_show);
    }
}
