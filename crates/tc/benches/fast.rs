//! The fast path against the reference walk: 1 rule against 1000 rules
//! with the packet matching the last one (the worst case for a walk), for
//! flower and u32, as 1000 filters of one rule and as one filter of 1000
//! rules; and 100k flower rules. Prints each case's ns per packet and its
//! ratio to the 1-rule case of the same mode (`ratio` lines).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tc::{ClsactHook, Config, ShowOptions, Skb};

/// An IPv4/UDP frame from 10.x.y.z (`n` = x << 16 | y << 8 | z) to port 53.
fn frame(n: u32) -> Skb {
    let mut f = vec![0u8; 14 + 20 + 8 + 16];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[14 + 8] = 64;
    f[14 + 9] = 17;
    f[14 + 12] = 10;
    f[14 + 13..14 + 16].copy_from_slice(&n.to_be_bytes()[1..]);
    f[14 + 16..14 + 20].copy_from_slice(&[192, 168, 0, 1]);
    f[34..36].copy_from_slice(&1234u16.to_be_bytes());
    f[36..38].copy_from_slice(&53u16.to_be_bytes());
    Skb::from_frame(&f, 1)
}

fn ip(n: u32) -> String {
    format!("10.{}.{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff)
}

/// The shapes: (name, batch, matching source).
fn cases() -> Vec<(&'static str, String, u32)> {
    let head = "qdisc add dev v0 clsact\n".to_string();
    let mut out = Vec::new();
    let flower_filters = |n: u32| {
        let mut b = head.clone();
        for i in 1..=n {
            b += &format!(
                "filter add dev v0 ingress prio {i} protocol ip flower src_ip {} action gact drop index {i}\n",
                ip(i)
            );
        }
        b
    };
    let flower_rules = |n: u32| {
        let mut b = head.clone();
        for i in 1..=n {
            b += &format!(
                "filter add dev v0 ingress prio 1 handle {i} protocol ip flower src_ip {} action gact drop index {i}\n",
                ip(i)
            );
        }
        b
    };
    let u32_filters = |n: u32| {
        let mut b = head.clone();
        for i in 1..=n {
            b += &format!(
                "filter add dev v0 ingress prio {i} protocol ip u32 match ip src {}/32 action gact drop index {i}\n",
                ip(i)
            );
        }
        b
    };
    let u32_rules = |n: u32| {
        let mut b = head.clone();
        for i in 1..=n {
            b += &format!(
                "filter add dev v0 ingress prio 1 protocol ip u32 match ip src {}/32 action gact drop index {i}\n",
                ip(i)
            );
        }
        b
    };
    out.push(("flower_1", flower_filters(1), 1));
    out.push(("flower_1000_filters", flower_filters(1000), 1000));
    out.push(("flower_1000_rules", flower_rules(1000), 1000));
    out.push(("flower_100k_rules", flower_rules(100_000), 100_000));
    out.push(("u32_1", u32_filters(1), 1));
    out.push(("u32_1000_filters", u32_filters(1000), 1000));
    out.push(("u32_1000_rules", u32_rules(1000), 1000));
    out
}

fn config(batch: &str, fast: bool) -> Config {
    let mut c = Config::default();
    c.set_fast(fast);
    c.run_batch(batch, ShowOptions::default()).expect("batch");
    c
}

fn classify(c: &mut Config, skb: &mut Skb) -> runtime::TcAction {
    c.classify("v0", ClsactHook::Ingress, skb).verdict
}

/// ns per packet over a timed loop of about 100 ms.
fn ns_per_packet(c: &mut Config, skb: &mut Skb) -> f64 {
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..n {
            black_box(classify(c, black_box(skb)));
        }
        let d = t.elapsed();
        if d > Duration::from_millis(100) {
            return d.as_nanos() as f64 / n as f64;
        }
        n *= 2;
    }
}

fn bench(cr: &mut Criterion) {
    let mut built: Vec<(&str, bool, Config, Skb)> = Vec::new();
    for (name, batch, src) in cases() {
        for fast in [true, false] {
            let mut c = config(&batch, fast);
            let mut skb = frame(src);
            assert_eq!(
                classify(&mut c, &mut skb),
                runtime::TcAction::Shot,
                "{name}"
            );
            built.push((name, fast, c, skb));
        }
    }
    // The ratios: each case timed in turn, five rounds, the best of each
    // (the machine is shared; the best is the least disturbed).
    let mut best = vec![f64::MAX; built.len()];
    for _ in 0..5 {
        for (i, (_, _, c, skb)) in built.iter_mut().enumerate() {
            best[i] = best[i].min(ns_per_packet(c, skb));
        }
    }
    let mut base = [0.0f64; 2];
    for (i, (name, fast, ..)) in built.iter().enumerate() {
        let m = usize::from(!*fast);
        if name.ends_with("_1") {
            base[m] = best[i];
        }
        let mode = if *fast { "fast" } else { "linear" };
        println!(
            "ratio {name:22} {mode:6} {:9.0} ns/packet {:8.2}x the 1-rule time",
            best[i],
            best[i] / base[m]
        );
    }
    let mut g = cr.benchmark_group("tc_fast");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for (name, fast, c, skb) in &mut built {
        let mode = if *fast { "fast" } else { "linear" };
        g.bench_function(format!("{name}/{mode}"), |b| {
            b.iter(|| classify(c, black_box(skb)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
