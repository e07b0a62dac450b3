//! [`Origin::Range`]: a run over one shard of a capture is an ordinary
//! run; the shards' runs add up to the whole capture's, packet for packet.

use engine::{HookSpec, Origin, RunSpec, SourceSpec};

/// A capture of `n` frames, every third TCP (xdp_count counts per protocol).
fn capture(n: usize) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("engine-range-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("frames.pcap");
    let file = std::fs::File::create(&path).unwrap();
    let mut w = pcap_file::pcap::PcapWriter::new(file).unwrap();
    for i in 0..n {
        let frame = match i % 3 {
            0 => packet::Builder::tcp("10.0.0.1", "10.0.0.2", 1000 + i as u16, 80).build(),
            _ => packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000 + i as u16, 53).build(),
        };
        let at = std::time::Duration::from_micros(i as u64 * 10);
        let record = pcap_file::pcap::PcapPacket::new(at, frame.len() as u32, &frame);
        w.write_packet(&record).unwrap();
    }
    path
}

fn run(origin: Origin) -> engine::RunReport {
    let hook = HookSpec::from_bytes("xdp_count.o", programs::object("xdp_count").unwrap());
    RunSpec::new(hook, SourceSpec::new(origin))
        .run(None, None)
        .unwrap()
}

#[test]
fn the_shards_runs_add_up_to_the_whole_captures() {
    let path = capture(500);
    let whole = run(Origin::Capture {
        path: path.clone(),
        foreign: engine::Foreign::Skip,
    });
    assert_eq!(whole.packets, 500);
    let shards = capture::plan(&[path.to_str().unwrap()], 7000).unwrap();
    assert!(shards.len() > 3, "{} shards", shards.len());
    // The positions the check proved, as the driver of a cluster gives them.
    let checked = capture::read_checked(&shards, |_, _| ()).unwrap();
    let mut packets = 0;
    let mut tcp = 0;
    for (shard, boundary) in shards.iter().zip(&checked.boundaries) {
        let origin = Origin::Range {
            path: shard.path.clone(),
            start: shard.start,
            end: shard.end,
            proven: Some(boundary.first.clone()),
            foreign: engine::Foreign::Skip,
        };
        let spec = SourceSpec::new(origin.clone());
        assert_eq!(
            spec.describe(),
            format!(
                "capture {} [{}, {})",
                path.display(),
                shard.start,
                shard.end
            )
        );
        // A specification travels as JSON (to a cluster's workers).
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(serde_json::from_str::<SourceSpec>(&json).unwrap(), spec);
        let report = run(origin);
        assert_eq!(report.packets, boundary.frames);
        packets += report.packets;
        let stats = report
            .maps
            .iter()
            .find(|m| m.name == "proto_stats")
            .unwrap();
        if let Some(e) = stats.entries.iter().find(|e| e.key == "6") {
            let n = e.value.split("packets: ").nth(1).unwrap();
            tcp += n
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap();
        }
    }
    assert_eq!(packets, 500);
    assert_eq!(tcp, 167);
}

#[test]
fn a_range_of_a_missing_file_is_an_error() {
    let hook = HookSpec::from_bytes("xdp_pass.o", programs::object("xdp_pass").unwrap());
    let origin = Origin::Range {
        path: "/nonexistent/x.pcap".into(),
        start: 100,
        end: 200,
        proven: None,
        foreign: engine::Foreign::Skip,
    };
    let e = RunSpec::new(hook, SourceSpec::new(origin))
        .run(None, None)
        .unwrap_err();
    assert!(e.to_string().contains("/nonexistent/x.pcap"), "{e}");
}
