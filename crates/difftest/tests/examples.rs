//! `Done when` of the kernel backend: every example program agrees with the
//! kernel on every capture frame and on generated traffic.

use difftest::{DiffSummary, Differ};
use runtime::{Hook, Image, LoadOptions};
use testkit::kernel_available;

fn capture_frames() -> Vec<(u64, Vec<u8>)> {
    testkit::captures()
        .iter()
        .flat_map(|p| {
            capture::PcapSource::open(p)
                .unwrap()
                .map(|f| f.unwrap())
                .map(|f| (f.timestamp_ns, f.data))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Map entries that make the examples take their interesting paths for
/// the captures and for [`TRAFFIC`] (whose UDP goes to 10.255.0.1:80).
fn configure(name: &str, hook: &mut Hook) {
    let put = |map: &str, key: &[u8], value: &[u8]| {
        let i = hook.object().map_index(map).unwrap();
        hook.maps()[i].user_update(key, value, 0).unwrap();
    };
    let lpm4 = |len: u32, addr: [u8; 4]| [&len.to_le_bytes()[..], &addr].concat();
    match name {
        "xdp_ddos" => {
            put("blocklist_v4", &lpm4(16, [10, 66, 0, 0]), &[0; 8]);
            put("protected_ports", &53u16.to_le_bytes(), &[1]);
        }
        "xdp_lb" => {
            let vip = [[10u8, 255, 0, 1].as_slice(), &80u16.to_be_bytes(), &[17, 0]].concat();
            put("vip_map", &vip, &[0; 8]);
            for (i, r) in [[192u8, 168, 1, 10], [192, 168, 1, 11], [192, 168, 1, 12]]
                .iter()
                .enumerate()
            {
                put("reals", &(i as u32).to_le_bytes(), r);
            }
            for pos in 0..251u32 {
                put("ch_rings", &pos.to_le_bytes(), &(pos % 3).to_le_bytes());
            }
            put(
                "lb_config",
                &0u32.to_le_bytes(),
                &[2, 0, 0, 0, 0x99, 0x99, 0, 0, 10, 0, 0, 254],
            );
        }
        "xdp_router" => {
            // Loopback (ifindex 1): the kernel's devmap wants a real device.
            let nh = [
                1u32.to_le_bytes().as_slice(),
                &[2, 0, 0, 0, 7, 7],
                &[2, 0, 0, 0, 0x77, 0x77],
            ]
            .concat();
            put("routes_v4", &lpm4(16, [10, 255, 0, 0]), &nh);
            put("routes_v4", &lpm4(8, [192, 0, 0, 0]), &nh);
            put("tx_ports", &1u32.to_le_bytes(), &1u32.to_le_bytes());
        }
        "esp_3des" | "esp_aes" => {
            // The SA: SPI, then the key at byte 16; the program expands it.
            let i = hook.object().map_index("esp_sa").unwrap();
            let mut sa = vec![0u8; hook.maps()[i].spec().value_size as usize];
            sa[..4].copy_from_slice(&0x5eedu32.to_be_bytes());
            let key = b"an ESP key for difftests";
            let n = if name == "esp_aes" { 16 } else { 24 };
            sa[16..16 + n].copy_from_slice(&key[..n]);
            put("esp_sa", &0u32.to_le_bytes(), &sa);
        }
        "fwd_radix" | "fwd_lctrie" | "fwd_lpm_trie" => {
            // A synthetic table of 2000 routes (a default route among them):
            // walks of several levels on both sides. The LC-trie's root
            // branches 8 bits, not the paper's 16: fewer entries to compare.
            let t = lpm::RouteTable::synthetic(&lpm::Synth {
                prefixes: 2000,
                ..lpm::Synth::default()
            });
            let entries = match name {
                "fwd_radix" => lpm::radix_entries(&t),
                "fwd_lctrie" => {
                    let p = lpm::LcParams {
                        root_branch: 8,
                        ..lpm::LcParams::default()
                    };
                    lpm::lctrie_entries(&t, &p)
                }
                _ => lpm::lpm_trie_entries(&t),
            };
            for (map, k, v) in entries.unwrap() {
                put(&map, &k, &v);
            }
        }
        _ => {}
    }
}

fn hooks(name: &str) -> Vec<Hook> {
    let bytes = object(name);
    let object = obj::Object::parse(bytes).unwrap();
    let n = object.programs.len();
    (0..n)
        .filter_map(|p| {
            let object = obj::Object::parse(bytes).unwrap();
            let mut opts = LoadOptions {
                ncpus: kernel::possible_cpus() as u32,
                ..LoadOptions::default()
            };
            // Smaller LRU tables (on both sides): the kernel walks every
            // bucket when the maps are compared after each packet.
            for lru in ["rate_limit", "conn_table"] {
                if object.map_index(lru).is_some() {
                    opts.map_sizes.insert(lru.to_string(), 4096);
                }
            }
            let image = Image::load(object, &opts).unwrap();
            let mut hook = Hook::new(image, p, 0).ok()?;
            configure(name, &mut hook);
            Some(hook)
        })
        .collect()
}

fn report(name: &str, s: &DiffSummary) {
    eprintln!(
        "{name}: {} packets, {} compared, {} divergences, {} not comparable {:?}",
        s.packets, s.compared, s.divergences, s.not_comparable, s.not_comparable_reasons
    );
    for d in &s.first {
        eprintln!("  packet {} ({} bytes):", d.packet, d.len);
        for x in &d.differences {
            eprintln!("    {x:?}");
        }
    }
}

/// An example or a context probe.
fn object(name: &str) -> &'static [u8] {
    programs::object(name)
        .or_else(|| programs::probes().find(|(n, _)| *n == name).map(|(_, o)| o))
        .unwrap()
}

/// Diffs every program of every example and context probe over `frames`;
/// returns the programs that diverged.
fn diff_all(frames: &[(u64, Vec<u8>)]) -> Vec<String> {
    let mut failed = Vec::new();
    let names = programs::names().chain(programs::probes().map(|(n, _)| n));
    for name in names {
        for hook in hooks(name) {
            let prog = hook.program().name.clone();
            let mut d = Differ::new(hook, object(name), name, 5)
                .unwrap_or_else(|e| panic!("{name}/{prog}: {e}"));
            for (i, (ts, f)) in frames.iter().enumerate() {
                d.packet(i as u64, *ts, f);
            }
            let s = d.into_summary();
            report(&format!("{name}/{prog}"), &s);
            assert_eq!(s.packets, frames.len() as u64);
            assert!(s.compared > 0, "{name}/{prog}: nothing compared");
            if s.divergences > 0 {
                failed.push(format!("{name}/{prog}: {}", s.divergences));
            }
        }
    }
    failed
}

#[test]
fn every_example_agrees_with_the_kernel_on_every_capture() {
    if !kernel_available("differential test over the captures") {
        return;
    }
    let frames = capture_frames();
    let failed = diff_all(&frames);
    assert!(failed.is_empty(), "divergences: {failed:?}");
}

/// The demo's traffic (clients, a blocked prefix, a source over its rate,
/// a protected port) plus IPv6 and TCP to port 23, at a tenth of the size,
/// and jumbo frames (XDP fragments).
const TRAFFIC: [&str; 7] = [
    "udp,flows=200,count=6000,rate=100000,src=10.1.0.0/16,dport=80",
    "udp,flows=20,count=2000,rate=33334,src=10.66.0.0/16,dport=80",
    "tcp,flows=1,count=1500,rate=25000,src=10.9.9.9/32,dport=443",
    "udp,flows=50,count=500,rate=8334,src=10.2.0.0/16,dport=53",
    "tcp,v6,flows=30,count=600,rate=10000,dport=23",
    "icmp,flows=4,count=200,rate=2000,size=1400",
    "udp,flows=2,count=40,rate=400,size=9000",
];

#[test]
fn every_example_agrees_with_the_kernel_on_generated_traffic() {
    if !kernel_available("differential test over generated traffic") {
        return;
    }
    let specs: Vec<packet::GenSpec> = TRAFFIC
        .iter()
        .map(|s| packet::GenSpec::parse(s).unwrap())
        .collect();
    let frames: Vec<(u64, Vec<u8>)> = packet::merge(&specs).collect();
    let failed = diff_all(&frames);
    assert!(failed.is_empty(), "divergences: {failed:?}");
}

/// A full LRU map evicts exactly in the VM and approximately in the
/// kernel: what follows is reported as not comparable, with the reason,
/// and the maps are brought back in step.
#[test]
fn lru_evictions_are_labelled_not_comparable() {
    if !kernel_available("differential test of LRU evictions") {
        return;
    }
    let bytes = programs::object("xdp_ddos").unwrap();
    let object = obj::Object::parse(bytes).unwrap();
    let mut opts = LoadOptions {
        ncpus: kernel::possible_cpus() as u32,
        ..LoadOptions::default()
    };
    opts.map_sizes.insert("rate_limit".into(), 16);
    let hook = Hook::new(Image::load(object, &opts).unwrap(), 0, 0).unwrap();
    let mut d = Differ::new(hook, bytes, "xdp_ddos", 5).unwrap();
    let spec = packet::GenSpec::parse("udp,flows=100,count=400,src=10.1.0.0/16").unwrap();
    for (i, (ts, f)) in spec.packets().enumerate() {
        d.packet(i as u64, ts, &f);
    }
    let s = d.into_summary();
    report("xdp_ddos with 16 buckets", &s);
    assert_eq!(s.divergences, 0);
    assert!(s.not_comparable > 0);
    assert!(
        s.not_comparable_reasons
            .keys()
            .all(|r| r.contains("LRU eviction")),
        "{:?}",
        s.not_comparable_reasons
    );
}

/// A differential run of `xdp_count` on the kernel's CPU count, keeping
/// 5 divergences in full.
fn count_differ() -> Differ {
    let bytes = programs::object("xdp_count").unwrap();
    let object = obj::Object::parse(bytes).unwrap();
    let opts = LoadOptions {
        ncpus: kernel::possible_cpus() as u32,
        ..LoadOptions::default()
    };
    let hook = Hook::new(Image::load(object, &opts).unwrap(), 0, 0).unwrap();
    Differ::new(hook, bytes, "xdp_count", 5).unwrap()
}

/// The comparison sees a map changed on one side only, and reports the
/// entry; the kernel's array read in one buffer matches its entries.
#[test]
fn a_map_changed_on_one_side_is_a_divergence() {
    if !kernel_available("differential test of a one-sided map change") {
        return;
    }
    let mut d = count_differ();
    let spec = packet::GenSpec::parse("udp,flows=2,count=4").unwrap();
    for (i, (ts, f)) in spec.packets().enumerate() {
        assert!(matches!(
            d.packet(i as u64, ts, &f),
            difftest::Comparison::Same
        ));
    }
    let stats = d
        .kernel_object()
        .maps()
        .unwrap()
        .into_iter()
        .find(|m| m.name == "proto_stats")
        .unwrap();
    let flat: Vec<u8> = stats
        .entries()
        .unwrap()
        .into_iter()
        .flat_map(|(_, v)| v)
        .collect();
    assert_eq!(stats.array_values().unwrap().unwrap(), flat);
    // Behind the VM's back: key 99 gets a count in the kernel only.
    let mut value = vec![0u8; stats.user_value_len()];
    value[0] = 7;
    stats.update(&99u32.to_le_bytes(), &value, 0).unwrap();
    // The VM's run does not touch key 99: the change is found by the next
    // full comparison of the maps, which says since which packet.
    let (ts, f) = spec.packets().next().unwrap();
    let every = d.full_every();
    let div = (4..4 + every)
        .find_map(|i| match d.packet(i, ts, &f) {
            difftest::Comparison::Same => None,
            difftest::Comparison::Diverged(div) => Some(div),
            other => panic!("{other:?}"),
        })
        .expect("the change was not seen");
    assert!(matches!(div.since_packet, Some(s) if s <= 4), "{div:?}");
    assert!(
        div.differences.iter().any(|x| matches!(x,
            difftest::Difference::Map { map, key, .. } if map == "proto_stats" && key == "63000000")),
        "{:?}",
        div.differences
    );
    // The maps were brought back in step: the next packet agrees.
    let next = div.packet + 1;
    assert!(matches!(d.packet(next, ts, &f), difftest::Comparison::Same));
    // A change the VM's run makes is compared at once: here the kernel's
    // copy of the entry the packets count in is changed behind the VM's
    // back, and the next packet's comparison of that entry shows it.
    let udp = 17u32.to_le_bytes();
    let mut value = stats.lookup(&udp).unwrap().unwrap();
    value[0] ^= 0x80;
    stats.update(&udp, &value, 0).unwrap();
    let difftest::Comparison::Diverged(div) = d.packet(next + 1, ts, &f) else {
        panic!("the change was not seen at once");
    };
    assert_eq!(div.since_packet, None);
    assert!(
        div.differences.iter().any(|x| matches!(x,
            difftest::Difference::Map { map, key, .. } if map == "proto_stats" && key == "11000000")),
        "{:?}",
        div.differences
    );
    let s = d.into_summary();
    assert_eq!(s.divergences, 2);
    assert!(s.full_map_comparisons >= 2);
}

/// A change only the kernel made and no later full comparison saw is
/// found by the final one, at the end of the run.
#[test]
fn the_end_of_a_run_compares_every_entry() {
    if !kernel_available("differential test of the final comparison") {
        return;
    }
    let mut d = count_differ();
    let stats = d
        .kernel_object()
        .maps()
        .unwrap()
        .into_iter()
        .find(|m| m.name == "proto_stats")
        .unwrap();
    let spec = packet::GenSpec::parse("udp,flows=2,count=3").unwrap();
    let mut value = vec![0u8; stats.user_value_len()];
    value[0] = 1;
    stats.update(&200u32.to_le_bytes(), &value, 0).unwrap();
    for (i, (ts, f)) in spec.packets().enumerate() {
        assert!(matches!(
            d.packet(i as u64, ts, &f),
            difftest::Comparison::Same
        ));
    }
    let s = d.into_summary();
    assert_eq!(s.divergences, 1);
    assert_eq!(s.first[0].packet, 2);
    assert_eq!(s.first[0].since_packet, Some(0));
}

/// Devmap and cpumap entry programs: the kernel's test run refuses their
/// attach types, so the kernel runs a plain-XDP copy, and the report says so.
#[test]
fn devmap_and_cpumap_programs_are_compared_as_plain_xdp() {
    if !kernel_available("differential test of devmap and cpumap programs") {
        return;
    }
    let source = r#"
#include "parse.h"
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static __always_inline int count(struct xdp_md *ctx, __u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&seen, &which);
	if (v)
		__sync_fetch_and_add(v, ctx->data_end - ctx->data);
	return (ctx->data_end - ctx->data) > 100 ? XDP_DROP : XDP_PASS;
}

SEC("xdp/devmap")
int on_devmap(struct xdp_md *ctx) { return count(ctx, 0); }

SEC("xdp/cpumap")
int on_cpumap(struct xdp_md *ctx) { return count(ctx, 1); }

char _license[] SEC("license") = "GPL";
"#;
    let bytes = programs::compile::compile("entry_progs", source);
    let spec = packet::GenSpec::parse("udp,flows=3,count=20").unwrap();
    let big = packet::GenSpec::parse("udp,flows=1,count=5,size=200").unwrap();
    for (p, kind) in [(0, "devmap"), (1, "cpumap")] {
        let object = obj::Object::parse(&bytes).unwrap();
        let opts = LoadOptions {
            ncpus: kernel::possible_cpus() as u32,
            ..LoadOptions::default()
        };
        let hook = Hook::new(Image::load(object, &opts).unwrap(), p, 0).unwrap();
        let mut d = Differ::new(hook, &bytes, "entry_progs", 5).unwrap();
        for (i, (ts, f)) in spec.packets().chain(big.packets()).enumerate() {
            d.packet(i as u64, ts, &f);
        }
        let s = d.into_summary();
        report(kind, &s);
        assert_eq!((s.compared, s.divergences), (25, 0));
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains(kind) && n.contains("plain XDP")),
            "{:?}",
            s.notes
        );
    }
}

/// A program that reads the clock and has a callback (`bpf_loop`): the
/// kernel's copy rewritten for the shared clock keeps the BTF function
/// records the callback needs, with one for the appended clock reader.
#[test]
fn clock_readers_with_callbacks_keep_their_function_info() {
    if !kernel_available("differential test of a clock reader with a callback") {
        return;
    }
    let source = r#"
#include "parse.h"
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last SEC(".maps");

static long step(__u32 i, void *data)
{
	__u64 *acc = data;
	*acc += i;
	return 0;
}

SEC("xdp")
int clock_loop(struct xdp_md *ctx)
{
	__u64 acc = bpf_ktime_get_ns();
	bpf_loop(4, step, &acc, 0);
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&last, &k);
	if (v)
		*v = acc;
	return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
"#;
    let bytes = programs::compile::compile("clock_loop", source);
    let object = obj::Object::parse(&bytes).unwrap();
    let opts = LoadOptions {
        ncpus: kernel::possible_cpus() as u32,
        ..LoadOptions::default()
    };
    let hook = Hook::new(Image::load(object, &opts).unwrap(), 0, 0).unwrap();
    let mut d = Differ::new(hook, &bytes, "clock_loop", 5).unwrap();
    let spec = packet::GenSpec::parse("udp,flows=2,count=10").unwrap();
    for (i, (ts, f)) in spec.packets().enumerate() {
        d.packet(i as u64, ts, &f);
    }
    let s = d.into_summary();
    report("clock_loop", &s);
    assert_eq!((s.compared, s.divergences), (10, 0));
}
