//! Several workers give what one gives: the same verdict counts and the
//! same final maps (per-CPU slots summed over the workers) for programs
//! whose result does not depend on the order of packets across flows.

use maps::Map;
use pipeline::{
    Capture, Generated, Packets, ReplayCounters, ReplayOptions, Sharding, Sinks, Source,
};
use runtime::{Hook, Image, LoadOptions};

/// Workers in the multi-threaded runs (per-CPU maps get a slot each).
const WORKERS: usize = 3;

fn hook(name: &str) -> Hook {
    let object = obj::Object::parse(programs::object(name).unwrap()).unwrap();
    let opts = LoadOptions {
        ncpus: WORKERS as u32,
        ..LoadOptions::default()
    };
    let image = Image::load(object, &opts).unwrap();
    let prog = image.find_program(None).unwrap();
    Hook::new(image, prog, 0).unwrap()
}

fn update(h: &Hook, map: &str, key: &[u8], value: &[u8]) {
    let i = h.object().map_index(map).unwrap();
    h.maps()[i].user_update(key, value, 0).unwrap();
}

/// A map's contents with per-CPU values summed over CPUs as u64 lanes
/// (every per-CPU map of the examples holds u64 counters).
fn contents(m: &Map) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut entries = m.entries();
    if m.map_type().is_percpu() {
        let size = (m.spec().value_size as usize).div_ceil(8) * 8;
        for (_, v) in &mut entries {
            let mut sum = vec![0u64; size / 8];
            for cpu in v.chunks(size) {
                for (s, lane) in sum.iter_mut().zip(cpu.chunks(8)) {
                    *s += u64::from_le_bytes(lane.try_into().unwrap());
                }
            }
            *v = sum.iter().flat_map(|s| s.to_le_bytes()).collect();
        }
    }
    entries.sort();
    entries
}

/// Each map's entries.
type Contents = Vec<Vec<(Vec<u8>, Vec<u8>)>>;

fn replay(
    name: &str,
    setup: &dyn Fn(&Hook),
    source: &mut dyn Source,
    threads: usize,
) -> (ReplayCounters, Contents) {
    let mut h = hook(name);
    setup(&h);
    let opts = ReplayOptions {
        threads,
        shard: Sharding::Symmetric,
        ..ReplayOptions::default()
    };
    let s = pipeline::replay(&mut h, source, Sinks::new(), &opts, None).unwrap();
    assert_eq!(s.threads, threads);
    assert!(s.source_error.is_none());
    (s.counters, h.maps().iter().map(contents).collect())
}

fn same_as_one_thread(name: &str, setup: &dyn Fn(&Hook), source: &dyn Fn() -> Box<dyn Source>) {
    let (one, one_maps) = replay(name, setup, source().as_mut(), 1);
    let (many, many_maps) = replay(name, setup, source().as_mut(), WORKERS);
    assert!(one.packets > 0);
    assert_eq!(one.packets, many.packets, "{name}");
    let mut a: Vec<_> = one.verdicts.iter().collect();
    let mut b: Vec<_> = many.verdicts.iter().collect();
    a.sort_by_key(|(v, _)| format!("{v:?}"));
    b.sort_by_key(|(v, _)| format!("{v:?}"));
    assert_eq!(a, b, "{name}: verdicts");
    assert_eq!(one.errors, many.errors, "{name}: errors");
    assert_eq!(one.insns.count(), many.insns.count());
    assert_eq!(one.insns.mean(), many.insns.mean(), "{name}: instructions");
    let h = hook(name);
    for (i, (x, y)) in one_maps.iter().zip(&many_maps).enumerate() {
        let differ: Vec<_> = x.iter().zip(y).filter(|(a, b)| a != b).take(3).collect();
        assert!(
            x.len() == y.len() && differ.is_empty(),
            "{name}: map {}: {} vs {} entries, first differences {differ:?}",
            h.maps()[i].name(),
            x.len(),
            y.len()
        );
    }
}

/// Streams that start apart: a program's clock (`bpf_ktime_get_ns`)
/// follows packet timestamps and moves 1 ns per call, so flows sharing a
/// timestamp would see clocks that depend on the order across flows.
fn traffic() -> Box<dyn Source> {
    Box::new(
        Generated::parse(&[
            "udp,flows=300,count=20000,rate=200000,src=10.1.0.0/16,dport=80".into(),
            "tcp,flows=40,count=6000,rate=60000,start=1001,src=10.66.0.0/16,dport=443".into(),
            "udp,flows=50,count=3000,rate=30000,start=2003,src=10.2.0.0/16,dport=53".into(),
            "v6,udp,flows=30,count=3000,rate=30000,start=3007,dport=53".into(),
            "icmp,flows=5,count=500,rate=5000,start=4009".into(),
        ])
        .unwrap(),
    )
}

#[test]
fn counters_and_per_cpu_maps_sum_to_one_thread() {
    same_as_one_thread("xdp_count", &|_| {}, &traffic);
    same_as_one_thread("xdp_parse_tx", &|_| {}, &traffic);
    same_as_one_thread("tc_classify", &|_| {}, &traffic);
}

#[test]
fn the_ddos_filter_rate_limits_each_source_alike() {
    let setup = |h: &Hook| {
        let mut prefix = 16u32.to_le_bytes().to_vec();
        prefix.extend([10, 66, 0, 0]);
        update(h, "blocklist_v4", &prefix, &0u64.to_le_bytes());
        update(h, "protected_ports", &53u16.to_le_bytes(), &[1]);
    };
    same_as_one_thread("xdp_ddos", &setup, &traffic);
}

/// A source read once only (as a live interface would be): the replay
/// then runs one dispatcher that hands each worker its packets.
struct ReadOnce(Packets);

impl Source for ReadOnce {
    fn fill(&mut self, batch: &mut pipeline::Batch) -> Result<(), pipeline::SourceError> {
        self.0.fill(batch)
    }
}

#[test]
fn every_capture_counts_alike() {
    // Every frame every capture holds, as one stream.
    let mut all = Vec::new();
    for f in &testkit::captures() {
        let mut c = Capture::open(f).unwrap();
        let _ = pipeline::for_each_packet(&mut c, None, |info, data| {
            all.push((info.timestamp_ns, data.to_vec()));
        });
    }
    assert!(all.len() > 3_000, "{} frames", all.len());
    same_as_one_thread("xdp_count", &|_| {}, &|| {
        Box::new(Packets::new(all.clone()))
    });
    same_as_one_thread("tc_classify", &|_| {}, &|| {
        Box::new(Packets::new(all.clone()))
    });
    same_as_one_thread("xdp_count", &|_| {}, &|| {
        Box::new(ReadOnce(Packets::new(all.clone())))
    });
}

#[test]
fn a_dispatcher_feeds_workers_alike() {
    let generated = || {
        let mut all = Vec::new();
        pipeline::for_each_packet(traffic().as_mut(), None, |info, data| {
            all.push((info.timestamp_ns, data.to_vec()));
        })
        .unwrap();
        Box::new(ReadOnce(Packets::new(all))) as Box<dyn Source>
    };
    same_as_one_thread("xdp_count", &|_| {}, &generated);
    same_as_one_thread("tc_classify", &|_| {}, &generated);
}

#[test]
fn outputs_keep_each_flows_order() {
    let passed = |threads: usize| {
        let mut h = hook("xdp_parse_tx");
        let collect = pipeline::Collect::default();
        let got = collect.packets.clone();
        let mut sinks = Sinks::new();
        sinks.add(&[pipeline::Route::Tx], Box::new(collect));
        let opts = ReplayOptions {
            threads,
            ..ReplayOptions::default()
        };
        pipeline::replay(&mut h, traffic().as_mut(), sinks, &opts, None).unwrap();
        let mut flows: std::collections::BTreeMap<u64, Vec<(u64, Vec<u8>)>> = Default::default();
        for (ts, p) in got.lock().unwrap().drain(..) {
            flows
                .entry(pipeline::flow_hash(&p, true))
                .or_default()
                .push((ts, p));
        }
        flows
    };
    let (one, many) = (passed(1), passed(WORKERS));
    assert!(one.len() > 100, "{} flows", one.len());
    assert_eq!(one, many, "each flow's packets, in order");
}

/// What `name` sends on through `sinks`'s routes, replayed on `threads`.
fn routed(
    name: &str,
    routes: &[pipeline::Route],
    source: &mut dyn Source,
    threads: usize,
) -> Vec<(u64, Vec<u8>)> {
    let mut h = hook(name);
    let collect = pipeline::Collect::default();
    let got = collect.packets.clone();
    let mut sinks = Sinks::new();
    sinks.add(routes, Box::new(collect));
    let opts = ReplayOptions {
        threads,
        ..ReplayOptions::default()
    };
    pipeline::replay(&mut h, source, sinks, &opts, None).unwrap();
    std::mem::take(&mut *got.lock().unwrap())
}

#[test]
fn outputs_come_out_in_the_order_one_thread_writes_them() {
    use pipeline::Route;
    let one = routed("xdp_parse_tx", &[Route::Tx], traffic().as_mut(), 1);
    assert!(one.len() > 10_000, "{} packets", one.len());
    assert!(
        one.windows(2).all(|w| w[0].0 <= w[1].0),
        "one thread: time order"
    );
    let forked = routed("xdp_parse_tx", &[Route::Tx], traffic().as_mut(), WORKERS);
    assert!(forked == one, "forked workers: the one-thread order");
    let mut all = Vec::new();
    pipeline::for_each_packet(traffic().as_mut(), None, |info, data| {
        all.push((info.timestamp_ns, data.to_vec()));
    })
    .unwrap();
    let read_once = || ReadOnce(Packets::new(all.clone()));
    let dispatched = routed("xdp_parse_tx", &[Route::Tx], &mut read_once(), WORKERS);
    assert!(dispatched == one, "a dispatcher: the one-thread order");

    // One flow: every packet goes to one worker while the others hold
    // nothing; more bytes than a worker may hold before the dispatcher is
    // asked to move every worker's mark on.
    let big: Vec<(u64, Vec<u8>)> = (0..40_000u64)
        .map(|i| {
            let mut p = all[0].1.clone();
            p.resize(200, i as u8);
            (i * 1000, p)
        })
        .collect();
    let one = routed(
        "xdp_pass",
        &[Route::Pass],
        &mut Packets::new(big.clone()),
        1,
    );
    assert_eq!(one, big);
    let forked = routed(
        "xdp_pass",
        &[Route::Pass],
        &mut Packets::new(big.clone()),
        WORKERS,
    );
    assert!(forked == big, "one flow, forked");
    let dispatched = routed(
        "xdp_pass",
        &[Route::Pass],
        &mut ReadOnce(Packets::new(big.clone())),
        WORKERS,
    );
    assert!(dispatched == big, "one flow, dispatched");
}

#[test]
fn a_limit_counts_the_packets_read_whatever_the_workers() {
    let limited = |threads: usize, source: &mut dyn Source| {
        let mut h = hook("xdp_count");
        let opts = ReplayOptions {
            threads,
            limit: Some(1_000),
            ..ReplayOptions::default()
        };
        let s = pipeline::replay(&mut h, source, Sinks::new(), &opts, None).unwrap();
        (s.counters.packets, contents(&h.maps()[0]))
    };
    let one = limited(1, traffic().as_mut());
    assert_eq!(one.0, 1_000);
    assert_eq!(limited(WORKERS, traffic().as_mut()), one, "forked workers");
    let mut all = Vec::new();
    pipeline::for_each_packet(traffic().as_mut(), None, |info, data| {
        all.push((info.timestamp_ns, data.to_vec()));
    })
    .unwrap();
    assert_eq!(
        limited(WORKERS, &mut ReadOnce(Packets::new(all))),
        one,
        "a dispatcher"
    );
}
