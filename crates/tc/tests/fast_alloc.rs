//! The fast path does not allocate per packet: after the first packet
//! (which builds the lookup), classifying with 1000 flower or u32 rules,
//! the match the last, allocates nothing.

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tc::{ClsactHook, Config, ShowOptions, Skb};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

fn allocations_per_packet(rule: &str) -> u64 {
    let mut batch = "qdisc add dev v0 clsact\n".to_string();
    for i in 1..=1000u32 {
        batch += &rule
            .replace("PRIO", &i.to_string())
            .replace("SRC", &format!("10.0.{}.{}", i >> 8, i & 0xff));
        batch += "\n";
    }
    let mut c = Config::default();
    c.run_batch(&batch, ShowOptions::default()).unwrap();
    let mut f = vec![0u8; 14 + 20 + 8];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[14 + 9] = 17;
    f[14 + 12..14 + 16].copy_from_slice(&[10, 0, 3, 232]);
    let mut skb = Skb::from_frame(&f, 1);
    let out = c.classify("v0", ClsactHook::Ingress, &mut skb);
    assert_eq!(out.verdict, runtime::TcAction::Shot, "{rule}");
    let region = Region::new(GLOBAL);
    for _ in 0..100 {
        c.classify("v0", ClsactHook::Ingress, &mut skb);
    }
    let change = region.change();
    let n = (change.allocations + change.reallocations) as u64;
    let (block, _) = c.block_mut("v0", ClsactHook::Ingress).unwrap();
    assert_eq!(block.fast_stats().hits, 101, "{rule}");
    n
}

#[test]
fn the_fast_path_allocates_nothing_per_packet() {
    for rule in [
        "filter add dev v0 ingress prio PRIO protocol ip flower src_ip SRC action drop",
        "filter add dev v0 ingress prio 1 handle PRIO protocol ip flower src_ip SRC action drop",
        "filter add dev v0 ingress prio PRIO protocol ip u32 match ip src SRC/32 action drop",
        "filter add dev v0 ingress prio 1 protocol ip u32 match ip src SRC/32 action drop",
    ] {
        assert_eq!(allocations_per_packet(rule), 0, "{rule}");
    }
}
