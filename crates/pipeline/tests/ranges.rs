//! Workers over byte ranges of a capture give exactly what one thread
//! gives: the same counts, per-packet log (in the file's order, numbered
//! as the file numbers its packets), output bytes, final maps (per-CPU
//! slots summed) and source error; whether the ranges' first records were
//! guessed right or wrong, with ranges cut anywhere.

use std::path::{Path, PathBuf};

use maps::Map;
use pipeline::{
    Capture, PcapWriter, ReplayCounters, ReplayOptions, ReplaySummary, Route, Sinks, Source,
};
use runtime::{Hook, Image, LoadOptions};

const CPUS: u32 = 4;

fn hook(name: &str) -> Hook {
    let object = obj::Object::parse(programs::object(name).unwrap()).unwrap();
    let opts = LoadOptions {
        ncpus: CPUS,
        ..LoadOptions::default()
    };
    let image = Image::load(object, &opts).unwrap();
    let prog = image.find_program(None).unwrap();
    Hook::new(image, prog, 0).unwrap()
}

/// A map's entries, per-CPU values summed over CPUs as u64 lanes.
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

fn scratch(tag: &str) -> PathBuf {
    testkit::temp_dir(&format!("ranges-{tag}"))
}

/// What a replay gave, to compare.
struct Ran {
    summary: ReplaySummary,
    maps: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
    outputs: Vec<Vec<u8>>,
    /// Frames without an Ethernet form skipped, per link type.
    skipped: Vec<(u32, u64)>,
    snapped: u64,
}

fn replay(name: &str, capture: &Path, threads: usize, range_bytes: u64, out: &Path) -> Ran {
    let mut h = hook(name);
    let mut sinks = Sinks::new();
    let files: Vec<PathBuf> = Route::ALL
        .iter()
        .map(|r| out.join(format!("{name}-{threads}-{range_bytes}-{r:?}.pcap")))
        .collect();
    for (r, f) in Route::ALL.iter().zip(&files) {
        sinks.add(&[*r], Box::new(PcapWriter::create(f).unwrap()));
    }
    let opts = ReplayOptions {
        threads,
        ranges: true,
        range_bytes,
        per_packet: true,
        ..ReplayOptions::default()
    };
    let mut source = Capture::open(capture).unwrap();
    let summary = pipeline::replay(&mut h, &mut source, sinks, &opts, None).unwrap();
    assert_eq!(summary.threads, threads);
    assert_eq!(summary.ranges.is_some(), threads > 1, "ranges ran");
    let (skipped, snapped) = match &summary.ranges {
        Some(r) => (r.skipped.clone(), r.snapped),
        None => (source.skipped(), source.snapped()),
    };
    Ran {
        skipped,
        snapped,
        summary,
        maps: h.maps().iter().map(contents).collect(),
        outputs: files.iter().map(|f| std::fs::read(f).unwrap()).collect(),
    }
}

fn counts(c: &ReplayCounters) -> String {
    let mut verdicts: Vec<_> = c
        .verdicts
        .iter()
        .map(|(v, n)| format!("{v:?} {n}"))
        .collect();
    verdicts.sort();
    let mut links: Vec<_> = c
        .link_types
        .iter()
        .map(|(l, n)| format!("{l:?} {n}"))
        .collect();
    links.sort();
    format!(
        "packets {} verdicts {verdicts:?} errors {} {:?} trace {} {:?} links {links:?} \
         insns {} {} {} helpers {} redirects {}",
        c.packets,
        c.errors,
        c.first_errors,
        c.trace_lines,
        c.trace,
        c.insns.mean(),
        c.insns.quantile(0.5),
        c.insns.max(),
        c.helper_calls,
        c.redirects.iter().count(),
    )
}

/// Ranges with `threads` workers (and ranges of `range_bytes`) give one
/// thread's result over `capture`.
fn same_as_one(name: &str, capture: &Path, threads: usize, range_bytes: u64) -> ReplaySummary {
    // Each comparison its own directory: tests run at once.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = scratch(&format!("{name}-{threads}-{range_bytes}-{run}"));
    let one = replay(name, capture, 1, 0, &out);
    let many = replay(name, capture, threads, range_bytes, &out);
    let what = format!("{name}, {threads} threads, ranges of {range_bytes} bytes");
    assert!(one.summary.counters.packets > 0, "{what}");
    assert_eq!(
        counts(&one.summary.counters),
        counts(&many.summary.counters),
        "{what}"
    );
    let (a, b) = (
        one.summary.counters.log.as_ref().unwrap(),
        many.summary.counters.log.as_ref().unwrap(),
    );
    assert_eq!(a.len(), b.len(), "{what}");
    assert!(a == b, "{what}: per-packet logs differ");
    assert_eq!(one.maps, many.maps, "{what}: maps");
    for (r, (x, y)) in Route::ALL.iter().zip(one.outputs.iter().zip(&many.outputs)) {
        assert!(x == y, "{what}: {r:?} output differs");
    }
    assert_eq!(
        one.summary.source_error, many.summary.source_error,
        "{what}"
    );
    assert_eq!(one.skipped, many.skipped, "{what}: skipped");
    assert_eq!(one.snapped, many.snapped, "{what}: snapped");
    let _ = std::fs::remove_dir_all(&out);
    many.summary
}

/// Every frame of tcpdump's captures that has an Ethernet form, one after
/// another, in one classic pcap (or pcapng) file.
fn corpus(dir: &Path, ext: &str) -> PathBuf {
    let path = dir.join(format!("corpus.{ext}"));
    let mut sink = capture::PcapSink::create(&path).unwrap();
    for file in testkit::captures() {
        let Ok(source) = capture::PcapSource::open(&file) else {
            continue;
        };
        for frame in source {
            let Ok(frame) = frame else { break };
            if matches!(frame.link, capture::LinkKind::Foreign(_)) {
                continue;
            }
            // Some timestamps are past what a capture can hold: left out.
            if frame.timestamp_ns / 1_000_000_000 < u64::from(u32::MAX) {
                sink.write(&frame.data, frame.timestamp_ns).unwrap();
            }
        }
    }
    sink.finish().unwrap();
    path
}

/// 200,000 generated packets: UDP and TCP flows.
fn generated(dir: &Path) -> PathBuf {
    let path = dir.join("generated.pcap");
    let mut sink = capture::PcapSink::create(&path).unwrap();
    let specs = [
        packet::GenSpec::parse("udp,flows=1000,size=64,count=150000,dport=53").unwrap(),
        packet::GenSpec::parse("tcp,flows=300,size=600,count=50000").unwrap(),
    ];
    for (ts, p) in packet::merge(&specs) {
        sink.write(&p, ts).unwrap();
    }
    sink.finish().unwrap();
    path
}

const PROGRAMS: [&str; 4] = ["xdp_count", "xdp_parse_tx", "xdp_router", "fwd_lpm_trie"];

#[test]
fn the_tcpdump_corpus_by_ranges_is_one_thread() {
    let dir = scratch("corpus");
    for ext in ["pcap", "pcapng"] {
        let file = corpus(&dir, ext);
        for name in PROGRAMS {
            for threads in [2, 4] {
                same_as_one(name, &file, threads, 0);
            }
        }
        // Many small ranges: hundreds of guesses, cut anywhere.
        let s = same_as_one("xdp_count", &file, 3, 4093);
        assert!(s.ranges.unwrap().ranges > 200);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn each_larger_capture_of_the_corpus_by_small_ranges_is_one_thread() {
    // Link types converted and skipped, pcapng, malformed records.
    let mut tried = 0;
    for file in testkit::captures() {
        if std::fs::metadata(&file).unwrap().len() < 20_000 {
            continue;
        }
        let Ok(mut probe) = Capture::open(&file) else {
            continue;
        };
        let mut batch = pipeline::Batch::new();
        if probe.fill(&mut batch).is_err() || batch.is_empty() {
            continue;
        }
        same_as_one("xdp_count", &file, 2, 1500);
        tried += 1;
    }
    assert!(tried > 10, "{tried}");
}

#[test]
fn two_hundred_thousand_packets_by_ranges_are_one_thread() {
    let dir = scratch("generated");
    let file = generated(&dir);
    for name in ["xdp_count", "xdp_parse_tx"] {
        for threads in [2, 4] {
            let s = same_as_one(name, &file, threads, 0);
            assert!(s.ranges.unwrap().ranges >= threads);
        }
    }
    same_as_one("xdp_count", &file, 2, 1 << 20);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A classic pcap record header, little-endian.
fn header(ts_sec: u32, len: usize) -> Vec<u8> {
    [ts_sec, 0, len as u32, len as u32]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

/// 50 packets, one long record whose bytes hold a chain of 9 plausible
/// records from just past the file's middle, 50 packets: the guess of the
/// second range's first record (cut at the middle) is inside the long one.
fn misleading(dir: &Path) -> (PathBuf, u64) {
    let small = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53).build();
    let mut long = packet::Builder::udp("10.0.0.3", "10.0.0.4", 7, 9).build();
    let len = 1400;
    long.resize(len, 0);
    let fake_at = len / 2 + 16;
    let mut fake = Vec::new();
    for i in 0..9 {
        fake.extend(header(2_000 + i, 20));
        fake.extend([0x11; 20]);
    }
    long[fake_at..fake_at + fake.len()].copy_from_slice(&fake);
    let mut bytes = Vec::new();
    // The file header: little-endian, microseconds, Ethernet.
    bytes.extend(0xa1b2_c3d4u32.to_le_bytes());
    bytes.extend(2u16.to_le_bytes());
    bytes.extend(4u16.to_le_bytes());
    bytes.extend([0u8; 8]);
    bytes.extend(65535u32.to_le_bytes());
    bytes.extend(1u32.to_le_bytes());
    let records = |b: &mut Vec<u8>, from: u32| {
        for i in 0..50 {
            b.extend(header(1_000 + from + i, small.len()));
            b.extend(&small);
        }
    };
    records(&mut bytes, 0);
    let payload = bytes.len() as u64 + 16;
    bytes.extend(header(1_050, len));
    bytes.extend(&long);
    records(&mut bytes, 51);
    let middle = bytes.len() as u64 / 2;
    assert!(middle > payload && middle < payload + fake_at as u64);
    let path = dir.join("misleading.pcap");
    std::fs::write(&path, &bytes).unwrap();
    (path, middle)
}

#[test]
fn a_wrong_guess_is_walked_again_before_any_packet_runs() {
    let dir = scratch("misleading");
    let (file, _) = misleading(&dir);
    let s = same_as_one("xdp_count", &file, 2, 0);
    let read = s.ranges.unwrap();
    assert_eq!(read.ranges, 2);
    assert_eq!(read.guessed_wrong, 1, "the guess fell in the long record");
    assert_eq!(s.counters.packets, 101);
    // Cut anywhere else too.
    for bytes in [97, 1000, 1777] {
        same_as_one("xdp_parse_tx", &file, 4, bytes);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupt_record_ends_the_read_where_one_thread_ends_it() {
    let dir = scratch("corrupt");
    let file = generated(&dir);
    let mut bytes = std::fs::read(&file).unwrap();
    // The record header at about a third of the file: a length over the limit.
    // The sink writes in the machine's or network order: the magic says.
    let big = bytes[0] == 0xa1;
    let word = |b: &[u8]| {
        let w: [u8; 4] = b.try_into().unwrap();
        if big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    };
    let mut at = 24usize;
    while at < bytes.len() / 3 {
        at += 16 + word(&bytes[at + 8..at + 12]) as usize;
    }
    let huge = if big {
        9_000_000u32.to_be_bytes()
    } else {
        9_000_000u32.to_le_bytes()
    };
    bytes[at + 8..at + 12].copy_from_slice(&huge);
    let bad = dir.join("corrupt.pcap");
    std::fs::write(&bad, &bytes).unwrap();
    for threads in [2, 4] {
        let s = same_as_one("xdp_count", &bad, threads, 0);
        let e = s.source_error.unwrap().to_string();
        assert!(e.contains("over the 8000000-byte limit"), "{e}");
    }
    // Cut off in the middle of a record.
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..at + 7]).unwrap();
    let s = same_as_one("xdp_count", &cut, 3, 1 << 20);
    assert!(s.source_error.unwrap().to_string().contains("truncated"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sources_that_cannot_be_cut_are_sharded_by_flow() {
    let dir = scratch("stream");
    let file = generated(&dir);
    let bytes: std::sync::Arc<[u8]> = std::fs::read(&file).unwrap().into();
    let mut source = Capture::from_bytes(&file, bytes).unwrap();
    assert!(source.cuttable().is_none());
    let opts = ReplayOptions {
        threads: 2,
        ranges: true,
        ..ReplayOptions::default()
    };
    let mut h = hook("xdp_count");
    let s = pipeline::replay(&mut h, &mut source, Sinks::new(), &opts, None).unwrap();
    assert!(s.ranges.is_none());
    assert_eq!(s.counters.packets, 200_000);
    // A limit reads a prefix: by flow too.
    let mut source = Capture::open(&file).unwrap();
    assert!(source.cuttable().is_some());
    let limited = ReplayOptions {
        limit: Some(10),
        ..opts
    };
    let s = pipeline::replay(&mut h, &mut source, Sinks::new(), &limited, None).unwrap();
    assert!(s.ranges.is_none());
    assert_eq!(s.counters.packets, 10);
    let _ = std::fs::remove_dir_all(&dir);
}
