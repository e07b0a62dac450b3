//! Runs over the byte ranges of a plan, each kept raw ([`ShardRun`], sent
//! as bytes), proven and merged ([`merge_runs`]): the report is the one
//! process's run over the same packets, key for key (`sluice run --json`),
//! but for the time taken and what was read. A stateful program's costs
//! are the exception: the first packet of a flow in a range finds no
//! state and may take another path (an insert for an update), so its
//! instructions and helper calls differ; verdicts, counts and maps do not.

use std::path::{Path, PathBuf};

use engine::{HookSpec, MapPolicies, MapPolicy, Origin, RunSpec, ShardRun, SourceSpec, merge_runs};
use proptest::prelude::*;
use serde_json::Value;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("engine-shard-merge-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `n` frames from 300 sources: UDP (some to port 53), TCP, and ARP
/// frames (not IP); a millisecond apart from `t0`.
fn frames(n: usize, t0: u64, seed: u64) -> Vec<(u64, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let x = (i as u64).wrapping_mul(2654435761).wrapping_add(seed) as usize;
            let src = format!("10.{}.{}.{}", x % 3, (x / 3) % 10, (x / 30) % 10 + 1);
            let frame = match x % 7 {
                0 => {
                    let mut arp = vec![0xff; 6];
                    arp.extend([2, 0, 0, 0, 0, 1, 0x08, 0x06]);
                    arp.extend(std::iter::repeat_n(0u8, 28 + x % 20));
                    arp
                }
                1 | 2 => packet::Builder::tcp(&src, "10.9.9.9", 1000 + (x % 50) as u16, 80)
                    .payload(&vec![7; x % 300])
                    .build(),
                3 => packet::Builder::udp(&src, "10.9.9.9", 5353, 53).build(),
                _ => packet::Builder::udp(&src, "10.9.9.9", 2000 + (x % 9) as u16, 9000)
                    .payload(&vec![1; x % 900])
                    .build(),
            };
            (t0 + i as u64 * 1_000_000, frame)
        })
        .collect()
}

/// Writes `frames` as pcap, or pcapng when `path` ends in `.pcapng`.
fn write(path: &Path, frames: &[(u64, Vec<u8>)]) {
    let mut sink = capture::PcapSink::create(path).unwrap();
    for (ts, f) in frames {
        sink.write(f, *ts).unwrap();
    }
    sink.finish().unwrap();
}

fn xdp_count() -> HookSpec {
    HookSpec::from_bytes("xdp_count.o", programs::object("xdp_count").unwrap())
}

/// The DDoS filter, port 53 protected, every source's token bucket always
/// full (a rate no source reaches): its state is the last packet's.
fn xdp_ddos() -> HookSpec {
    let mut hook = HookSpec::from_bytes("xdp_ddos.o", programs::object("xdp_ddos").unwrap());
    hook.settings.set = vec!["rate_pps=1000000000".into()];
    hook.contents.map_update = vec![engine::MapUpdate {
        map: "protected_ports".into(),
        key: "53".into(),
        value: "1".into(),
    }];
    hook
}

/// classify: a hash of per-flow counters, a per-CPU array of totals.
fn classify() -> HookSpec {
    HookSpec::from_bytes("classify.o", programs::object("classify").unwrap())
}

/// The report without what differs between one process and a merge: the
/// time taken, what was read, the merge's own account.
fn comparable(mut v: Value) -> Value {
    let o = v.as_object_mut().unwrap();
    // A merge does not say how one process's threads shared the packets.
    let unsaid = ["shard", "shard_note"];
    for k in ["seconds", "packets_per_second", "source", "merged"]
        .into_iter()
        .chain(unsaid)
    {
        o.remove(k);
    }
    v
}

/// [`comparable`], without the costs per packet (a stateful program's
/// path depends on the state a range starts from).
fn without_costs(v: Value) -> Value {
    let mut v = comparable(v);
    let o = v.as_object_mut().unwrap();
    for k in [
        "insns_per_packet",
        "helper_calls_per_packet",
        "memory_per_packet",
    ] {
        o.remove(k);
    }
    v
}

fn one_process(hook: &HookSpec, path: &Path) -> Value {
    let report = RunSpec::new(hook.clone(), SourceSpec::capture(path))
        .run(None, None)
        .unwrap();
    serde_json::to_value(&report).unwrap()
}

/// One range's run, sent as bytes.
fn run_range(
    hook: &HookSpec,
    shard: &capture::Shard,
    proven: Option<capture::Position>,
) -> ShardRun {
    let origin = Origin::Range {
        path: shard.path.clone(),
        start: shard.start,
        end: shard.end,
        proven,
        foreign: engine::Foreign::Skip,
    };
    let ran = RunSpec::new(hook.clone(), SourceSpec::new(origin))
        .run_range(None, None)
        .unwrap();
    ShardRun::from_bytes(&ran.run.to_bytes().unwrap()).unwrap()
}

/// Every range of `shards` run, the unproven read again until the check
/// lists none: the runs, and how many were redone.
fn run_all(hook: &HookSpec, shards: &[capture::Shard]) -> (Vec<ShardRun>, usize) {
    let mut runs: Vec<ShardRun> = shards.iter().map(|s| run_range(hook, s, None)).collect();
    let mut redone = 0;
    loop {
        let boundaries: Vec<_> = runs.iter().map(|r| r.boundary.clone()).collect();
        let redo = capture::check(&boundaries).unwrap();
        if redo.is_empty() {
            return (runs, redone);
        }
        for r in redo {
            runs[r.index] = run_range(hook, &r.shard, Some(r.from));
            redone += 1;
        }
    }
}

/// The merged report of `inputs` cut into ranges of about `split` bytes.
fn merged(hook: &HookSpec, inputs: &[&Path], split: u64, policies: &MapPolicies) -> (Value, usize) {
    let names: Vec<&str> = inputs.iter().map(|p| p.to_str().unwrap()).collect();
    let shards = capture::plan(&names, split).unwrap();
    let (runs, _) = run_all(hook, &shards);
    let merged = merge_runs(hook, &runs, policies, 16).unwrap();
    let v = serde_json::to_value(&merged.report).unwrap();
    assert_eq!(v["merged"]["shards"], shards.len());
    (v, shards.len())
}

/// `one` and `merged` the same, costs too when `costs`.
fn assert_same(one: &Value, merged: &Value, what: &str, costs: bool) {
    let strip = if costs { comparable } else { without_costs };
    let (a, b) = (strip(one.clone()), strip(merged.clone()));
    let keys: Vec<&String> = a
        .as_object()
        .unwrap()
        .keys()
        .chain(b.as_object().unwrap().keys())
        .collect();
    let differ: Vec<String> = keys
        .into_iter()
        .filter(|k| a.get(k.as_str()) != b.get(k.as_str()))
        .map(|k| {
            format!(
                "{k}:\n  one process: {}\n  merged:      {}",
                a.get(k.as_str()).unwrap_or(&Value::Null),
                b.get(k.as_str()).unwrap_or(&Value::Null)
            )
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{what}: merged differs in\n{}",
        differ.join("\n")
    );
}

/// `name`'s capture (pcap and pcapng) in 1, 3, 7 and 16 ranges: merged
/// as one process (its costs too when `costs`).
fn each_cut(hook: &HookSpec, policies: &MapPolicies, name: &str, costs: bool) {
    for ext in ["pcap", "pcapng"] {
        let path = dir().join(format!("{name}.{ext}"));
        write(&path, &frames(3000, 1_700_000_000_000_000_000, 1));
        let one = one_process(hook, &path);
        assert_eq!(one["packets"], 3000);
        let size = std::fs::metadata(&path).unwrap().len();
        for n in [1u64, 3, 7, 16] {
            let (m, shards) = merged(hook, &[&path], size.div_ceil(n), policies);
            assert_eq!(shards as u64, n, "{ext}: {n} ranges planned");
            assert_same(
                &one,
                &m,
                &format!("{name}.{ext} in {n} ranges"),
                costs || n == 1,
            );
        }
    }
}

#[test]
fn xdp_count_merged_is_one_process() {
    each_cut(&xdp_count(), &MapPolicies::new(), "count", true);
}

#[test]
fn xdp_ddos_merged_is_one_process() {
    // The token buckets are state, not counters: the last range's value.
    let policies = MapPolicies::from([("rate_limit".to_string(), MapPolicy::Union)]);
    each_cut(&xdp_ddos(), &policies, "ddos", false);
    // By default a hash of integers is summed, and the report says so.
    let path = dir().join("ddos.pcap");
    let (m, _) = merged(&xdp_ddos(), &[&path], 20_000, &MapPolicies::new());
    let p = &m["merged"]["map_policies"];
    assert_eq!(p["rate_limit"], "sum");
    assert_eq!(p["drop_stats"], "sum");
    assert_eq!(p["protected_ports"], "sum");
    assert_eq!(p["blocklist_v4"], "union");
}

#[test]
fn ring_buffer_records_merged_are_one_processs() {
    // burn with to_user: a ring-buffer record per packet, counted per range.
    let mut hook = HookSpec::from_bytes("burn.o", programs::object("burn").unwrap());
    hook.settings.set = vec!["to_user=1".into()];
    let path = dir().join("burn.pcap");
    write(&path, &frames(1500, 4_000_000_000, 4));
    let one = one_process(&hook, &path);
    assert!(
        one["ringbuf"]["copies"].as_u64().unwrap() > 1000,
        "{}",
        one["ringbuf"]
    );
    let size = std::fs::metadata(&path).unwrap().len();
    for n in [2u64, 9] {
        let (m, _) = merged(&hook, &[&path], size.div_ceil(n), &MapPolicies::new());
        assert_same(&one, &m, &format!("burn in {n} ranges"), true);
        assert_eq!(m["merged"]["map_policies"]["copies"], "last");
    }
}

#[test]
fn a_hash_of_counters_merged_is_one_process() {
    each_cut(&classify(), &MapPolicies::new(), "classify", false);
}

#[test]
fn a_list_of_captures_merged_is_one_run_over_their_concatenation() {
    let d = dir();
    let mut all = Vec::new();
    let mut paths = Vec::new();
    for i in 0..4u64 {
        let f = frames(500 + 137 * i as usize, 1_000_000_000_000 * (i + 1), i);
        let path = d.join(format!(
            "list-{i}.{}",
            if i % 2 == 0 { "pcap" } else { "pcapng" }
        ));
        write(&path, &f);
        all.extend(f);
        paths.push(path);
    }
    let concat = d.join("list-all.pcap");
    write(&concat, &all);
    let inputs: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    for (hook, costs) in [(xdp_count(), true), (classify(), false)] {
        let one = one_process(&hook, &concat);
        for split in [u64::MAX, 9000] {
            let (m, _) = merged(&hook, &inputs, split, &MapPolicies::new());
            assert_same(&one, &m, &format!("4 captures, split {split}"), costs);
            assert!(
                m["source"].as_str().unwrap().starts_with("captures "),
                "{}",
                m["source"]
            );
        }
    }
}

#[test]
fn a_capture_cut_short_gives_the_same_error_at_the_same_packet() {
    let path = dir().join("short.pcap");
    write(&path, &frames(1200, 5_000_000_000, 3));
    let len = std::fs::metadata(&path).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 30).unwrap();
    let one = one_process(&xdp_count(), &path);
    assert!(
        one["source_error"]
            .as_str()
            .unwrap()
            .contains("packet 1200"),
        "{}",
        one["source_error"]
    );
    for split in [len, len / 5, len / 13] {
        let (m, _) = merged(&xdp_count(), &[&path], split, &MapPolicies::new());
        assert_same(&one, &m, &format!("cut short, split {split}"), true);
    }
}

#[test]
fn unproven_ranges_are_refused_and_named() {
    let path = dir().join("unproven.pcap");
    write(&path, &frames(800, 9_000_000_000, 5));
    let size = std::fs::metadata(&path).unwrap().len();
    let shards = capture::plan(&[path.to_str().unwrap()], size.div_ceil(4)).unwrap();
    let hook = xdp_count();
    let (mut runs, _) = run_all(&hook, &shards);
    // Range 2 read from range 1's first record: a true record start, not
    // where range 1 ended.
    let wrong = runs[1].boundary.first.clone();
    runs[2] = run_range(&hook, &shards[2], Some(wrong.clone()));
    let err = merge_runs(&hook, &runs, &MapPolicies::new(), 16)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains(&shards[2].describe()) && err.contains("not proven"),
        "{err}"
    );
    let boundaries: Vec<_> = runs.iter().map(|r| r.boundary.clone()).collect();
    let redo = capture::check(&boundaries).unwrap();
    assert_eq!(redo.len(), 1);
    assert_eq!(redo[0].index, 2);
    // Read again from the proven position: merged as one process.
    runs[2] = run_range(&hook, &shards[2], Some(redo[0].from.clone()));
    let m = merge_runs(&hook, &runs, &MapPolicies::new(), 16).unwrap();
    let v = serde_json::to_value(&m.report).unwrap();
    assert_eq!(v["merged"]["redone"], 1);
    assert_same(&one_process(&hook, &path), &v, "redone", true);
    // A range missing, bytes that are not a run, a policy for no map.
    let err = merge_runs(&hook, &runs[..3], &MapPolicies::new(), 16)
        .err()
        .unwrap();
    assert!(err.to_string().contains("missing"), "{err}");
    let err = ShardRun::from_bytes(b"\x00not a run").err().unwrap();
    assert!(err.to_string().contains("not a shard's run"), "{err}");
    let bad = MapPolicies::from([("nope".to_string(), MapPolicy::Sum)]);
    let err = merge_runs(&hook, &runs, &bad, 16).err().unwrap();
    assert!(
        err.to_string()
            .contains("no such map; the object has: proto_stats"),
        "{err}"
    );
    assert!("average".parse::<MapPolicy>().is_err());
}

#[test]
fn kept_maps_are_listed_per_range() {
    let path = dir().join("count.pcap");
    write(&path, &frames(3000, 1_700_000_000_000_000_000, 1));
    let keep = MapPolicies::from([("proto_stats".to_string(), MapPolicy::Keep)]);
    let (m, n) = merged(&xdp_count(), &[&path], 30_000, &keep);
    let kept = m["merged"]["kept"]["proto_stats"].as_array().unwrap();
    assert_eq!(kept.len(), n);
    // The map itself holds what the specification gave it: nothing.
    let stats = m["maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "proto_stats")
        .unwrap();
    assert_eq!(stats["entries"].as_array().unwrap().len(), 0);
    assert!(
        kept.iter()
            .all(|d| !d["entries"].as_array().unwrap().is_empty())
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Random captures cut at random sizes: merged as one process.
    #[test]
    fn random_cuts_merge_to_one_process(
        n in 50usize..700,
        seed in any::<u64>(),
        ng in any::<bool>(),
        split in 200u64..40_000,
    ) {
        let path = dir().join(format!("prop-{seed}.{}", if ng { "pcapng" } else { "pcap" }));
        write(&path, &frames(n, 77_000_000_000, seed));
        for (hook, strip) in [(xdp_count(), comparable as fn(Value) -> Value), (classify(), without_costs)] {
            let one = one_process(&hook, &path);
            let (m, _) = merged(&hook, &[&path], split, &MapPolicies::new());
            prop_assert_eq!(strip(one), strip(m));
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn ranges_on_two_threads_merge_to_one_process_on_two() {
    let path = dir().join("two-threads.pcap");
    write(&path, &frames(2000, 3_000_000_000, 9));
    let size = std::fs::metadata(&path).unwrap().len();
    let hook = xdp_count();
    let mut one = RunSpec::new(hook.clone(), SourceSpec::capture(&path));
    one.threads = 2;
    // Each range's run shards its packets by flow (a range cannot be cut
    // again): so does the whole capture's here.
    one.shard = engine::ShardMode::Flows(engine::Sharding::Symmetric);
    let one = serde_json::to_value(one.run(None, None).unwrap()).unwrap();
    let shards = capture::plan(&[path.to_str().unwrap()], size.div_ceil(5)).unwrap();
    let runs: Vec<ShardRun> = shards
        .iter()
        .map(|s| {
            let origin = Origin::Range {
                path: s.path.clone(),
                start: s.start,
                end: s.end,
                proven: None,
                foreign: engine::Foreign::Skip,
            };
            let mut spec = RunSpec::new(hook.clone(), SourceSpec::new(origin));
            spec.threads = 2;
            spec.run_range(None, None).unwrap().run
        })
        .collect();
    // Every worker read its own copy of the range, not the whole file.
    let packets: u64 = runs.iter().map(ShardRun::packets).sum();
    assert_eq!(packets, 2000);
    let m = merge_runs(&hook, &runs, &MapPolicies::new(), 16).unwrap();
    assert_same(
        &one,
        &serde_json::to_value(&m.report).unwrap(),
        "two threads",
        true,
    );
}
