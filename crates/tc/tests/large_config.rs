//! A large configuration loads in time linear in its size (issue 40): the
//! file `sluice tc` keeps is replayed before every command and `sluice run
//! --tc` reads it whole, so entering n rules must not cost n squared. Each
//! shape is entered at n and 4n rules and the larger must take well under
//! 16 times as long (square time's ratio; linear's is 4): the factor
//! allowed is 10, the best of three runs each, as the machine is shared.

use std::time::{Duration, Instant};

use tc::{Config, ShowOptions};

/// One u32 filter, every rule in the root table's one bucket (at most
/// 4,095 there: the node ids).
fn one_bucket(n: usize) -> String {
    let mut s = String::from("qdisc add dev v0 clsact\n");
    for i in 0..n {
        s += &format!(
            "filter add dev v0 ingress prio 1 protocol ip u32 match ip dst 10.0.{}.{}/32 classid 1:1\n",
            i >> 8,
            i & 0xff
        );
    }
    s
}

/// A filter per priority, each with one rule.
fn priorities(n: usize) -> String {
    let mut s = String::from("qdisc add dev v0 clsact\n");
    for i in 0..n {
        s += &format!(
            "filter add dev v0 ingress prio {} protocol ip u32 match ip dst 10.0.{}.{}/32 classid 1:1\n",
            i + 1,
            i >> 8,
            i & 0xff
        );
    }
    s
}

/// A hashing trie as the CLASHoFIRES paper's: the root hashes the
/// destination's third byte into 256 buckets, each linking a table that
/// hashes the fourth into 256 leaves; `n` leaves (a multiple of 256).
fn trie(n: usize) -> String {
    let tables = n / 256;
    let mut s = String::from("qdisc add dev v0 clsact\n");
    let f = "filter add dev v0 ingress prio 1 protocol ip";
    s += &format!("{f} handle 1: u32 divisor 256\n");
    for t in 0..tables {
        s += &format!("{f} handle {:x}: u32 divisor 256\n", t + 2);
        s += &format!(
            "{f} u32 ht 1:{t:x}: match ip dst 10.0.{t}.0/24 hashkey mask 0x000000ff at 16 link {:x}:\n",
            t + 2
        );
        for leaf in 0..256 {
            s += &format!(
                "{f} u32 ht {:x}:{leaf:x}: match ip dst 10.0.{t}.{leaf}/32 classid 1:1\n",
                t + 2
            );
        }
    }
    s += &format!("{f} u32 match ip dst 10.0.0.0/16 hashkey mask 0x0000ff00 at 16 link 1:\n");
    s
}

/// The best of three loads of `text`.
fn load_time(text: &str) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            let mut c = Config::default();
            c.run_batch(text, ShowOptions::default())
                .unwrap_or_else(|e| panic!("{e}"));
            start.elapsed()
        })
        .min()
        .unwrap()
}

fn linear(shape: &str, make: fn(usize) -> String, n: usize) {
    let small = load_time(&make(n));
    let large = load_time(&make(4 * n));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!(
        "{shape}: {n} rules {small:?}, {} rules {large:?} (x{ratio:.1})",
        4 * n
    );
    assert!(
        ratio < 10.0,
        "{shape}: {n} rules load in {small:?}, {} in {large:?}: x{ratio:.1}, square time",
        4 * n
    );
}

#[test]
fn rules_in_one_bucket_load_in_linear_time() {
    linear("one bucket", one_bucket, 1000);
}

#[test]
fn a_filter_per_priority_loads_in_linear_time() {
    linear("priorities", priorities, 5000);
}

#[test]
fn a_hashing_trie_loads_in_linear_time() {
    linear("trie", trie, 4096);
}
