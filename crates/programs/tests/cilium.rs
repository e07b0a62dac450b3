//! Third-party programs built from their sources (fetched by `./dev.sh
//! setup` from the Go module proxy into target/thirdparty/src): Cilium's
//! datapath, compiled with Cilium's own clang flags in three of the
//! configurations its Makefile compile-tests, and cilium/ebpf's XDP and tc
//! examples. Every program loads; every entry program runs over every
//! capture without an error; tail calls go through the slots Cilium
//! declares with `tail:cilium_calls/N` tags, and the JIT (bpf-to-bpf and
//! tail calls in native code) gives the very results of the interpreter;
//! the examples count what they should.

mod common;

use std::collections::BTreeMap;

use common::*;
use packet::Builder;
use programs::thirdparty::{CONFIGS, DATAPATH, build_cilium, source_root};
use runtime::*;

#[test]
fn cilium_datapath_runs_over_every_capture() {
    let root = source_root("cilium@v1.20.2");
    // Build everything first, two at a time (the machine has two cores).
    let jobs: Vec<(&str, &str, &str)> = CONFIGS
        .iter()
        .flat_map(|&(config, defines)| DATAPATH.iter().map(move |&f| (config, f, defines)))
        .collect();
    let objects: Vec<(String, Vec<u8>)> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(jobs.len().div_ceil(2))
            .map(|chunk| {
                let root = &root;
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&(config, f, d)| {
                            (format!("{f} ({config})"), build_cilium(root, f, d))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let frames = capture_frames();
    // Cut as the one-hook runs below cut them (a tc hook refuses more).
    let packets = pipeline::Packets::new(
        frames
            .iter()
            .map(|f| {
                (
                    f.timestamp_ns,
                    f.data[..f.data.len().min(MAX_FRAME)].to_vec(),
                )
            })
            .collect(),
    );
    let (mut entries, mut tail_calls, mut metrics) = (0, 0, 0);
    for (name, bytes) in &objects {
        let object = obj::Object::parse(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        // Every declared tail call is in cilium_calls from the start.
        let calls = object.map_index("cilium_calls").expect("cilium_calls");
        assert!(
            !object.maps[calls].initial.is_empty(),
            "{name}: no tail calls"
        );
        for (i, p) in object.programs.iter().enumerate() {
            if !p.section.ends_with("/entry") {
                continue;
            }
            let image = Image::load(object.clone(), &LoadOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut hook =
                Hook::new(image, i, 0).unwrap_or_else(|e| panic!("{name} {}: {e}", p.name));
            #[cfg(target_arch = "x86_64")]
            let mut jit = {
                let image = Image::load(object.clone(), &LoadOptions::default()).unwrap();
                let mut h = Hook::new(image, i, 0).unwrap();
                h.enable_jit().unwrap();
                h
            };
            let mut verdicts = BTreeMap::new();
            for f in &frames {
                let data = &f.data[..f.data.len().min(MAX_FRAME)];
                let out = hook
                    .run(data, &meta(f.timestamp_ns))
                    .unwrap_or_else(|e| panic!("{name} {}: {e}", p.name));
                tail_calls += out.stats.tail_calls;
                *verdicts.entry(out.verdict.name()).or_insert(0u64) += 1;
                #[cfg(target_arch = "x86_64")]
                {
                    let want = summary(&out);
                    let got = jit
                        .run(data, &meta(f.timestamp_ns))
                        .unwrap_or_else(|e| panic!("{name} {} (JIT): {e}", p.name));
                    assert_eq!(summary(&got), want, "{name} {}: JIT", p.name);
                }
            }
            #[cfg(target_arch = "x86_64")]
            for (m, j) in hook.maps().iter().zip(jit.maps()) {
                assert_eq!(
                    m.entries(),
                    j.entries(),
                    "{name} {}: map {}",
                    p.name,
                    m.name()
                );
            }
            // The pipeline on two workers (flows sharded, maps shared): no
            // error, every packet, and in the default configuration the
            // same verdicts and per-CPU metrics that sum to one hook's. With
            // NodePort and masquerading, state shared across flows (SNAT
            // port allocation, NodePort's reverse-NAT entries) makes the
            // outcome depend on how workers interleave, as on the kernel's
            // CPUs: a packet's verdict may differ from a one-CPU run.
            let order_free = name.ends_with("(default)");
            let opts = LoadOptions {
                ncpus: 2,
                ..LoadOptions::default()
            };
            let mut two = Hook::new(Image::load(object.clone(), &opts).unwrap(), i, 0).unwrap();
            let threads = pipeline::ReplayOptions {
                threads: 2,
                ..pipeline::ReplayOptions::default()
            };
            let mut source = pipeline::Source::fork(&packets).unwrap();
            let run = pipeline::replay(
                &mut two,
                source.as_mut(),
                Default::default(),
                &threads,
                None,
            )
            .unwrap_or_else(|e| panic!("{name} {}: {e}", p.name));
            assert_eq!(run.counters.errors, 0, "{name} {}", p.name);
            assert_eq!(run.counters.packets, frames.len() as u64);
            if order_free {
                let mut by_name = BTreeMap::new();
                for (v, n) in run.counters.verdicts.iter() {
                    *by_name.entry(v.name()).or_insert(0u64) += n;
                }
                assert_eq!(by_name, verdicts, "{name} {}: two workers", p.name);
                for (one, both) in hook.maps().iter().zip(two.maps()) {
                    if one.map_type().is_percpu() && one.name().contains("metrics") {
                        metrics += 1;
                        assert_eq!(
                            per_cpu_sums(one),
                            per_cpu_sums(both),
                            "{name} {}: map {}",
                            p.name,
                            one.name()
                        );
                    }
                }
            }
            println!("{name} {}: {verdicts:?}", p.name);
            assert!(
                !verdicts.contains_key("ABORTED"),
                "{name} {}: {verdicts:?}",
                p.name
            );
            entries += 1;
        }
    }
    println!("{entries} entry programs, {tail_calls} tail calls, {metrics} metrics maps compared");
    assert!(metrics >= 12, "only {metrics} metrics maps compared");
    assert!(entries >= 3 * 12, "only {entries} entry programs");
    assert!(tail_calls > 0);
}

/// A per-CPU map's entries with each value's u64 fields summed over CPUs.
fn per_cpu_sums(m: &maps::Map) -> Vec<(Vec<u8>, Vec<u64>)> {
    let size = (m.spec().value_size as usize).div_ceil(8) * 8;
    let mut out: Vec<_> = m
        .entries()
        .into_iter()
        .map(|(k, v)| {
            let mut sum = vec![0u64; size / 8];
            for cpu in v.chunks(size) {
                for (s, lane) in sum.iter_mut().zip(cpu.chunks(8)) {
                    *s += u64::from_le_bytes(lane.try_into().unwrap());
                }
            }
            (k, sum)
        })
        .filter(|(_, s)| s.iter().any(|&x| x != 0))
        .collect();
    out.sort();
    out
}

/// What a run gave, owned, to compare engines.
type Summary = (u64, String, Vec<u8>, Option<Redirect>, vm::Stats);

fn summary(out: &Outcome) -> Summary {
    let bytes = [out.meta, out.packet, out.frags].concat();
    (
        out.r0,
        out.verdict.name().to_string(),
        bytes,
        out.redirect,
        *out.stats,
    )
}

/// Builds a cilium/ebpf example with its own headers.
fn build_example(path: &str) -> obj::Object {
    let root = source_root("ebpf@v0.20.0").join("examples");
    let source = std::fs::read_to_string(root.join(path)).unwrap();
    let headers = root.join("headers");
    let bytes = compile_with(
        "clang-19",
        &path.replace('/', "_"),
        &source,
        &["-O2", "-mcpu=v3", "-I", headers.to_str().unwrap()],
    );
    obj::Object::parse(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn cilium_ebpf_examples_count_what_they_see() {
    // xdp: packets per IPv4 source in a 16-entry LRU hash.
    let object = build_example("xdp/xdp.c");
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let p = image.find_program(None).unwrap();
    let mut h = Hook::new(image, p, 0).unwrap();
    let mut expect: BTreeMap<[u8; 4], u32> = BTreeMap::new();
    for i in 0..200u32 {
        let src = [10, 0, 0, (i % 12) as u8 + 1];
        let pkt = Builder::udp(
            &format!("{}.{}.{}.{}", src[0], src[1], src[2], src[3]),
            "10.9.9.9",
            1,
            2,
        )
        .build();
        assert_eq!(
            h.run(&pkt, &meta(u64::from(i))).unwrap().verdict.name(),
            "PASS"
        );
        *expect.entry(src).or_default() += 1;
    }
    // IPv6 and runts are passed without counting.
    let v6 = Builder::udp("2001:db8::1", "2001:db8::2", 1, 2).build();
    h.run(&v6, &meta(999)).unwrap();
    h.run(&[0u8; 10], &meta(1000)).unwrap();
    let mut got: BTreeMap<[u8; 4], u32> = BTreeMap::new();
    for (k, v) in map(&h, "xdp_stats_map").entries() {
        got.insert(
            k.try_into().unwrap(),
            u32::from_le_bytes(v.try_into().unwrap()),
        );
    }
    assert_eq!(got, expect);

    // tcx: two tc programs counting into globals.
    let object = build_example("tcx/tcx.c");
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let p = image.find_program(Some("ingress_prog_func")).unwrap();
    let mut h = Hook::new(image, p, 0).unwrap();
    let frames = capture_frames();
    for f in &frames {
        let out = h
            .run(
                &f.data[..f.data.len().min(MAX_FRAME)],
                &meta(f.timestamp_ns),
            )
            .unwrap();
        assert_eq!(out.verdict.name(), "OK");
    }
    let var = h.object().global_var("ingress_pkt_count").unwrap();
    let data = h.maps()[var.map].user_lookup(&0u32.to_le_bytes()).unwrap();
    let count = u64::from_le_bytes(data[var.offset..var.offset + 8].try_into().unwrap());
    assert_eq!(count, frames.len() as u64);
}
