//! Trajectory sampling's fraction: over a million generated packets (IPv4
//! and IPv6, UDP, TCP and ICMP, many flows), `h mod A < B` holds for
//! `B/A` of them within 1% (relative) for every rate where a million
//! packets can tell (B/A of 1/20 and more: 1% is then over 4 binomial
//! standard deviations), and within 4 standard deviations for the rare
//! rates; `h mod 64` and `g mod 64` are uniform (chi-square), and the
//! label of the sampled packets is as uniform as any's (the hashes are
//! independent). The reference is the fast engine; the eBPF program is
//! checked against it on the first 20,000 packets (tests/sample.rs checks
//! all engines).

use std::sync::atomic::AtomicU64;

use monitor::{
    SampleEngine, SampleOptions, SampleRecord, invariants, sample_trajectories, sampled,
};
use pipeline::Generated;

const SPECS: [&str; 4] = [
    "udp,flows=1000,count=400000",
    "tcp,flows=300,count=250000,rate=800000",
    "udp,v6,flows=500,count=250000,size=100,rate=900000",
    "icmp,flows=20,count=100000,size=80,rate=300000",
];

/// Chi-square of counts against a uniform expectation.
fn chi_square(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    let e = n as f64 / counts.len() as f64;
    counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

#[test]
fn a_million_packets_are_sampled_at_b_over_a() {
    let specs: Vec<packet::GenSpec> = SPECS
        .iter()
        .map(|s| packet::GenSpec::parse(s).unwrap())
        .collect();
    let mut hashes = Vec::with_capacity(1_000_000);
    let mut labels = Vec::with_capacity(1_000_000);
    for (_, f) in packet::merge(&specs) {
        let i = invariants(&f).unwrap();
        hashes.push(i.hash);
        labels.push(i.label);
    }
    assert_eq!(hashes.len(), 1_000_000);
    let distinct: std::collections::HashSet<u32> = hashes.iter().copied().collect();
    assert!(
        distinct.len() > 999_000,
        "{} distinct hashes",
        distinct.len()
    );
    let n = hashes.len() as f64;
    for (a, b) in [
        (2, 1),
        (4, 1),
        (8, 3),
        (10, 1),
        (20, 1),
        (100, 9),
        (1000, 333),
        (65_536, 20_000),
        (1_000_000, 70_000),
    ] {
        let got = hashes.iter().filter(|&&h| sampled(h, a, b)).count() as f64;
        let p = f64::from(b) / f64::from(a);
        let want = n * p;
        let rel = (got - want).abs() / want;
        assert!(
            rel < 0.01,
            "{b}/{a}: {got} sampled, {want} expected ({:.3}%)",
            rel * 100.0
        );
    }
    for (a, b) in [(100, 1), (1000, 1), (7, 0), (3, 3)] {
        let got = hashes.iter().filter(|&&h| sampled(h, a, b)).count() as f64;
        let p = f64::from(b) / f64::from(a);
        let sd = (n * p * (1.0 - p)).sqrt();
        assert!(
            (got - n * p).abs() <= 4.0 * sd,
            "{b}/{a}: {got} sampled, {} expected",
            n * p
        );
    }
    // Uniform: 63 degrees of freedom, the 0.999 quantile is about 103.
    let mut h64 = [0u64; 64];
    let mut g64 = [0u64; 64];
    let mut g_of_sampled = [0u64; 64];
    for (&h, &g) in hashes.iter().zip(&labels) {
        h64[(h % 64) as usize] += 1;
        g64[(g % 64) as usize] += 1;
        if sampled(h, 10, 1) {
            g_of_sampled[(g % 64) as usize] += 1;
        }
    }
    assert!(chi_square(&h64) < 103.0, "h mod 64: {}", chi_square(&h64));
    // Labels are per flow (1,820 of them): uniform over flows.
    let flows: std::collections::HashSet<u32> = labels.iter().copied().collect();
    assert_eq!(flows.len(), 1000 + 300 + 500 + 20);
    let mut per_flow = [0u64; 64];
    for g in &flows {
        per_flow[(g % 64) as usize] += 1;
    }
    assert!(
        chi_square(&per_flow) < 103.0,
        "labels mod 64: {}",
        chi_square(&per_flow)
    );
    // Independence: sampling by h does not favour labels: the sampled
    // packets' labels spread as all packets' do.
    let all: u64 = g64.iter().sum();
    let some: u64 = g_of_sampled.iter().sum();
    let chi: f64 = g_of_sampled
        .iter()
        .zip(&g64)
        .map(|(&o, &t)| {
            let e = t as f64 * some as f64 / all as f64;
            (o as f64 - e).powi(2) / e
        })
        .sum();
    assert!(chi < 103.0, "labels of sampled packets: chi-square {chi}");
}

#[test]
fn the_ebpf_program_agrees_with_the_reference_on_generated_traffic() {
    let specs: Vec<String> = SPECS.iter().map(|s| s.to_string()).collect();
    let mut runs = Vec::new();
    for engine in [SampleEngine::Reference, SampleEngine::Ebpf] {
        let mut got = Vec::new();
        let s = sample_trajectories(
            &mut Generated::parse(&specs).unwrap(),
            &SampleOptions {
                a: 10,
                b: 1,
                table: 65_536,
                engine,
                limit: Some(20_000),
                metrics: None,
            },
            &AtomicU64::new(0),
            |r: &[SampleRecord]| {
                got.extend(r.iter().map(|r| match *r {
                    SampleRecord::Sample(mut s) => {
                        s.time_ns /= 1_000_000;
                        SampleRecord::Sample(s)
                    }
                    f => f,
                }))
            },
        )
        .unwrap();
        assert_eq!(s.packets, 20_000);
        runs.push((got, s.counts));
    }
    assert_eq!(runs[0], runs[1]);
    assert!(runs[0].1.sampled > 1_500);
}
