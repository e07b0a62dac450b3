//! Per-packet time of `Hook::run` for small XDP programs in the interpreter
//! and the JIT (verified, so trusted), beside a plain loop that only copies
//! the packet (the floor a per-packet call cannot go under), and the JIT's
//! batch entry (`Hook::run_batch`, 64 packets per entry into native code).
//!
//! `cargo bench -p runtime --bench hook`. `HOOK_BENCH_ONLY=xdp_drop:jit`
//! runs one case and `HOOK_BENCH_ITERS=N` fixes its iterations (for
//! `valgrind --tool=callgrind`, whose instruction counts are repeatable).

use std::hint::black_box;
use std::time::{Duration, Instant};

use runtime::{Hook, Image, LoadOptions, PacketMeta};

const PROGRAMS: &[&str] = &["xdp_drop", "xdp_count"];

/// A 64-byte Ethernet / IPv4 / UDP frame.
fn packet() -> Vec<u8> {
    let mut p = vec![0u8; 64];
    p[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    p[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    p[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut p[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&50u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
    let udp = &mut p[34..42];
    udp[0..2].copy_from_slice(&1234u16.to_be_bytes());
    udp[2..4].copy_from_slice(&5678u16.to_be_bytes());
    udp[4..6].copy_from_slice(&30u16.to_be_bytes());
    p
}

/// A hook on example `name`, verified and trusted, on the chosen engine.
fn hook(name: &str, jit: bool) -> Hook {
    let bytes = programs::object(name).expect("an example program");
    let object = obj::Object::parse(bytes).expect("the example parses");
    let image = Image::load(object, &LoadOptions::default()).expect("the example loads");
    let prog = image.find_program(None).expect("one program");
    let mut h = Hook::new(image, prog, 0).expect("a hook");
    let object = h.object();
    let data_of = |i: usize| -> Option<Vec<u8>> {
        object.maps[i].data.as_ref()?;
        h.maps()[i].user_lookup(&0u32.to_le_bytes()).ok()
    };
    let maps = verifier::MapView::of_object(object, &data_of);
    let opts = verifier::VerifyOptions {
        helpers: runtime::helpers::ids_for(&h.program().kind),
        ..verifier::VerifyOptions::default()
    };
    let mut depth = 0;
    for i in h.runnable() {
        let report = verifier::verify(&object.programs[i], &maps, &opts);
        assert!(report.result.is_ok(), "{name} verifies");
        depth = depth.max(report.stack_depth);
    }
    // SAFETY: the verifier accepted every runnable program against these
    // maps, just above.
    unsafe { h.trust_verified() };
    h.set_stack_depth(depth);
    if jit {
        h.enable_jit().expect("the JIT");
    }
    h
}

fn meta() -> PacketMeta {
    PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    }
}

/// ns per call of `f`, over about `seconds` (or exactly `iters` calls).
fn time(iters: Option<u64>, seconds: f64, mut f: impl FnMut()) -> f64 {
    let batch = 10_000;
    let start = Instant::now();
    let mut n = 0u64;
    loop {
        for _ in 0..batch.min(iters.map_or(batch, |i| i - n)) {
            f();
            n += 1;
        }
        let done = match iters {
            Some(i) => n >= i,
            None => start.elapsed() >= Duration::from_secs_f64(seconds),
        };
        if done {
            break;
        }
    }
    start.elapsed().as_nanos() as f64 / n.max(1) as f64
}

fn main() {
    let only = std::env::var("HOOK_BENCH_ONLY").ok();
    let iters = std::env::var("HOOK_BENCH_ITERS")
        .ok()
        .map(|s| s.parse::<u64>().expect("HOOK_BENCH_ITERS is a number"));
    let seconds = 1.0;
    let pkt = packet();
    let m = meta();
    let wanted = |case: &str| only.as_deref().is_none_or(|o| o == case);
    if wanted("baseline") {
        let mut buf = vec![0u8; 4096];
        let ns = time(iters, seconds, || {
            let p = black_box(&pkt[..]);
            buf[256..256 + p.len()].copy_from_slice(p);
            black_box(&buf);
        });
        println!("{:<24}{ns:>10.1} ns/packet", "baseline (copy)");
    }
    for name in PROGRAMS {
        for (engine, jit) in [("interp", false), ("jit", true)] {
            let case = format!("{name}:{engine}");
            if !wanted(&case) {
                continue;
            }
            let mut h = hook(name, jit);
            let ns = time(iters, seconds, || {
                let out = h.run(black_box(&pkt), &m).expect("the program runs");
                black_box(out.verdict);
            });
            println!("{case:<24}{ns:>10.1} ns/packet");
        }
        // The same packet 64 times per entry into native code.
        let case = format!("{name}:jit-batch");
        if wanted(&case) {
            let mut h = hook(name, true);
            assert!(h.batches_natively(), "{name}: batches natively");
            let mut m = meta();
            let per_call = 64;
            let iters = iters.map(|i| i.div_ceil(per_call));
            let ns = time(iters, seconds, || {
                let input = |_| (black_box(&pkt[..]), 0);
                h.run_batch(per_call as usize, input, &mut m, |_, out| {
                    black_box(out.expect("the program runs").verdict);
                });
            });
            println!("{case:<24}{:>10.1} ns/packet", ns / per_call as f64);
        }
    }
}
