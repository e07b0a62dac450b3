//! Passive RTT on generated TCP conversations with known per-flow RTTs
//! (`sluice gen` spec `tcp-conv`, packet::Conversation): every sample is the
//! delay the generator put in (the handshake: the flow's RTT plus the
//! client's think time; a client's TSval echoed by the server: the RTT; a
//! server's echoed by the client: the think time), the eBPF version gives
//! the same samples and statistics, and, written to a pcap, tshark's
//! `tcp.analysis.ack_rtt` equals the timestamp sample of every frame it
//! gives one for.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::AtomicU64;

use monitor::{
    FlowKey, MeterOptions, Method, RttEngine, RttMeter, RttOptions, RttSample, measure_rtt, segment,
};
use packet::GenSpec;

/// The reference's samples with their frame numbers (1-based).
fn reference(spec: &GenSpec) -> Vec<(u64, RttSample)> {
    let mut m = RttMeter::new(MeterOptions::default());
    let mut got = Vec::new();
    let mut last_sweep = None::<u64>;
    for (i, (ts, f)) in spec.packets().enumerate() {
        match last_sweep {
            None => last_sweep = Some(ts),
            Some(l) if ts >= l + 1_000_000_000 => {
                last_sweep = Some(ts);
                m.sweep(ts);
            }
            _ => {}
        }
        let now = m.clock(ts);
        if let Some(s) = segment(&f) {
            let mut out = Vec::new();
            m.packet(&s, now, &mut out);
            got.extend(out.into_iter().map(|s| (i as u64 + 1, s)));
        }
    }
    got
}

fn check(text: &str) {
    let spec = GenSpec::parse(text).unwrap();
    let conv = spec.conv.clone().unwrap();
    let ours = reference(&spec);
    // Which flow is which: the client's address names it.
    let flow_of = |k: &FlowKey| -> (u32, bool) {
        let from_client = k.dst == conv.dst;
        let client = if from_client { k.src } else { k.dst };
        let i = (0..conv.flows).find(|&i| conv.client(i) == client).unwrap();
        (i, from_client)
    };
    let (mut handshakes, mut timestamps) = (0, 0);
    for (n, s) in &ours {
        let (i, from_client) = flow_of(&s.key);
        let want = match (s.method, from_client) {
            (Method::Handshake, true) => conv.rtt(i) + conv.think(),
            (Method::Handshake, false) => panic!("a handshake sample of the server's, frame {n}"),
            (Method::Timestamp, false) => conv.rtt(i),
            (Method::Timestamp, true) => conv.think(),
        };
        assert_eq!(s.rtt_ns, want, "{text}: frame {n}: {s:?}");
        match s.method {
            Method::Handshake => handshakes += 1,
            Method::Timestamp => timestamps += 1,
        }
    }
    assert_eq!(handshakes, conv.flows, "{text}");
    // Every packet but the SYN echoes a TSval seen once.
    assert_eq!(
        timestamps as u64,
        spec.count - u64::from(conv.flows),
        "{text}"
    );

    // The engines: the same samples and statistics.
    let mut sums = Vec::new();
    for engine in [RttEngine::Table, RttEngine::Ebpf] {
        let mut source = pipeline::Generated::new(std::slice::from_ref(&spec));
        let mut samples = Vec::new();
        let opts = RttOptions {
            engine,
            ..RttOptions::default()
        };
        let s = measure_rtt(&mut source, &opts, &AtomicU64::new(0), |x| {
            samples.extend_from_slice(x)
        })
        .unwrap();
        assert_eq!(
            samples,
            ours.iter().map(|x| x.1).collect::<Vec<_>>(),
            "{text}: {engine:?}"
        );
        sums.push(s);
    }
    assert_eq!(sums[0], sums[1], "{text}: summaries");
    // Per flow: the minimum, maximum and mean are the known delays.
    for ((k, m), st) in &sums[0].flows {
        let (i, from_client) = flow_of(k);
        let want = match (m, from_client) {
            (Method::Handshake, _) => conv.rtt(i) + conv.think(),
            (Method::Timestamp, false) => conv.rtt(i),
            (Method::Timestamp, true) => conv.think(),
        };
        assert_eq!(
            (st.min_ns, st.max_ns, st.avg_ns()),
            (want, want, want),
            "{text}: {k:?}"
        );
        assert_eq!(st.hist.iter().map(|&h| u64::from(h)).sum::<u64>(), st.count);
    }

    // tshark's ACK RTTs, frame by frame.
    let dir = std::env::temp_dir().join(format!("sluice-rtt-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("conv.pcap");
    let mut sink = capture::PcapSink::create(&pcap).unwrap();
    for (ts, f) in spec.packets() {
        sink.write(&f, ts).unwrap();
    }
    sink.finish().unwrap();
    let out = testkit::tool::output(Command::new("tshark").args(["-n", "-r"]).arg(&pcap).args([
        "-T",
        "fields",
        "-e",
        "frame.number",
        "-e",
        "tcp.analysis.ack_rtt",
    ]));
    std::fs::remove_dir_all(&dir).ok();
    let ts_by_frame: BTreeMap<u64, u64> = ours
        .iter()
        .filter(|(_, s)| s.method == Method::Timestamp)
        .map(|(n, s)| (*n, s.rtt_ns))
        .collect();
    let mut compared = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = line.split('\t');
        let n: u64 = f.next().unwrap().parse().unwrap();
        let Some(rtt) = f.next().filter(|s| !s.is_empty()) else {
            continue;
        };
        let (i, frac) = rtt.split_once('.').unwrap();
        let ns = i.parse::<u64>().unwrap() * 1_000_000_000
            + format!("{frac:0<9}")[..9].parse::<u64>().unwrap();
        assert_eq!(
            ts_by_frame.get(&n),
            Some(&ns),
            "{text}: frame {n}: tshark's ack_rtt {rtt}"
        );
        compared += 1;
    }
    // Every frame but the SYN acknowledges something.
    assert!(
        compared as u64 >= spec.count - u64::from(conv.flows),
        "{text}: {compared} compared"
    );
    println!(
        "{text}: {handshakes} handshake and {timestamps} timestamp samples as generated; {compared} equal tshark's ack_rtt"
    );
}

#[test]
fn generated_rtts_are_measured_exactly_and_agree_with_tshark() {
    check("tcp-conv,flows=20,rtt=2..40,count=2000");
    check("tcp-conv,v6,flows=7,rtt=1..3,count=700,think=50");
    // A long conversation: TSvals older than the maximum age are swept.
    check("tcp-conv,flows=2,rtt=100,count=600");
}
