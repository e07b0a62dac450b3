//! `Done when` of issue 20 for the forwarding programs: on a synthetic
//! table of 100k prefixes with a BGP table's length mix, fwd_radix,
//! fwd_lctrie and fwd_lpm_trie (run in our VM) forward each of 1M
//! addresses to the next hop the reference longest-prefix match gives,
//! with the JIT; fewer in the interpreter, with the default route and
//! without.

mod common;

use std::time::Instant;

use common::*;
use lpm::{
    LcParams, Reference, RouteTable, Synth, lctrie_entries, lpm_trie_entries, radix_entries,
    test_addresses,
};

const PROGRAMS: [&str; 3] = ["fwd_radix", "fwd_lctrie", "fwd_lpm_trie"];

fn entries(name: &str, t: &RouteTable) -> lpm::MapEntries {
    match name {
        "fwd_radix" => radix_entries(t).unwrap(),
        "fwd_lctrie" => lctrie_entries(t, &LcParams::default()).unwrap(),
        _ => lpm_trie_entries(t).unwrap(),
    }
}

/// Runs `name` over `addrs` and compares with the reference; returns the
/// mean instructions per packet (interpreter) and the seconds taken.
fn check(name: &str, t: &RouteTable, addrs: &[u32], jit: bool) -> (f64, f64) {
    let mut h = loaded(name, &entries(name, t));
    if jit {
        h.enable_jit().unwrap();
    }
    let reference = Reference::new(t);
    let decoder = Decoder::new(t);
    let mut frame = template();
    let (mut insns, mut routed) = (0u64, 0u64);
    let start = Instant::now();
    for &a in addrs {
        frame_to(&mut frame, a);
        let out = h.run(&frame, &meta()).unwrap();
        let got = decoder
            .decode(&frame, &out)
            .unwrap_or_else(|e| panic!("{name} {}: {e}", std::net::Ipv4Addr::from(a)));
        let want = reference.lookup(a);
        assert_eq!(got, want, "{name}: {}", std::net::Ipv4Addr::from(a));
        insns += out.stats.insns;
        routed += u64::from(want.is_some());
    }
    let secs = start.elapsed().as_secs_f64();
    let stats = map(&h, "fwd_stats");
    assert_eq!(percpu_u64(stats, 0), routed, "forwarded");
    assert_eq!(
        percpu_u64(stats, 1),
        addrs.len() as u64 - routed,
        "no route"
    );
    println!(
        "{name} ({}, {} prefixes, default route {}): {} addresses, {routed} routed, {:.1} insns/packet, {secs:.2} s",
        if jit { "JIT" } else { "interpreter" },
        t.len(),
        t.get(lpm::Prefix::DEFAULT).is_some(),
        addrs.len(),
        insns as f64 / addrs.len() as f64
    );
    (insns as f64 / addrs.len() as f64, secs)
}

fn table() -> RouteTable {
    RouteTable::synthetic(&Synth {
        prefixes: 100_000,
        ..Synth::default()
    })
}

#[test]
fn a_million_addresses_in_the_jit() {
    let t = table();
    let addrs = test_addresses(&t, 1_000_000, 1);
    for name in PROGRAMS {
        check(name, &t, &addrs, true);
    }
}

#[test]
fn without_a_default_route_in_the_jit() {
    let t = table().without_default();
    let addrs = test_addresses(&t, 200_000, 2);
    for name in PROGRAMS {
        check(name, &t, &addrs, true);
    }
}

#[test]
fn the_interpreter_agrees_and_counts_instructions() {
    let t = table();
    for (t, seed) in [(t.clone(), 3), (t.without_default(), 4)] {
        let addrs = test_addresses(&t, 50_000, seed);
        for name in PROGRAMS {
            let (insns, _) = check(name, &t, &addrs, false);
            assert!(insns > 50.0);
        }
    }
}

#[test]
fn an_empty_table_routes_nothing() {
    let t = RouteTable::new();
    let addrs = test_addresses(&t, 1000, 5);
    for name in PROGRAMS {
        check(name, &t, &addrs, false);
    }
}

/// The layouts' sizes and the entries a walk reads on the 100k table
/// (figures for docs/lpm.md).
#[test]
fn layout_sizes_and_reads() {
    let t = table();
    let addrs = test_addresses(&t, 200_000, 6);
    let radix = lpm::ArrayMaps::from_entries(&radix_entries(&t).unwrap());
    let lc = lpm::ArrayMaps::from_entries(&lctrie_entries(&t, &LcParams::default()).unwrap());
    let mean = |f: &dyn Fn(u32) -> u32| {
        addrs.iter().map(|&a| u64::from(f(a))).sum::<u64>() as f64 / addrs.len() as f64
    };
    let r = mean(&|a| lpm::radix_walk(&radix, a).1);
    let l = mean(&|a| lpm::lctrie_walk(&lc, a).1);
    println!(
        "radix: {} nodes, {r:.2} nodes read per lookup; LC-trie: {} nodes, {} base, {} prefix entries, {l:.2} entries read per lookup",
        radix.len(lpm::RADIX_NODES),
        lc.len(lpm::LC_NODES),
        lc.len(lpm::LC_BASE),
        lc.len(lpm::LC_PRE),
    );
    assert!(l < r);
}
