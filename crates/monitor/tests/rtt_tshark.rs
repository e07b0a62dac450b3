//! Passive RTT on every capture of tcpdump's test suite: nothing panics;
//! the handshake RTTs equal tshark's `tcp.analysis.initial_rtt`, frame for
//! frame; and the eBPF version (`programs/rtt.c` in sluice's VM) gives the
//! same samples, statistics and counters as the reference.
//!
//! tshark's rule (Wireshark 4.0, packet-tcp.c): in a TCP conversation, the
//! first segment with ACK set and SYN clear, in either direction, after a
//! SYN (SYN set, ACK clear) gives `initial_rtt` = its time - the most recent
//! SYN's, once per conversation. sluice's (the xPF paper's) asks more: the
//! segment is in the SYN's direction and its sequence number is the SYN's
//! plus one. A connection is a tshark conversation (`tcp.stream`) for which
//! tshark reports an initial RTT; the frame that completes it must be the
//! frame where sluice takes its handshake sample, with the same RTT. The
//! principled exclusions, counted and printed:
//! - conversations whose completing frame is not the SYN's direction with
//!   sequence number SYN + 1 (tshark takes any ACK: in these captures the
//!   server's RST/ACK refusing the SYN, which is no handshake; elsewhere a
//!   SYN carrying data, TCP Fast Open, whose ACK is further on), or whose
//!   frames are of a link layer sluice does not read (ARCnet): sluice's
//!   rule does not apply, checked independently at that frame (a SYN of
//!   the same flow before it with its sequence number - 1 would make it a
//!   failure);
//! - captures whose times tshark reads otherwise (a fraction of a second
//!   over one second, `timestamp_invalid_nano.pcap`);
//! - a zero RTT (equal timestamps): tshark keeps zero as "not yet" and
//!   takes a later ACK;
//! - frames tshark calls malformed, and frames the two read differently
//!   (link layers sluice does not convert).
//!
//! Conversely, every handshake sample of sluice's must be a frame where
//! tshark's initial RTT appears first in its conversation (else it is
//! counted as an extra: allowed only where tshark's conversation already
//! had its initial RTT, i.e. ports reused without tshark starting a new
//! conversation).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use monitor::{EbpfRtt, MeterOptions, Method, RttMeter, RttSample, segment};
use testkit::captures;

mod common;

/// Per frame: (number, malformed, stream, initial_rtt in ns, time in ns).
type Dissected = Vec<(u64, bool, Option<u64>, Option<i64>, Option<i64>)>;

fn seconds_to_ns(s: &str) -> Option<i64> {
    let neg = s.starts_with('-');
    let s = s.trim_start_matches('-');
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    let mut frac = f.to_string();
    frac.truncate(9);
    while frac.len() < 9 {
        frac.push('0');
    }
    let v = i.parse::<i64>().ok()? * 1_000_000_000 + frac.parse::<i64>().ok()?;
    Some(if neg { -v } else { v })
}

fn tshark(path: &std::path::Path) -> Dissected {
    use common::field;
    common::lines(path)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some((
                field(&f, "frame.number")?.parse().ok()?,
                field(&f, "_ws.malformed").is_some(),
                field(&f, "tcp.stream").and_then(|s| s.parse().ok()),
                field(&f, "tcp.analysis.initial_rtt").and_then(seconds_to_ns),
                field(&f, "frame.time_epoch").and_then(seconds_to_ns),
            ))
        })
        .collect()
}

/// The frames of a capture as sluice's pipeline makes them (Ethernet), with
/// their times; `None` where sluice does not convert the link layer.
fn frames(path: &std::path::Path) -> Option<Vec<(Option<Vec<u8>>, u64)>> {
    let mut src = capture::PcapSource::open(path).ok()?;
    let mut v = Vec::new();
    while let Some(Ok(r)) = src.next_raw() {
        let (frame, kind) = capture::to_ethernet(r.linktype, r.data);
        let f = match kind {
            capture::LinkKind::Foreign(_) => None,
            _ => Some(frame),
        };
        v.push((f, r.timestamp_ns));
    }
    Some(v)
}

/// Unbounded tables (no failure changes a sample).
fn roomy() -> MeterOptions {
    MeterOptions {
        syn_capacity: 1 << 20,
        ts_capacity: 1 << 20,
        flow_capacity: 1 << 20,
        ..MeterOptions::default()
    }
}

/// The reference's samples, each with its frame number (1-based).
fn reference(
    frames: &[(Option<Vec<u8>>, u64)],
    opts: MeterOptions,
) -> (Vec<(u64, RttSample)>, RttMeter) {
    let mut m = RttMeter::new(opts);
    let mut clock = None::<u64>;
    let mut got = Vec::new();
    for (i, (f, ts)) in frames.iter().enumerate() {
        // Frames sluice does not convert never reach an engine.
        if f.is_none() {
            continue;
        }
        // The replay's sweep, as measure_rtt does it.
        match clock {
            None => clock = Some(*ts),
            Some(l) if *ts >= l.saturating_add(1_000_000_000) => {
                clock = Some(*ts);
                m.sweep(*ts);
            }
            _ => {}
        }
        let now = m.clock(*ts);
        let Some(seg) = f.as_deref().and_then(segment) else {
            continue;
        };
        let mut out = Vec::new();
        m.packet(&seg, now, &mut out);
        got.extend(out.into_iter().map(|s| (i as u64 + 1, s)));
    }
    (got, m)
}

#[test]
fn handshake_rtts_equal_tsharks_initial_rtt_and_ebpf_agrees() {
    let paths = captures();
    let dissected: HashMap<PathBuf, Dissected> = testkit::on_every_capture(tshark);
    let (mut matched, mut not_applicable, mut zero, mut extras) = (0, 0, 0, 0);
    let mut other_times = 0;
    let mut skipped = Vec::new();
    let (mut with_handshakes, mut timestamp_samples, mut ebpf_runs) = (0, 0, 0);
    let mut problems = Vec::new();
    for path in &paths {
        let Some(frames) = frames(path) else { continue };
        let (ours, meter) = reference(&frames, roomy());
        timestamp_samples += ours
            .iter()
            .filter(|(_, s)| s.method == Method::Timestamp)
            .count();
        // The eBPF version: the same samples, statistics and counters.
        let mut e = EbpfRtt::new(&roomy()).unwrap();
        let mut theirs_e = Vec::new();
        let mut clock = None::<u64>;
        for (i, (f, ts)) in frames.iter().enumerate() {
            let Some(f) = f else { continue };
            match clock {
                None => clock = Some(*ts),
                Some(l) if *ts >= l.saturating_add(1_000_000_000) => {
                    clock = Some(*ts);
                    e.sweep(*ts).unwrap();
                }
                _ => {}
            }
            let mut out = Vec::new();
            e.packet(f, *ts, &mut out).unwrap();
            theirs_e.extend(out.into_iter().map(|s| (i as u64 + 1, s)));
        }
        ebpf_runs += 1;
        // Frames the VM does not run (over a page) are none here: the
        // captures' frames are under 4 KiB or not TCP.
        if let Some(i) =
            (0..ours.len().max(theirs_e.len())).find(|&i| ours.get(i) != theirs_e.get(i))
        {
            panic!(
                "{}: sample {i} of {}: eBPF {:?}, reference {:?}",
                path.display(),
                ours.len(),
                theirs_e.get(i),
                ours.get(i)
            );
        }
        assert_eq!(
            e.stats().unwrap(),
            meter.stats(),
            "eBPF statistics, {}",
            path.display()
        );
        assert_eq!(
            e.counters(),
            meter.counters(),
            "eBPF counters, {}",
            path.display()
        );

        // tshark's initial RTT: the first frame of each conversation with it.
        let t = &dissected[path];
        let mut first: BTreeMap<u64, (u64, i64)> = BTreeMap::new();
        let malformed: std::collections::HashSet<u64> =
            t.iter().filter(|x| x.1).map(|x| x.0).collect();
        // Times tshark reads otherwise (invalid fractions of a second):
        // the capture is left out of the comparison with tshark.
        if t.iter().any(|x| {
            let ours = frames.get(x.0 as usize - 1).map(|f| f.1 as i64);
            x.4.is_some() && ours.is_some() && x.4 != ours
        }) {
            other_times += 1;
            continue;
        }
        for &(n, _, stream, rtt, _) in t {
            if let (Some(st), Some(r)) = (stream, rtt) {
                first.entry(st).or_insert((n, r));
            }
        }
        let handshakes: BTreeMap<u64, &RttSample> = ours
            .iter()
            .filter(|(_, s)| s.method == Method::Handshake)
            .map(|(n, s)| (*n, s))
            .collect();
        if !first.is_empty() || !handshakes.is_empty() {
            with_handshakes += 1;
        }
        let completing: std::collections::HashSet<u64> = first.values().map(|v| v.0).collect();
        for (&stream, &(n, rtt)) in &first {
            if malformed.contains(&n) {
                continue;
            }
            match handshakes.get(&n) {
                Some(s) if s.rtt_ns as i64 == rtt => matched += 1,
                Some(s) => problems.push(format!(
                    "{} frame {n} (stream {stream}): sluice {} ns, tshark {rtt} ns",
                    path.display(),
                    s.rtt_ns
                )),
                None if rtt == 0 => zero += 1,
                None => {
                    // Does sluice's rule apply at this frame? A segment in
                    // the direction of a pending SYN with its seq + 1.
                    not_applicable += 1;
                    skipped.push(format!("{} frame {n}", path.display()));
                    if applies(&frames, n) {
                        problems.push(format!(
                            "{} frame {n} (stream {stream}): tshark {rtt} ns, no sample from sluice",
                            path.display()
                        ));
                    }
                }
            }
        }
        for (&n, s) in &handshakes {
            if !completing.contains(&n) && !malformed.contains(&n) {
                extras += 1;
                let stream = t.iter().find(|x| x.0 == n).and_then(|x| x.2);
                // Allowed only where tshark's conversation had its RTT already.
                let earlier = stream
                    .and_then(|st| first.get(&st))
                    .is_some_and(|f| f.0 < n);
                if !earlier && s.rtt_ns != 0 {
                    problems.push(format!(
                        "{} frame {n}: sluice {} ns, tshark no initial RTT",
                        path.display(),
                        s.rtt_ns
                    ));
                }
            }
        }
    }
    println!(
        "{} captures ({ebpf_runs} run in the eBPF version alike), {with_handshakes} with handshakes: \
         {matched} handshake RTTs equal tshark's initial_rtt; left out: {not_applicable} where sluice's \
         rule does not apply, {zero} of zero RTT; {extras} samples where tshark's conversation had \
         its RTT already; {other_times} captures whose times tshark reads otherwise; \
         {timestamp_samples} timestamp samples; not applicable: {skipped:?}",
        paths.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(matched >= 15, "{matched}");
}

/// Whether frame `n` (1-based) completes a handshake by sluice's rule: a
/// SYN earlier in its flow, the latest one, with the sequence number it
/// carries - 1 (looked up afresh, independently of the meter).
fn applies(frames: &[(Option<Vec<u8>>, u64)], n: u64) -> bool {
    let segs: Vec<_> = frames[..n as usize]
        .iter()
        .map(|(f, _)| f.as_deref().and_then(segment))
        .collect();
    let Some(Some(last)) = segs.last() else {
        return false;
    };
    if last.flags & 0x12 != 0x10 {
        return false;
    }
    segs[..segs.len() - 1]
        .iter()
        .rev()
        .flatten()
        .find(|s| s.key == last.key && s.flags & 0x12 == 0x02)
        .is_some_and(|syn| syn.seq.wrapping_add(1) == last.seq)
}
