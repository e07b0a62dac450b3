//! Trajectory sampling: the same packets seen at two measurement points
//! (TTL or hop limit decremented, TOS or traffic class and the IPv6 flow
//! label changed, the IPv4 checksum recomputed between them) give the same
//! samples and labels, on generated traffic and every capture of tcpdump's
//! test suite; every invariant byte moves the hash and no other byte does;
//! the eBPF (`programs/sample.c` in sluice's VM) and xPF
//! (`programs/xpf/sample.s` on the interpreter, the VM and the JIT)
//! versions send exactly the reference's records; a full label table is
//! counted, never silent. The sampling fraction over a million packets is
//! in `tests/sample_rate.rs`.

use std::sync::atomic::AtomicU64;

use monitor::{
    SampleCounts, SampleEngine, SampleOptions, SampleRecord, SampleSummary, invariants,
    sample_trajectories,
};
use pipeline::{Capture, Generated, Packets, Source};
use testkit::captures;
use xpf::XpfEngine;

/// The packets of a source, in memory.
fn frames(source: &mut dyn Source) -> Vec<(u64, Vec<u8>)> {
    let mut v = Vec::new();
    let _ = pipeline::for_each_packet(source, None, |info, data| {
        v.push((info.timestamp_ns, data.to_vec()))
    });
    v
}

fn generated(specs: &[&str]) -> Vec<(u64, Vec<u8>)> {
    let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
    frames(&mut Generated::parse(&specs).unwrap())
}

/// The IP header of a frame (after Ethernet and up to two VLAN tags).
fn ip_offset(f: &[u8]) -> Option<usize> {
    let mut at = 12;
    for _ in 0..2 {
        match f.get(at..at + 2)? {
            [0x81, 0x00] | [0x88, 0xa8] => at += 4,
            _ => break,
        }
    }
    Some(at + 2)
}

/// The frame as the next measurement point sees it: one hop later, its
/// TOS or traffic class (and IPv6 flow label) rewritten, the IPv4 header
/// checksum recomputed (when the header is all there).
fn next_hop(f: &[u8]) -> Vec<u8> {
    let mut f = f.to_vec();
    let Some(ip) = ip_offset(&f) else { return f };
    let ethertype = u16::from_be_bytes([f[ip - 2], f[ip - 1]]);
    match ethertype {
        0x0800 if f.len() >= ip + 20 => {
            f[ip + 1] ^= 0xb9; // DSCP and ECN
            f[ip + 8] = f[ip + 8].wrapping_sub(1);
            let ihl = usize::from(f[ip] & 15) * 4;
            if ihl >= 20 && f.len() >= ip + ihl {
                f[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
                let mut s: u32 = f[ip..ip + ihl]
                    .chunks(2)
                    .map(|w| u32::from(w[0]) << 8 | u32::from(w[1]))
                    .sum();
                while s > 0xffff {
                    s = (s & 0xffff) + (s >> 16);
                }
                f[ip + 10..ip + 12].copy_from_slice(&(!(s as u16)).to_be_bytes());
            } else {
                f[ip + 10] ^= 0x5a;
            }
        }
        0x86dd if f.len() >= ip + 40 => {
            // Traffic class (bits 4..12) and flow label (bits 12..32).
            f[ip] ^= 0x0b;
            f[ip + 1] ^= 0xa5;
            f[ip + 2] ^= 0x3c;
            f[ip + 3] ^= 0x77;
            f[ip + 7] = f[ip + 7].wrapping_sub(1);
        }
        _ => {}
    }
    f
}

fn run(packets: &[(u64, Vec<u8>)], opts: SampleOptions) -> (Vec<SampleRecord>, SampleSummary) {
    let mut got = Vec::new();
    let s = sample_trajectories(
        &mut Packets::new(packets.to_vec()),
        &opts,
        &AtomicU64::new(0),
        |r: &[SampleRecord]| got.extend_from_slice(r),
    )
    .unwrap();
    (got, s)
}

/// The samples as (label, hash), in order.
fn sampled_set(records: &[SampleRecord]) -> Vec<(u32, u32)> {
    records
        .iter()
        .filter_map(|r| match r {
            SampleRecord::Sample(s) => Some((s.label, s.hash)),
            SampleRecord::Flow(_) => None,
        })
        .collect()
}

fn opts(a: u32, b: u32, engine: SampleEngine) -> SampleOptions {
    SampleOptions {
        a,
        b,
        table: 64,
        engine,
        limit: None,
        metrics: None,
    }
}

#[test]
fn two_points_sample_the_same_packets_of_generated_traffic_and_every_capture() {
    let mut inputs = vec![(
        "generated".to_string(),
        generated(&[
            "udp,flows=50,count=4000",
            "tcp,v6,flows=30,count=3000,rate=700000",
            "icmp,flows=5,count=1000,size=90",
            "udp,v6,flows=7,count=1000,size=63",
        ]),
    )];
    for path in captures() {
        if let Ok(mut c) = Capture::open(&path) {
            inputs.push((path.display().to_string(), frames(&mut c)));
        }
    }
    assert!(inputs.len() > 300, "the captures are there");
    let (mut total, mut differing) = (0, 0);
    for (name, a) in &inputs {
        let b: Vec<(u64, Vec<u8>)> = a.iter().map(|(t, f)| (*t + 3_000, next_hop(f))).collect();
        differing += a.iter().zip(&b).filter(|(x, y)| x.1 != y.1).count();
        for (a_, b_) in [(4, 1), (7, 3)] {
            let o = opts(a_, b_, SampleEngine::Reference);
            let (first, s1) = run(a, o.clone());
            let (second, s2) = run(&b, o);
            assert_eq!(sampled_set(&first), sampled_set(&second), "{name}");
            assert_eq!(s1.counts, s2.counts, "{name}");
            total += s1.counts.sampled;
        }
    }
    assert!(
        differing > 10_000,
        "the second point's frames differ ({differing})"
    );
    assert!(total > 5_000, "{total} samples");
}

#[test]
fn every_invariant_byte_moves_the_hash_and_no_other_byte_does() {
    let v4 = packet::Builder::udp("10.1.2.3", "10.4.5.6", 1234, 53)
        .payload(b"0123456789abcdefghij")
        .build();
    let v6 = packet::Builder::tcp("2001:db8::1", "2001:db8::2", 1234, 80)
        .payload(b"xyz")
        .build();
    // (frame, the IP header's bytes that do not count, where the hashed
    // bytes end)
    let ip = 14;
    let cases = [
        (v4, vec![1, 8, 10, 11], ip + 20 + 16),
        // Traffic class and flow label: the low nibble of byte 0, bytes
        // 1 to 3; the hop limit, byte 7. TCP's 20 bytes and 3 of payload:
        // the first 16 after the header count.
        (v6, vec![1, 2, 3, 7], ip + 40 + 16),
    ];
    for (frame, ignored, end) in cases {
        let base = invariants(&frame).unwrap();
        for at in ip..frame.len() {
            for bit in 0..8u8 {
                let mut f = frame.clone();
                f[at] ^= 1 << bit;
                let rel = at - ip;
                // IPv6's first byte: the version counts, the traffic
                // class's high nibble does not.
                let ignored_bit = if frame[12] == 0x86 && rel == 0 {
                    bit < 4
                } else {
                    ignored.contains(&rel)
                };
                let moved = invariants(&f).map(|i| i.hash) != Some(base.hash);
                if ignored_bit || at >= end {
                    assert!(
                        !moved,
                        "byte {rel} bit {bit} of the IP datagram moved the hash"
                    );
                } else {
                    assert!(
                        moved,
                        "byte {rel} bit {bit} of the IP datagram left the hash"
                    );
                }
            }
        }
    }
}

/// Records with the times left out, and the times apart.
fn untimed(records: &[SampleRecord]) -> (Vec<SampleRecord>, Vec<u64>) {
    let mut times = Vec::new();
    let r = records
        .iter()
        .map(|r| match *r {
            SampleRecord::Sample(mut s) => {
                times.push(s.time_ns);
                s.time_ns = 0;
                SampleRecord::Sample(s)
            }
            f => f,
        })
        .collect();
    (r, times)
}

/// The engines' records equal the reference's, and so do their counts.
/// Times: the VM's clock follows the packets but never steps back and
/// moves a nanosecond per reading: within a millisecond after the
/// packet's where the capture's times never step back, else between the
/// packet's and the latest before it. xPF's seconds are a 32-bit word:
/// they wrap in 2106 (a capture has a packet after that).
fn engines_agree(name: &str, packets: &[(u64, Vec<u8>)], o: SampleOptions) -> u64 {
    let (want, ws) = run(packets, o.clone());
    let (want, want_t) = untimed(&want);
    let monotonic = packets.windows(2).all(|w| w[0].0 <= w[1].0);
    let latest = packets.iter().map(|p| p.0).max().unwrap_or(0);
    for engine in [
        SampleEngine::Ebpf,
        SampleEngine::Xpf(XpfEngine::Interp),
        SampleEngine::Xpf(XpfEngine::Vm),
        SampleEngine::Xpf(XpfEngine::Jit),
    ] {
        let (got, gs) = run(
            packets,
            SampleOptions {
                engine,
                ..o.clone()
            },
        );
        let (got, got_t) = untimed(&got);
        assert_eq!(got, want, "{name}: {engine:?}");
        let wrap = |t: u64| match engine {
            SampleEngine::Xpf(_) => t % ((1u64 << 32) * 1_000_000_000),
            _ => t,
        };
        for (g, w) in got_t.iter().zip(&want_t) {
            let w = &wrap(*w);
            let bound = if monotonic { *w } else { wrap(latest).max(*w) };
            assert!(
                *g >= *w && *g < bound + 1_000_000,
                "{name}: {engine:?}: {g} for {w}"
            );
        }
        assert_eq!(gs.counts, ws.counts, "{name}: {engine:?}");
    }
    ws.counts.sampled
}

#[test]
fn the_ebpf_and_xpf_versions_send_the_references_records_on_every_capture() {
    let (mut runs, mut samples) = (0, 0);
    for path in captures() {
        let Ok(mut c) = Capture::open(&path) else {
            continue;
        };
        let packets = frames(&mut c);
        // An XDP program sees a frame's first page only: captures with
        // longer frames are left out, counted.
        if packets
            .iter()
            .any(|(_, f)| f.len() > runtime::XDP_LINEAR_MAX)
        {
            continue;
        }
        runs += 1;
        for (a, b) in [(1, 1), (3, 1)] {
            samples += engines_agree(
                &path.display().to_string(),
                &packets,
                opts(a, b, SampleEngine::Reference),
            );
        }
    }
    eprintln!("{runs} captures, {samples} samples");
    assert!(runs > 300, "{runs} captures");
    assert!(samples > 2_000, "{samples} samples");
}

#[test]
fn the_ebpf_and_xpf_versions_send_the_references_records_on_generated_traffic() {
    let packets = generated(&[
        "udp,flows=40,count=3000",
        "tcp,v6,flows=20,count=2000,rate=500000",
        "icmp,flows=3,count=300,size=77",
        "udp,v6,flows=5,count=500,size=63",
    ]);
    for (a, b) in [(1, 1), (10, 3), (1000, 7), (5, 0)] {
        engines_agree(
            &format!("{b}/{a}"),
            &packets,
            opts(a, b, SampleEngine::Reference),
        );
    }
}

#[test]
fn a_full_label_table_is_counted_and_its_flow_records_still_sent() {
    // 200 flows, a table of 16 slots, every packet sampled.
    let packets = generated(&["udp,flows=200,count=1000"]);
    let o = SampleOptions {
        table: 16,
        ..opts(1, 1, SampleEngine::Reference)
    };
    let (records, s) = run(&packets, o.clone());
    let flows = records
        .iter()
        .filter(|r| matches!(r, SampleRecord::Flow(_)))
        .count() as u64;
    // R labels remembered (at least 8: while fewer are kept, a label's
    // eight slots have room; at most the 16 slots); the table never
    // empties, so each of the other 200 - R flows' 5 packets sends a flow
    // record, counted.
    let kept = s.counts.flows - s.counts.full;
    assert!((8..=16).contains(&kept), "{kept} kept");
    assert_eq!(
        s.counts,
        SampleCounts {
            hashed: 1000,
            sampled: 1000,
            flows: kept + (200 - kept) * 5,
            full: (200 - kept) * 5,
            lost: 0,
        }
    );
    assert_eq!(flows, s.counts.flows);
    engines_agree("a full table", &packets, o);
}

#[test]
fn bad_options_are_refused() {
    let packets = generated(&["udp,count=3"]);
    let o = opts(0, 1, SampleEngine::Reference);
    let err = sample_trajectories(
        &mut Packets::new(packets.clone()),
        &o,
        &AtomicU64::new(0),
        |_: &[SampleRecord]| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("A must be"), "{err}");
    let o = SampleOptions {
        table: 100_000,
        ..opts(2, 1, SampleEngine::Xpf(XpfEngine::Interp))
    };
    let err = sample_trajectories(
        &mut Packets::new(packets),
        &o,
        &AtomicU64::new(0),
        |_: &[SampleRecord]| {},
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.contains("32768"), "{err}");
    assert_eq!(monitor::parse_rate("1/100").unwrap(), (100, 1));
    assert_eq!(monitor::parse_rate("0.25").unwrap(), (1_000_000, 250_000));
    for bad in ["1/0", "3/2", "x", "1.5", "-1/4", "1/"] {
        assert!(monitor::parse_rate(bad).is_err(), "{bad}");
    }
}
