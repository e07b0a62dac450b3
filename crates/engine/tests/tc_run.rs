//! A tc configuration built and run over a capture by a library call
//! ([`TcRunSpec::run`]): the report's verdicts, mirred's deliveries,
//! every hook's counters (JSON and text), the outputs per route; and the
//! errors of a configuration, in the words `sluice run --tc` prints them.

use std::path::{Path, PathBuf};

use engine::{Error, Route, SinkSpec, SourceSpec, Target, TcError, TcRunSpec, TcSpec};

/// A directory of the test's own.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("engine-tc-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A capture of `frames` at `path`, a millisecond apart.
fn capture(path: &Path, frames: &[Vec<u8>]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = pcap_file::pcap::PcapWriter::new(file).unwrap();
    for (i, f) in frames.iter().enumerate() {
        let at = std::time::Duration::from_millis(i as u64);
        w.write_packet(&pcap_file::pcap::PcapPacket::new(at, f.len() as u32, f))
            .unwrap();
    }
}

fn frames_in(path: &Path) -> usize {
    let file = std::fs::File::open(path).unwrap();
    let mut r = pcap_file::pcap::PcapReader::new(file).unwrap();
    let mut n = 0;
    while let Some(p) = r.next_packet() {
        p.unwrap();
        n += 1;
    }
    n
}

const RULES: &str = "\
qdisc add dev v0 clsact
qdisc add dev v1 clsact
# UDP: mirrored to v1 and on; TCP: dropped
filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 17 0xff action mirred egress mirror dev v1
filter add dev v0 ingress prio 2 protocol ip u32 match ip protocol 6 0xff action drop
";

#[test]
fn a_configuration_runs_over_a_capture() {
    let d = dir("run");
    let rules = d.join("rules.tc");
    std::fs::write(&rules, RULES).unwrap();
    let udp = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53).build();
    let tcp = packet::Builder::tcp("10.0.0.1", "10.0.0.2", 1000, 80).build();
    let pcap = d.join("in.pcap");
    capture(&pcap, &[udp.clone(), tcp, udp.clone(), udp]);
    let dropped = d.join("drop.pcap");
    let mut spec = TcRunSpec::new(
        TcSpec {
            dev: Some("v0".into()),
            ..TcSpec::new(&rules)
        },
        SourceSpec::capture(&pcap),
    );
    spec.sinks = vec![SinkSpec {
        route: Route::Drop,
        to: Target::File(dropped.clone()),
    }];
    let finished = spec.run(None, None).unwrap();
    let r = &finished.report;
    assert_eq!((r.dev.as_str(), r.hook.as_str()), ("v0", "ingress"));
    assert_eq!(r.source, format!("capture {}", pcap.display()));
    assert_eq!(r.packets, 4);
    assert_eq!(r.verdicts["PIPE"], 3, "{:?}", r.verdicts);
    assert_eq!(r.verdicts["SHOT"], 1, "{:?}", r.verdicts);
    assert_eq!(r.sent.len(), 1);
    assert_eq!(
        (r.sent[0].dev.as_str(), r.sent[0].hook.as_str()),
        ("v1", "egress")
    );
    assert_eq!((r.sent[0].delivered, r.sent[0].consumed), (3, 0));
    assert_eq!(r.too_deep, 0);
    assert!(!r.stopped && r.source_error.is_none() && r.skipped.is_empty());
    // The counters, as `tc -s -j filter show` and `tc -s filter show`.
    let json = &r.filters["v0 ingress"];
    let hits: Vec<u64> = json
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["options"]["actions"][0]["stats"]["packets"].as_u64())
        .collect();
    assert_eq!(hits, [3, 1], "{json}");
    assert_eq!(r.shown.len(), 1);
    assert_eq!(
        (r.shown[0].dev.as_str(), r.shown[0].hook.as_str()),
        ("v0", "ingress")
    );
    assert!(
        r.shown[0].text.contains("Sent 84 bytes 3 pkt"),
        "{}",
        r.shown[0].text
    );
    // The configuration as the run left it, and the dropped packet.
    assert_eq!(finished.config.qdiscs().count(), 2);
    assert_eq!(frames_in(&dropped), 1);
    // The report as `sluice run --tc --json` prints it.
    let v = serde_json::to_value(r).unwrap();
    let keys: std::collections::BTreeSet<&str> =
        v.as_object().unwrap().keys().map(String::as_str).collect();
    let want = [
        "config",
        "dev",
        "hook",
        "source",
        "packets",
        "seconds",
        "packets_per_second",
        "verdicts",
        "sent",
        "too_deep",
        "filters",
    ];
    assert_eq!(keys, want.into_iter().collect());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_arrival_device_is_the_only_one_with_a_qdisc() {
    let d = dir("arrival");
    let one = d.join("one.tc");
    std::fs::write(&one, "qdisc add dev v7 clsact\n").unwrap();
    let built = TcSpec::new(&one).build(None).unwrap();
    assert_eq!(built.dev, "v7");
    assert_eq!(
        built.runner.ifindex(),
        built.runner.config().devices.get("v7").unwrap()
    );

    let two = d.join("two.tc");
    std::fs::write(&two, RULES).unwrap();
    let e = TcSpec::new(&two).build(None).err().unwrap();
    assert!(matches!(e, Error::Tc(TcError::WhichDevice(_))), "{e:?}");
    assert_eq!(
        e.to_string(),
        "--tc: packets arrive at which device? --tc-dev v0|v1"
    );

    let none = d.join("none.tc");
    std::fs::write(&none, "# nothing\n").unwrap();
    let e = TcSpec::new(&none).build(None).err().unwrap();
    assert_eq!(
        e.to_string(),
        "--tc: the configuration has no qdisc (qdisc add dev DEV clsact)"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_bad_line_or_file_is_named() {
    let d = dir("bad");
    let bad = d.join("bad.tc");
    std::fs::write(
        &bad,
        "qdisc add dev v0 clsact\nfilter add dev v0 ingress bogus\n",
    )
    .unwrap();
    let e = TcSpec::new(&bad).build(None).err().unwrap();
    assert!(
        matches!(e, Error::Tc(TcError::Load(tc::LoadError::Line { .. }))),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with(&format!("{}: ", bad.display())),
        "{e}"
    );

    let e = TcSpec::new(d.join("missing.tc")).build(None).err().unwrap();
    assert!(e.to_string().contains("No such file"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_tc_run_is_data() {
    let spec = TcRunSpec::new(
        TcSpec::new("/etc/rules.tc"),
        SourceSpec::generated(["udp,count=3"]),
    );
    let json = serde_json::to_string(&spec).unwrap();
    assert!(json.contains(r#""hook":"ingress""#), "{json}");
    let back: TcRunSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, spec);
    let short: TcSpec = serde_json::from_str(r#"{"config":"r.tc"}"#).unwrap();
    assert_eq!(short, TcSpec::new("r.tc"));
}
