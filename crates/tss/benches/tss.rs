//! Lookups per second of the tuple-space search beside the linear
//! reference, measured in the same run, for 1 to 100k rules over 1, 5 and
//! 50 masks, in three cases: the key matches the first rule by priority
//! (best), the last (worst), or none (also worst: every subtable probed).
//!
//! `cargo bench -p tss` prints criterion's lines, then the table.
//! `TSS_BENCH_MAX=N` stops at N rules. Rules are 16-word keys (a flower
//! key) whose masks cover whole words, with random values: the linear
//! walk rejects most rules at their first masked word, its best case.

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use tss::{Key, Linear, Rule, Tss};

const W: usize = 16;
const SIZES: [usize; 6] = [1, 10, 100, 1000, 10_000, 100_000];
const MASKS: [usize; 3] = [1, 5, 50];
const KEYS: usize = 16;

/// xorshift64*: deterministic rules and keys without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn key(&mut self) -> Key<W> {
        std::array::from_fn(|_| self.next())
    }
}

/// `n` distinct masks, each a random set of whole words (one to six).
fn masks(n: usize, rng: &mut Rng) -> Vec<Key<W>> {
    let mut out: Vec<Key<W>> = Vec::new();
    while out.len() < n {
        let words = 1 + rng.next() as usize % 6;
        let mut m = [0u64; W];
        for _ in 0..words {
            m[rng.next() as usize % W] = u64::MAX;
        }
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

#[derive(Copy, Clone)]
enum Case {
    First,
    Last,
    None,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::First => "first",
            Case::Last => "last",
            Case::None => "none",
        }
    }
}

struct Setup {
    tss: Tss<W, u32>,
    linear: Linear<W, u32>,
    rules: Vec<Rule<W>>,
}

/// Rule `i` has priority `i` and mask `i % masks`.
fn setup(n: usize, masks_n: usize) -> Setup {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (n * 131 + masks_n) as u64);
    let masks = masks(masks_n, &mut rng);
    let mut tss = Tss::new();
    let mut linear = Linear::new();
    let mut rules = Vec::with_capacity(n);
    for i in 0..n {
        let rule = Rule::new(masks[i % masks_n], rng.key(), i as u32);
        tss.insert(rule, i as u32);
        linear.insert(rule, i as u32);
        rules.push(rule);
    }
    Setup { tss, linear, rules }
}

/// Keys of a case: a rule's value, random in its unmasked words.
fn keys(s: &Setup, case: Case, rng: &mut Rng) -> Vec<Key<W>> {
    let n = s.rules.len();
    (0..KEYS)
        .map(|_| {
            let noise = rng.key();
            let r = match case {
                Case::First => s.rules[0],
                Case::Last => s.rules[n - 1],
                Case::None => return noise,
            };
            std::array::from_fn(|w| r.value[w] | (noise[w] & !r.mask[w]))
        })
        .collect()
}

/// Median ns per lookup over criterion's samples of `f`.
fn measure(
    c: &mut Criterion,
    id: &str,
    f: impl Fn(&Key<W>) -> Option<u32>,
    keys: &[Key<W>],
) -> Option<f64> {
    let samples = RefCell::new(Vec::new());
    c.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for i in 0..iters as usize {
                black_box(f(black_box(&keys[i % KEYS])));
            }
            let d = start.elapsed();
            samples
                .borrow_mut()
                .push(d.as_nanos() as f64 / iters as f64);
            d
        })
    });
    let mut s = samples.into_inner();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    Some(s[s.len() / 2])
}

struct Row {
    rules: usize,
    masks: usize,
    case: Case,
    probed: usize,
    tss_ns: f64,
    linear_ns: f64,
}

fn main() {
    let max = std::env::var("TSS_BENCH_MAX")
        .ok()
        .map(|s| s.parse::<usize>().expect("TSS_BENCH_MAX is a number"));
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300))
        .sample_size(10)
        .nresamples(1000)
        .without_plots()
        .configure_from_args();
    let mut rows = Vec::new();
    for n in SIZES.into_iter().filter(|&n| max.is_none_or(|m| n <= m)) {
        let mut done = Vec::new();
        for masks_n in MASKS.map(|m| m.min(n)) {
            if done.contains(&masks_n) {
                continue;
            }
            done.push(masks_n);
            let s = setup(n, masks_n);
            let mut rng = Rng(0xdead_beef ^ n as u64);
            for case in [Case::First, Case::Last, Case::None] {
                let keys = keys(&s, case, &mut rng);
                let want = match case {
                    Case::First => Some(0),
                    Case::Last => Some(n as u32 - 1),
                    Case::None => None,
                };
                let (m, stats) = s.tss.lookup_stats(&keys[0]);
                assert_eq!(m.map(|m| *m.payload), want);
                assert_eq!(s.linear.lookup(&keys[0]).map(|m| *m.payload), want);
                let id = format!("{n}r/{masks_n}m/{}", case.name());
                let t = measure(
                    &mut c,
                    &format!("tss/{id}"),
                    |k| s.tss.lookup(k).map(|m| *m.payload),
                    &keys,
                );
                let l = measure(
                    &mut c,
                    &format!("linear/{id}"),
                    |k| s.linear.lookup(k).map(|m| *m.payload),
                    &keys,
                );
                if let (Some(tss_ns), Some(linear_ns)) = (t, l) {
                    rows.push(Row {
                        rules: n,
                        masks: masks_n,
                        case,
                        probed: stats.probed,
                        tss_ns,
                        linear_ns,
                    });
                }
            }
        }
    }
    print_table(&rows);
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "| rules | masks | match | subtables probed | TSS lookups/s | linear lookups/s | TSS / linear |"
    );
    println!(
        "|------:|------:|:------|-----------------:|--------------:|-----------------:|-------------:|"
    );
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.2} |",
            r.rules,
            r.masks,
            r.case.name(),
            r.probed,
            per_second(r.tss_ns),
            per_second(r.linear_ns),
            r.linear_ns / r.tss_ns,
        );
    }
}

fn per_second(ns: f64) -> String {
    let v = 1e9 / ns;
    if v >= 1e6 {
        format!("{:.1} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}
