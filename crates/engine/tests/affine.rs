//! Flow-affine runs: a capture cut into K ranges, each range partitioned
//! into N buckets by flow ([`engine::partition`]), each bucket run as its
//! worker ([`engine::BucketRunSpec`]), the counters summed and each
//! worker's map contents taken: verdicts, counts and maps equal `sluice
//! run --threads N` over the whole capture, for a stateful program (the
//! DDoS rate limiter, per-source token buckets) and a per-CPU counter;
//! and the same from [`engine::merge_buckets`] over the buckets' raw runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use engine::{
    Bucket, BucketRunSpec, Foreign, HookSpec, Origin, Partition, RunSpec, Sharding, SourceSpec,
    partition,
};

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("engine-affine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A capture of `flows` flows, each from its own source (IPv4 and IPv6,
/// UDP and TCP), some sending faster than the rate limit lets through,
/// with ARP frames between them; every seventh record cut by the
/// snapshot length. `raw`: LINKTYPE_RAW (IP without Ethernet: the frames
/// are converted).
fn capture(name: &str, flows: u32, packets: u32, raw: bool) -> PathBuf {
    let path = dir().join(name);
    let header = pcap_file::pcap::PcapHeader {
        datalink: if raw {
            pcap_file::DataLink::RAW
        } else {
            pcap_file::DataLink::ETHERNET
        },
        ..Default::default()
    };
    let file = std::fs::File::create(&path).unwrap();
    let mut w = pcap_file::pcap::PcapWriter::with_header(file, header).unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut at = 0u64;
    for i in 0..packets {
        let f = (next() % u64::from(flows)) as u32;
        // Flow f sends in bursts: its packets come close together.
        at += next() % 200;
        let (a, b) = (f / 250, f % 250);
        let mut frame = match f % 4 {
            0 => packet::Builder::tcp(&format!("10.{a}.{b}.1"), "192.0.2.1", 1000 + f as u16, 80),
            1 => packet::Builder::udp(&format!("10.{a}.{b}.2"), "192.0.2.1", 2000, 53),
            2 => packet::Builder::udp(&format!("2001:db8::{f:x}"), "2001:db8:ffff::1", 7, 9),
            _ => packet::Builder::tcp(&format!("2001:db8:1::{f:x}"), "2001:db8:ffff::1", 5, 443),
        }
        .build();
        if !raw && i % 29 == 0 {
            // ARP: no IP, so its MAC addresses pick its worker.
            frame[12..14].copy_from_slice(&[0x08, 0x06]);
        }
        let frame = if raw { frame[14..].to_vec() } else { frame };
        let orig = frame.len() as u32 + if i % 7 == 0 { 100 } else { 0 };
        let time = std::time::Duration::from_nanos(at * 1000);
        w.write_packet(&pcap_file::pcap::PcapPacket::new(time, orig, &frame))
            .unwrap();
    }
    path
}

fn hook(program: &str) -> HookSpec {
    let object = programs::object(program).unwrap();
    let mut hook = HookSpec::from_bytes(format!("{program}.o"), object);
    if program == "xdp_ddos" {
        hook.settings.set = vec!["rate_pps=20".into(), "burst=4".into()];
    }
    hook
}

/// Every map's entries, keyed by key bytes.
type Maps = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

fn maps_of(hook: &engine::Hook) -> Maps {
    hook.maps()
        .iter()
        .map(|m| (m.name().to_string(), m.entries().into_iter().collect()))
        .collect()
}

/// `path` cut into `k` ranges, each partitioned into `n` buckets; ranges
/// whose guess the check does not prove are partitioned again from the
/// proven position.
fn partitions(path: &Path, k: u64, n: usize) -> Vec<Partition> {
    let size = std::fs::metadata(path).unwrap().len();
    let shards = capture::plan(&[path.to_str().unwrap()], size.div_ceil(k)).unwrap();
    assert_eq!(shards.len() as u64, k);
    let range = |s: &capture::Shard, proven| {
        SourceSpec::new(Origin::Range {
            path: s.path.clone(),
            start: s.start,
            end: s.end,
            proven,
            foreign: Foreign::Skip,
        })
    };
    let mut parts: Vec<Partition> = shards
        .iter()
        .enumerate()
        .map(|(i, s)| partition(&range(s, None), i as u32, n, Sharding::Symmetric, None).unwrap())
        .collect();
    let boundaries: Vec<_> = parts.iter().map(|p| p.boundary.clone().unwrap()).collect();
    for redo in capture::check(&boundaries).unwrap() {
        let source = range(&redo.shard, Some(redo.from));
        parts[redo.index] =
            partition(&source, redo.index as u32, n, Sharding::Symmetric, None).unwrap();
    }
    parts
}

/// The flow-affine run of `program` over `path` in `k` ranges and `n`
/// buckets against `--threads n`.
fn same_as_threads(program: &str, path: &Path, k: u64, n: usize) {
    let mut spec = RunSpec::new(hook(program), SourceSpec::capture(path));
    spec.threads = n;
    // Buckets split by flow, as symmetric sharding does (auto would read
    // an order-free program's capture by byte ranges).
    spec.shard = engine::ShardMode::Flows(Sharding::Symmetric);
    let built = spec.hook_spec().build().unwrap();
    let whole = spec.start(built.hook, None).unwrap().finish(None).unwrap();
    let parts = partitions(path, k, n);
    assert_eq!(
        parts.iter().map(|p| p.packets).sum::<u64>(),
        whole.report.packets
    );

    let mut verdicts: BTreeMap<String, u64> = BTreeMap::new();
    let mut links: BTreeMap<String, u64> = BTreeMap::new();
    let mut packets = 0;
    let mut merged = Maps::new();
    let mut raws = Vec::new();
    for b in 0..n {
        let blobs: Vec<&[u8]> = parts.iter().map(|p| p.buckets[b].as_slice()).collect();
        let run = BucketRunSpec::new(hook(program), b, n)
            .run(&blobs, None)
            .unwrap();
        assert_eq!(run.report.threads, n);
        raws.push(run.raw(b, n));
        packets += run.counters.packets;
        for (v, c) in &run.report.verdicts {
            *verdicts.entry(v.clone()).or_default() += c;
        }
        for (l, c) in run.counters.link_types.iter() {
            *links.entry(format!("{l:?}")).or_default() += c;
        }
        // Per-CPU maps: this worker's CPU slot; others: its entries.
        for m in run.hook.maps() {
            let into = merged.entry(m.name().to_string()).or_default();
            let spec = m.spec();
            let elem = (spec.value_size as usize).div_ceil(8) * 8;
            for (key, value) in m.entries() {
                if spec.map_type.is_percpu() {
                    let slot = into.entry(key).or_insert_with(|| vec![0; value.len()]);
                    slot[b * elem..(b + 1) * elem]
                        .copy_from_slice(&value[b * elem..(b + 1) * elem]);
                } else if let Some(old) = into.insert(key.clone(), value.clone()) {
                    assert_eq!(old, value, "{}: key {key:?} in two buckets", m.name());
                }
            }
        }
    }
    let what = format!("{program}, {k} ranges, {n} buckets");
    if program == "xdp_ddos" {
        // The token buckets dropped some of each flow's bursts.
        let v = &whole.report.verdicts;
        assert!(v["DROP"] > 100 && v["PASS"] > 100, "{what}: {v:?}");
    }
    assert_eq!(packets, whole.report.packets, "{what}");
    assert_eq!(verdicts, whole.report.verdicts, "{what}");
    // A report names link kinds only when not all are Ethernet.
    if links.keys().eq(["Ethernet"]) {
        links.clear();
    }
    assert_eq!(links, whole.report.link_types, "{what}");
    assert_eq!(merged, maps_of(&whole.hook), "{what}");
    // The engine's merge of the buckets' raw runs gives the same.
    let m = engine::merge_buckets(&hook(program), &raws, &engine::MapPolicies::new(), 16).unwrap();
    assert_eq!(
        m.report.verdicts, whole.report.verdicts,
        "{what}: merge_buckets"
    );
    assert_eq!(
        m.report.packets, whole.report.packets,
        "{what}: merge_buckets"
    );
    assert_eq!(m.report.threads, n, "{what}: merge_buckets");
    assert_eq!(
        maps_of(&m.hook),
        maps_of(&whole.hook),
        "{what}: merge_buckets"
    );
}

#[test]
fn buckets_run_as_workers_equal_threads() {
    let path = capture("flows.pcap", 300, 6000, false);
    for k in [1, 3, 8] {
        for n in [1, 2, 4] {
            same_as_threads("xdp_ddos", &path, k, n);
            same_as_threads("xdp_count", &path, k, n);
        }
    }
}

#[test]
fn converted_frames_keep_their_link_kind() {
    let path = capture("raw.pcap", 50, 1500, true);
    for (k, n) in [(3, 2), (8, 4)] {
        same_as_threads("xdp_ddos", &path, k, n);
    }
}

/// The buckets hold every record once, every field as the sequential read
/// gives it; the drops prove the rate limiter was at work.
#[test]
fn every_record_once_with_its_fields() {
    let path = capture("fields.pcap", 100, 3000, false);
    let mut want = Vec::new();
    let mut reader = capture::PcapSource::open(&path).unwrap();
    while let Some(frame) = reader.next_raw() {
        let f = frame.unwrap();
        let mut data = Vec::new();
        f.to_ethernet_into(&mut data);
        want.push((f.timestamp_ns, f.orig_len, f.linktype, data));
    }
    let parts = partitions(&path, 8, 4);
    let mut got = Vec::new();
    for p in &parts {
        for (b, blob) in p.buckets.iter().enumerate() {
            let bucket = Bucket::parse(blob, b).unwrap();
            assert_eq!(
                (bucket.bucket as usize, bucket.buckets, bucket.index),
                (b, 4, p.index)
            );
            assert_eq!(bucket.frames, p.frames);
            for pk in bucket.iter() {
                let w = Sharding::Symmetric.worker(4, pk.number, pk.data);
                assert_eq!(w, b);
                let row = (pk.timestamp_ns, pk.wire_len, pk.linktype, pk.data.to_vec());
                got.push(((p.index, pk.number), row));
            }
        }
    }
    got.sort_by_key(|(order, _)| *order);
    let got: Vec<_> = got.into_iter().map(|(_, row)| row).collect();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
    assert!(parts.iter().map(|p| p.snapped).sum::<u64>() > 400);
}

#[test]
fn bad_buckets_and_sources_are_errors() {
    let path = capture("bad.pcap", 10, 200, false);
    let parts = partitions(&path, 3, 2);
    let run = |bucket, blobs: &[&[u8]]| {
        BucketRunSpec::new(hook("xdp_count"), bucket, 2)
            .run(blobs, None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let b0: Vec<&[u8]> = parts.iter().map(|p| p.buckets[0].as_slice()).collect();
    let e = run(1, &b0);
    assert!(
        e.contains("blob 0: bucket 0 of 2 (symmetric), but the run is bucket 1 of 2"),
        "{e}"
    );
    let e = run(0, &[b0[1], b0[0]]);
    assert!(e.contains("blob 1: range 0 after range 1"), "{e}");
    let e = run(0, &[b"SLUICEBK junk"]);
    assert!(e.contains("blob 0: not a bucket"), "{e}");
    let e = run(2, &[]);
    assert!(e.contains("bucket 2 is not one of 2"), "{e}");
    let source = SourceSpec::capture(&path);
    let e = partition(&source, 0, 2, Sharding::RoundRobin, None).unwrap_err();
    assert!(e.to_string().contains("not round-robin"), "{e}");
    let e = partition(&source, 0, 0, Sharding::Symmetric, None).unwrap_err();
    assert!(e.to_string().contains("not 0"), "{e}");
    let e = partition(
        &SourceSpec::generated(["udp"]),
        0,
        2,
        Sharding::Symmetric,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not generated udp"), "{e}");
    let e = partition(
        &SourceSpec::capture("/nonexistent.pcap"),
        0,
        2,
        Sharding::Symmetric,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("/nonexistent.pcap"), "{e}");
}

/// Rows of a per-packet table: (packet number, timestamp, length, verdict).
fn rows(t: &engine::PacketTable) -> Vec<(u64, u64, u32, String)> {
    (0..t.index.len())
        .map(|i| {
            let v = t.verdict_names[t.verdict[i] as usize].clone();
            (t.index[i], t.timestamp_ns[i], t.length[i], v)
        })
        .collect()
}

/// Each bucket's per-packet rows carry the packets' numbers in the whole
/// capture: together, the threaded run's rows.
#[test]
fn per_packet_rows_are_numbered_as_in_the_capture() {
    let path = capture("rows.pcap", 40, 2000, false);
    let n = 2;
    let mut spec = RunSpec::new(hook("xdp_ddos"), SourceSpec::capture(&path));
    spec.threads = n;
    spec.shard = engine::ShardMode::Flows(Sharding::Symmetric);
    spec.per_packet = true;
    let whole = spec.run(None, None).unwrap();
    let want = rows(whole.packet_table.as_ref().unwrap());
    let parts = partitions(&path, 5, n);
    let mut got = Vec::new();
    for b in 0..n {
        let blobs: Vec<&[u8]> = parts.iter().map(|p| p.buckets[b].as_slice()).collect();
        let mut bucket = BucketRunSpec::new(hook("xdp_ddos"), b, n);
        bucket.per_packet = true;
        let run = bucket.run(&blobs, None).unwrap();
        got.extend(rows(run.report.packet_table.as_ref().unwrap()));
    }
    got.sort();
    assert_eq!(got.len(), 2000);
    assert_eq!(got, want);
}
