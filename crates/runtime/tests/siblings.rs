//! Hooks on several threads over one image's maps ([`Hook::sibling`]), as
//! the kernel runs one program on every CPU: per-CPU counters add up to
//! what one hook counts alone, and `bpf_spin_lock` excludes for real.

use std::thread;

use packet::Builder;
use runtime::{Hook, HookError, Image, LoadOptions, PacketMeta, Verdict, XdpAction};

fn load(bytes: &[u8], ncpus: u32) -> (Image, usize) {
    let image = Image::load(
        obj::Object::parse(bytes).unwrap(),
        &LoadOptions {
            ncpus,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let p = image.find_program(None).unwrap();
    (image, p)
}

fn meta() -> PacketMeta {
    PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    }
}

/// A mix of frames for `xdp_count`: UDP, TCP and IPv6 of various sizes.
fn traffic() -> Vec<Vec<u8>> {
    (0..600u16)
        .map(|i| match i % 3 {
            0 => Builder::udp("10.0.0.1", "10.0.0.2", 1000 + i, 53)
                .payload(&vec![7; usize::from(i % 64)])
                .build(),
            1 => Builder::tcp("10.0.0.3", "10.0.0.4", 2000 + i, 80).build(),
            _ => Builder::udp("fd00::1", "fd00::2", 3000 + i, 443)
                .payload(&vec![1; usize::from(i % 200)])
                .build(),
        })
        .collect()
}

/// Every key of `xdp_count`'s `proto_stats` as `(key, per-CPU copies of
/// packets and bytes)`.
fn stats(hook: &Hook) -> Vec<(u32, Vec<(u64, u64)>)> {
    let i = hook.object().map_index("proto_stats").unwrap();
    let m = &hook.maps()[i];
    (0..256u32)
        .map(|k| {
            let v = m.user_lookup(&k.to_le_bytes()).unwrap();
            let copies = v
                .chunks(16)
                .map(|c| {
                    let at = |o: usize| u64::from_le_bytes(c[o..o + 8].try_into().unwrap());
                    (at(0), at(8))
                })
                .collect();
            (k, copies)
        })
        .collect()
}

fn run_all(hook: &mut Hook, frames: &[Vec<u8>]) {
    for f in frames {
        let out = hook.run(f, &meta()).unwrap();
        assert_eq!(out.verdict, Verdict::Xdp(XdpAction::Pass));
    }
}

/// Two siblings on two threads, each with half the traffic: each CPU's copy
/// holds its half, and the copies sum to one hook's single-threaded counts.
#[test]
fn per_cpu_counters_of_siblings_sum_to_a_single_hooks() {
    let frames = traffic();
    let bytes = programs::object("xdp_count").unwrap();
    let (image, p) = load(bytes, 1);
    let mut alone = Hook::new(image, p, 0).unwrap();
    run_all(&mut alone, &frames);
    let want = stats(&alone);

    for jit in [false, true] {
        let (image, p) = load(bytes, 2);
        let mut first = Hook::new(image, p, 0).unwrap();
        if jit && first.enable_jit().is_err() {
            continue; // not an x86-64 host
        }
        let mut second = first.sibling(1).unwrap();
        assert_eq!(second.env().cpu(), 1);
        assert_eq!(second.jit_enabled(), first.jit_enabled());
        let (even, odd): (Vec<_>, Vec<_>) =
            frames.iter().enumerate().partition(|(i, _)| i % 2 == 0);
        let even: Vec<Vec<u8>> = even.into_iter().map(|(_, f)| f.clone()).collect();
        let odd: Vec<Vec<u8>> = odd.into_iter().map(|(_, f)| f.clone()).collect();
        thread::scope(|s| {
            s.spawn(|| run_all(&mut first, &even));
            s.spawn(|| run_all(&mut second, &odd));
        });
        // Both hooks see the same maps.
        assert!(std::sync::Arc::ptr_eq(
            first.shared_maps(),
            second.shared_maps()
        ));
        let got = stats(&first);
        let (mut cpu0, mut cpu1) = (0, 0);
        for ((k, copies), (_, single)) in got.iter().zip(&want) {
            let sum = (
                copies.iter().map(|c| c.0).sum::<u64>(),
                copies.iter().map(|c| c.1).sum::<u64>(),
            );
            assert_eq!(sum, single[0], "jit {jit}: key {k}");
            cpu0 += copies[0].0;
            cpu1 += copies[1].0;
        }
        assert_eq!(
            (cpu0, cpu1),
            (even.len() as u64, odd.len() as u64),
            "each CPU counts its own packets"
        );
    }
}

#[test]
fn siblings_carry_the_settings_and_need_a_per_cpu_slot() {
    let (image, p) = load(programs::object("xdp_count").unwrap(), 2);
    let mut h = Hook::new(image, p, 0).unwrap();
    h.set_budget(12_345);
    // SAFETY: xdp_count is among the examples the verifier accepts
    // (crates/verifier/tests/programs.rs), for these maps.
    unsafe { h.trust_verified() };
    let s = h.sibling(1).unwrap();
    assert!(
        s.is_trusted(),
        "trust carries over to the same programs and maps"
    );
    assert_eq!(s.env().cpu(), 1);
    assert_eq!(
        s.runnable().collect::<Vec<_>>(),
        h.runnable().collect::<Vec<_>>()
    );
    assert!(matches!(
        h.sibling(2),
        Err(HookError::Cpu {
            cpu: 2,
            ncpus: 2,
            ..
        })
    ));
}

/// Siblings draw different, repeatable pseudo-random numbers.
#[test]
fn siblings_have_their_own_random_numbers() {
    let (image, p) = load(programs::object("xdp_count").unwrap(), 4);
    let h = Hook::new(image, p, 0).unwrap();
    let draw = |cpu: u32| {
        let mut s = h.sibling(cpu).unwrap();
        let sim = &mut s.env_mut().sim;
        (0..4)
            .map(|_| vm::BasicEnv::random_u32(sim))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(0), draw(0));
    assert_eq!(draw(3), draw(3));
    assert_ne!(draw(0), draw(1));
    assert_ne!(draw(1), draw(2));
}

/// A program whose critical section increments a counter by plain loads
/// and stores many times: with two threads contending, the lock makes
/// every increment count.
const SPIN_LOCK_PROGRAM: &str = r#"
#include "parse.h"

struct locked {
	struct bpf_spin_lock lock;
	__u64 n;
	__u64 runs;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct locked);
} locks SEC(".maps");

SEC("xdp")
int count_locked(struct xdp_md *ctx)
{
	__u32 k = 0;
	struct locked *l = bpf_map_lookup_elem(&locks, &k);
	if (!l)
		return XDP_ABORTED;
	bpf_spin_lock(&l->lock);
	for (int i = 0; i < 16; i++) {
		__u64 v = *(volatile __u64 *)&l->n;
		*(volatile __u64 *)&l->n = v + 1;
	}
	l->runs++;
	bpf_spin_unlock(&l->lock);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"#;

#[test]
fn spin_lock_counts_exactly_under_contention() {
    const RUNS: u64 = 4_000;
    let bytes = programs::compile::compile("spin", SPIN_LOCK_PROGRAM);
    let frame = Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
    for jit in [false, true] {
        let (image, p) = load(&bytes, 2);
        let mut first = Hook::new(image, p, 0).unwrap();
        if jit && first.enable_jit().is_err() {
            continue;
        }
        let mut second = first.sibling(1).unwrap();
        thread::scope(|s| {
            for h in [&mut first, &mut second] {
                let frame = &frame;
                s.spawn(move || {
                    for _ in 0..RUNS {
                        let out = h.run(frame, &meta()).unwrap();
                        assert_eq!(out.verdict, Verdict::Xdp(XdpAction::Pass));
                    }
                });
            }
        });
        let i = first.object().map_index("locks").unwrap();
        let v = first.maps()[i].user_lookup(&0u32.to_le_bytes()).unwrap();
        let at = |o: usize| u64::from_le_bytes(v[o..o + 8].try_into().unwrap());
        assert_eq!(
            at(0) as u32,
            0,
            "jit {jit}: the lock is free after the runs"
        );
        assert_eq!(at(8), 2 * RUNS * 16, "jit {jit}: no increment lost");
        assert_eq!(at(16), 2 * RUNS, "jit {jit}");
    }
}
