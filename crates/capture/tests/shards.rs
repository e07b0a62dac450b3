//! Captures cut into byte ranges read exactly as one sequential read:
//! random captures cut at random offsets, after the check and its
//! re-reads, give every record once, in order, with the same error; the
//! guess alone is right on tcpdump's captures; plans expand globs in a
//! stable order and cut large files.

#[path = "common/random_captures.rs"]
mod random_captures;

use std::path::{Path, PathBuf};

use capture::{Frame, PcapSource, Shard, ShardError, check, plan, read_checked};
use proptest::prelude::*;
use random_captures::Rng;

/// Frames of a whole read, and the error it ended on (as text).
type Read = (Vec<Frame>, Option<String>);

fn sequential(path: &Path) -> Read {
    let source = match PcapSource::open(path) {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Some(e.to_string())),
    };
    let mut frames = Vec::new();
    for f in source {
        match f {
            Ok(f) => frames.push(f),
            Err(e) => return (frames, Some(e.to_string())),
        }
    }
    (frames, None)
}

/// The shards of `path` cut at `cuts` (offsets inside the file).
fn cut(path: &Path, size: u64, cuts: &[u64]) -> Vec<Shard> {
    let mut at: Vec<u64> = cuts
        .iter()
        .map(|c| c % size.max(1))
        .filter(|&c| c > 0)
        .collect();
    at.push(0);
    at.push(size);
    at.sort();
    at.dedup();
    at.windows(2)
        .map(|w| Shard {
            path: path.to_path_buf(),
            start: w[0],
            end: w[1],
            size,
        })
        .collect()
}

/// The ranges' frames put together (those past an error dropped), the
/// error, and how many ranges were read again.
fn sharded(shards: &[Shard]) -> (Read, usize) {
    let checked = match read_checked(shards, |_, source| {
        source.map_while(Result::ok).collect::<Vec<_>>()
    }) {
        Ok(c) => c,
        Err(ShardError::Capture(e)) => return ((Vec::new(), Some(e.to_string())), 0),
        Err(e) => panic!("{e}"),
    };
    assert!(check(&checked.boundaries).unwrap().is_empty());
    let frames = (0..shards.len())
        .filter(|&i| !checked.past_error(i))
        .flat_map(|i| checked.results[i].clone())
        .collect();
    let error = checked.errors().first().map(ToString::to_string);
    ((frames, error), checked.redone.len())
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capture-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn exact_once(bytes: &[u8], name: &str, cuts: &[u64]) -> Result<(), TestCaseError> {
    let path = temp(name);
    std::fs::write(&path, bytes).unwrap();
    let want = sequential(&path);
    let shards = cut(&path, bytes.len() as u64, cuts);
    let (got, _) = sharded(&shards);
    prop_assert_eq!(got.1, want.1, "error, shards {:?}", shards);
    prop_assert_eq!(got.0.len(), want.0.len(), "frames, shards {:?}", shards);
    prop_assert_eq!(got.0, want.0);
    Ok(())
}

/// A range's frames as its reader reads them, and how it ended.
fn range_frames(mut source: PcapSource) -> (Vec<Frame>, Option<capture::Boundary>) {
    let frames = source.by_ref().map_while(Result::ok).collect();
    (frames, source.boundary())
}

/// The walk of each of `shards` (from its guess, and from the position
/// the range before proved) finds the start and end its reader finds, and
/// the reader given the walk's held bytes reads the same frames as one
/// reading the file.
fn walks_agree(shards: &[Shard]) -> Result<(), TestCaseError> {
    let mut proven = None;
    for shard in shards {
        for from in [None, proven.clone()] {
            let Ok(reader) = PcapSource::open_range_with(shard, from.as_ref(), None) else {
                prop_assert!(PcapSource::walk_range(shard, from.as_ref(), None).is_err());
                continue;
            };
            let (want, boundary) = range_frames(reader);
            let boundary = boundary.expect("a range read to its end has a boundary");
            let walked = PcapSource::walk_range(shard, from.as_ref(), None)
                .unwrap()
                .unwrap();
            prop_assert_eq!(&walked.start.position, &boundary.first, "{:?}", shard);
            prop_assert_eq!(&walked.next, &boundary.next, "{:?}", shard);
            let reader = PcapSource::open_range_from(shard, walked.start, None).unwrap();
            let (got, again) = range_frames(reader);
            prop_assert_eq!(got, want, "{:?}", shard);
            prop_assert_eq!(again.map(|b| b.next), Some(boundary.next.clone()));
            if from.is_none() {
                proven = boundary.next.clone();
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_walk_finds_what_its_reader_finds(seed: u64, ng: bool, cuts in prop::collection::vec(any::<u64>(), 0..12)) {
        let (name, bytes) = if ng {
            ("walk.pcapng", random_captures::pcapng(&mut Rng(seed)))
        } else {
            ("walk.pcap", random_captures::pcap(&mut Rng(seed)))
        };
        let path = temp(name);
        std::fs::write(&path, &bytes).unwrap();
        walks_agree(&cut(&path, bytes.len() as u64, &cuts))?;
    }

    #[test]
    fn pcap_ranges_give_every_record_once(seed: u64, cuts in prop::collection::vec(any::<u64>(), 0..12)) {
        let bytes = random_captures::pcap(&mut Rng(seed));
        exact_once(&bytes, "random.pcap", &cuts)?;
    }

    #[test]
    fn pcapng_ranges_give_every_record_once(seed: u64, cuts in prop::collection::vec(any::<u64>(), 0..12)) {
        let bytes = random_captures::pcapng(&mut Rng(seed));
        exact_once(&bytes, "random.pcapng", &cuts)?;
    }
}

#[test]
fn ranges_of_one_byte_read_exactly() {
    for seed in 0..20 {
        for (name, bytes) in [
            ("tiny.pcap", random_captures::pcap(&mut Rng(seed))),
            ("tiny.pcapng", random_captures::pcapng(&mut Rng(seed))),
        ] {
            let path = temp(name);
            std::fs::write(&path, &bytes).unwrap();
            let cuts: Vec<u64> = (1..(bytes.len() as u64).min(1500)).collect();
            let shards = cut(&path, bytes.len() as u64, &cuts);
            assert_eq!(sharded(&shards).0, sequential(&path), "{name}, seed {seed}");
        }
    }
}

/// Whether every record of `path` is plausible as the guess takes it:
/// original length not 0, at least the captured one and within 8 MB,
/// timestamps at most an hour back and a year forward from the one before;
/// in classic pcap, fractions within a second and captured lengths within
/// the snapshot length.
fn plausible(path: &Path) -> bool {
    let mut source = PcapSource::open(path).unwrap();
    let mut prev: Option<u64> = None;
    while let Some(Ok(f)) = source.next_raw() {
        let ns = f.timestamp_ns;
        let in_time = prev
            .is_none_or(|p| ns + 3_600_000_000_000 >= p && ns <= p + 366 * 86_400 * 1_000_000_000);
        if f.orig_len == 0
            || (f.orig_len as usize) < f.data.len()
            || f.orig_len > 8_000_000
            || !in_time
        {
            return false;
        }
        prev = Some(ns);
    }
    let bytes = std::fs::read(path).unwrap();
    let magic = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    let (be, nano) = match magic {
        0xa1b2_c3d4 => (false, false),
        0xa1b2_3c4d => (false, true),
        0xd4c3_b2a1 => (true, false),
        0x4d3c_b2a1 => (true, true),
        _ => return true,
    };
    let word = |at: usize| {
        let w = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        if be { w.swap_bytes() } else { w }
    };
    let snaplen = word(16);
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let (frac, incl) = (word(at + 4), word(at + 8));
        let over = snaplen > 0 && incl > snaplen;
        if over || frac >= if nano { 1_000_000_000 } else { 1_000_000 } {
            return false;
        }
        at += 16 + incl as usize;
    }
    true
}

/// tcpdump's captures that read without an error, each cut at several
/// offsets: the result is exact, and the guesses alone are right on every
/// capture whose records are plausible (the rest, made by fuzzers with
/// lengths and timestamps no capture has, need re-reads: both counts are
/// printed).
#[test]
fn the_guess_is_right_on_real_captures() {
    // (ranges guessed, ranges read again) of plausible captures and of the rest.
    let mut counts = [(0usize, 0usize); 2];
    let (mut files, mut wrong) = (0usize, Vec::new());
    for path in testkit::captures() {
        let want = sequential(&path);
        if want.1.is_some() || want.0.len() < 2 {
            continue;
        }
        files += 1;
        let kind = usize::from(!plausible(&path));
        let size = std::fs::metadata(&path).unwrap().len();
        for parts in [2u64, 3, 5, 8] {
            let cuts: Vec<u64> = (1..parts).map(|i| size * i / parts + i * 7).collect();
            let shards = cut(&path, size, &cuts);
            let (got, redo) = sharded(&shards);
            assert_eq!(got, want, "{}", path.display());
            counts[kind].0 += shards.len() - 1;
            counts[kind].1 += redo;
            if redo > 0 && kind == 0 {
                wrong.push(path.file_name().unwrap().to_string_lossy().to_string());
            }
        }
    }
    println!(
        "{files} captures; plausible ones: {} ranges guessed, {} read again; the rest: {} guessed, {} read again",
        counts[0].0, counts[0].1, counts[1].0, counts[1].1
    );
    assert!(files > 100, "{files} captures");
    assert!(counts[0].0 > 1000, "{counts:?}");
    assert!(
        wrong.is_empty(),
        "wrong guesses on plausible captures: {wrong:?}"
    );
}

/// Every capture of tcpdump's suite, those ending in a corrupt record
/// (or not captures at all) too, cut at several offsets: the same frames
/// and the same error, at the same packet.
#[test]
fn every_real_capture_reads_exactly() {
    for path in testkit::captures() {
        let want = sequential(&path);
        let size = std::fs::metadata(&path).unwrap().len();
        for parts in [2u64, 4, 9] {
            let cuts: Vec<u64> = (1..parts).map(|i| size * i / parts + i).collect();
            let (got, _) = sharded(&cut(&path, size, &cuts));
            assert_eq!(got, want, "{}", path.display());
        }
    }
}

/// Every capture of tcpdump's suite cut in 2, 4 and 9: each range's walk
/// agrees with its reader (see [`walks_agree`]).
#[test]
fn every_real_capture_walks_as_it_reads() {
    for path in testkit::captures() {
        let size = std::fs::metadata(&path).unwrap().len();
        for parts in [1u64, 2, 4, 9] {
            let cuts: Vec<u64> = (1..parts).map(|i| size * i / parts + i).collect();
            walks_agree(&cut(&path, size, &cuts)).unwrap();
        }
    }
}

#[test]
fn a_plan_cuts_large_files_and_keeps_small_ones_whole() {
    let dir = temp("plan");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, size) in [("b.pcap", 100usize), ("a.pcap", 1000), ("c.txt", 5)] {
        std::fs::write(dir.join(name), vec![0u8; size]).unwrap();
    }
    let pattern = format!("{}/*.pcap", dir.display());
    let shards = plan(&[pattern.as_str()], 300).unwrap();
    let got: Vec<(String, u64, u64)> = shards
        .iter()
        .map(|s| {
            let name = s.path.file_name().unwrap().to_string_lossy().to_string();
            (name, s.start, s.end)
        })
        .collect();
    let want = [
        ("a.pcap", 0, 250),
        ("a.pcap", 250, 500),
        ("a.pcap", 500, 750),
        ("a.pcap", 750, 1000),
        ("b.pcap", 0, 100),
    ];
    let want: Vec<(String, u64, u64)> = want
        .iter()
        .map(|(n, s, e)| (n.to_string(), *s, *e))
        .collect();
    assert_eq!(got, want);
    assert!(shards[4].is_whole() && !shards[0].is_whole());
    // Paths stay in the order given; a file of exactly the split size is whole.
    let c = dir.join("c.txt").display().to_string();
    let shards = plan(&[c.as_str(), pattern.as_str()], 5).unwrap();
    assert!(shards[0].is_whole() && shards[0].path.ends_with("c.txt"));

    let none = format!("{}/*.nothing", dir.display());
    let e = plan(&[none.as_str()], 10).unwrap_err();
    assert!(e.to_string().contains("no file matches"), "{e}");
    let e = plan(&["[a"], 10).unwrap_err();
    assert!(e.to_string().contains("not a glob pattern"), "{e}");
    let e = plan(&[dir.join("missing.pcap").display().to_string()], 10).unwrap_err();
    assert!(e.to_string().contains("No such file"), "{e}");
    let e = plan(&["-"], 10).unwrap_err();
    assert!(e.to_string().contains("standard input"), "{e}");
    let e = plan(&[dir.display().to_string()], 10).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert_eq!(capture::parse_split("64M").unwrap(), 64 << 20);
    assert!(capture::parse_split("0").is_err() && capture::parse_split("x").is_err());
}

#[test]
fn check_refuses_ranges_out_of_order_and_finds_a_wrong_guess() {
    let path = temp("order.pcap");
    // A capture that reads without an error, with records in both halves.
    let bytes = (0..)
        .map(|seed| random_captures::pcap(&mut Rng(seed)))
        .find(|bytes| {
            std::fs::write(&path, bytes).unwrap();
            let (frames, error) = sequential(&path);
            error.is_none() && frames.len() >= 10
        })
        .unwrap();
    let size = bytes.len() as u64;
    let shards = cut(&path, size, &[size / 2]);
    let boundaries: Vec<_> = shards
        .iter()
        .map(|s| {
            let mut src = PcapSource::open_range(s).unwrap();
            while src.next_raw().is_some() {}
            src.boundary().unwrap()
        })
        .collect();
    let reversed = [boundaries[1].clone(), boundaries[0].clone()];
    assert!(matches!(
        check(&reversed),
        Err(ShardError::NotContiguous { .. })
    ));
    // A guess moved one byte: the check names the range and the proven start.
    let mut moved = boundaries.clone();
    moved[1].first.offset += 1;
    let redo = check(&moved).unwrap();
    assert_eq!(redo.len(), 1);
    assert_eq!(redo[0].index, 1);
    assert_eq!(Some(&redo[0].from), boundaries[0].next.as_ref());
}
