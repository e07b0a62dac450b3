//! Flows and tcpdump filters over the ranges of tcpdump's captures,
//! merged, against one read of each whole capture: the same ended flows
//! in the same order and summary, the same report and matching packets.
//! Ranges are read from their guesses, then those `capture::check` finds
//! unproven again from their proven positions, as a cluster's driver does.

use capture::{Boundary, Shard};
use engine::{
    FilterPart, FilterRunSpec, FlowsPart, FlowsSpec, Origin, SourceSpec, merge_filter, merge_flows,
};

/// Every range of `shards` read by `read`, re-read until proven.
fn proven<P>(
    shards: &[Shard],
    read: impl Fn(usize, &Shard, Option<&capture::Position>) -> P,
    boundary: impl Fn(&P) -> Boundary,
) -> Vec<P> {
    let mut parts: Vec<P> = (shards.iter().enumerate())
        .map(|(i, s)| read(i, s, None))
        .collect();
    loop {
        let b: Vec<Boundary> = parts.iter().map(&boundary).collect();
        let redo = capture::check(&b).unwrap();
        if redo.is_empty() {
            return parts;
        }
        for r in redo {
            parts[r.index] = read(r.index, &r.shard, Some(&r.from));
        }
    }
}

fn cuts(path: &std::path::Path, parts: u64) -> Vec<Shard> {
    let size = std::fs::metadata(path).unwrap().len();
    let p = path.display().to_string();
    capture::plan(&[p.as_str()], size.div_ceil(parts).max(1)).unwrap()
}

#[test]
fn flows_over_ranges_merge_into_one_read_on_real_captures() {
    let (mut files, mut exact, mut inexact) = (0, 0, 0);
    for path in testkit::captures() {
        let spec = FlowsSpec::new(SourceSpec::capture(&path));
        let mut want = Vec::new();
        let Ok(summary) = spec.run(None, None, |e| want.extend_from_slice(e)) else {
            continue;
        };
        files += 1;
        for n in [2, 5] {
            let shards = cuts(&path, n);
            let parts = proven(
                &shards,
                |_, s, from| {
                    let part = spec.run_range(s, from, None, None).unwrap();
                    // Through bytes, as a cluster sends it.
                    FlowsPart::from_bytes(&part.to_bytes().unwrap()).unwrap()
                },
                |p| p.boundary.clone(),
            );
            let merged = merge_flows(&parts, None).unwrap();
            if !merged.inexact.is_empty() {
                inexact += 1;
                continue;
            }
            exact += 1;
            let what = format!("{} in {n}", path.display());
            assert_eq!(merged.ended, want, "{what}");
            let s = &merged.summary;
            assert_eq!(
                (s.packets, s.accounted),
                (summary.packets, summary.accounted),
                "{what}"
            );
            assert_eq!(
                (s.flows, s.by_reason),
                (summary.flows, summary.by_reason),
                "{what}"
            );
            assert_eq!(s.source_error, summary.source_error, "{what}");
            assert_eq!(s.order.backwards, summary.order.backwards, "{what}");
        }
    }
    println!("{files} captures: {exact} merges exact, {inexact} said inexact");
    assert!(files > 100 && exact > 200, "{files} files, {exact} exact");
}

#[test]
fn filters_over_ranges_merge_into_one_read_on_real_captures() {
    let mut files = 0;
    for path in testkit::captures() {
        let spec = FilterRunSpec::new(
            "ip or ip6 or arp",
            Origin::Capture {
                path: path.clone(),
                foreign: Default::default(),
            },
        );
        let Ok(want) = spec.run(None) else { continue };
        files += 1;
        for n in [3, 7] {
            let shards = cuts(&path, n);
            let parts = proven(
                &shards,
                |i, s, from| {
                    let part = spec.run_range(s, from, i, None, None).unwrap();
                    FilterPart::from_bytes(&part.to_bytes().unwrap()).unwrap()
                },
                |p| p.boundary.clone(),
            );
            let got = merge_filter(&parts).unwrap();
            let what = format!("{} in {n}", path.display());
            assert_eq!(
                serde_json::to_value(&got).unwrap(),
                serde_json::to_value(&want).unwrap(),
                "{what}"
            );
            assert_eq!(got.matches, want.matches, "{what}");
        }
    }
    assert!(files > 100, "{files} files");
}

/// Partitions written by ranges hold, put together, the packets one
/// read writes; a merge refuses a range not proven, and a file with a
/// range missing.
#[test]
fn partitions_and_refusals() {
    let path = testkit::captures()
        .into_iter()
        .filter(|p| std::fs::metadata(p).unwrap().len() > 20_000)
        .find(|p| {
            let spec = FilterRunSpec::new(
                "tcp",
                Origin::Capture {
                    path: p.clone(),
                    foreign: Default::default(),
                },
            );
            spec.run(None)
                .is_ok_and(|r| r.matched > 10 && r.capture_error.is_none())
        })
        .expect("a capture with TCP");
    let dir = std::env::temp_dir().join(format!("flows-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut spec = FilterRunSpec::new(
        "tcp",
        Origin::Capture {
            path: path.clone(),
            foreign: Default::default(),
        },
    );
    spec.write = Some(dir.join("whole.pcap"));
    spec.run(None).unwrap();
    spec.write = None;
    let shards = cuts(&path, 4);
    let parts = proven(
        &shards,
        |i, s, from| spec.run_range(s, from, i, Some(&dir), None).unwrap(),
        |p| p.boundary.clone(),
    );
    let report = merge_filter(&parts).unwrap();
    assert_eq!(
        report.written.as_deref(),
        Some(dir.display().to_string().as_str())
    );
    let records = |p: &std::path::Path| {
        let mut r = capture::PcapSource::open(p).unwrap();
        let mut out = Vec::new();
        while let Some(f) = r.next_raw() {
            let f = f.unwrap();
            out.push((f.timestamp_ns, f.data.to_vec()));
        }
        out
    };
    let mut joined = Vec::new();
    for i in 0..shards.len() {
        joined.extend(records(&engine::partition_path(&dir, i)));
    }
    assert_eq!(joined, records(&dir.join("whole.pcap")));
    let leftovers = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".tmp")
        })
        .count();
    assert_eq!(leftovers, 0);

    // A range missing; a range read from a guess that is not proven.
    let e = merge_filter(&parts[..3]).unwrap_err().to_string();
    assert!(e.contains("a range is missing"), "{e}");
    let mut wrong = parts.clone();
    wrong[2].boundary.first.offset += 1;
    let e = merge_filter(&wrong).unwrap_err().to_string();
    assert!(e.contains("range 2") && e.contains("is not proven"), "{e}");
    assert!(FlowsPart::from_bytes(b"junk").is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
