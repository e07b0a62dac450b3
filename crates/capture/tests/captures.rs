//! Every capture of the tcpdump corpus reads without a panic; what we write
//! reads back the same and tcpdump accepts it.

use capture::*;

/// Packets tcpdump (libpcap) reads from a capture, when it reads it whole.
fn tcpdump_count(path: &std::path::Path) -> Option<usize> {
    let out = std::process::Command::new("tcpdump")
        .args(["--count", "-r"])
        .arg(path)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().next()?.parse().ok()
}

#[test]
fn the_whole_corpus_reads_as_libpcap_reads_it() {
    let files = testkit::captures();
    assert!(
        files.len() >= 400,
        "expected the tcpdump corpus, found {} files",
        files.len()
    );
    let (mut frames, mut compared, mut errors) = (0usize, 0usize, 0usize);
    let mut kinds = std::collections::BTreeMap::new();
    for f in &files {
        let src = PcapSource::open(f).unwrap_or_else(|e| panic!("{e}"));
        let mut n = 0;
        for r in src {
            match r {
                Ok(frame) => {
                    n += 1;
                    *kinds.entry(format!("{:?}", frame.link)).or_insert(0) += 1;
                }
                Err(e) => {
                    assert!(
                        e.packet.is_some() && e.to_string().contains(&*f.to_string_lossy()),
                        "{e}"
                    );
                    errors += 1;
                }
            }
        }
        frames += n;
        if let Some(want) = tcpdump_count(f) {
            assert_eq!(
                n,
                want,
                "{}: frames read differ from tcpdump's",
                f.display()
            );
            compared += 1;
        }
    }
    println!(
        "{} files: {frames} frames ({compared} files checked against tcpdump), {errors} end in a bad record; {kinds:?}",
        files.len()
    );
    assert!(
        compared >= 390,
        "only {compared} files could be checked against tcpdump"
    );
}

#[test]
fn written_captures_read_back_and_tcpdump_reads_them() {
    let dir = std::env::temp_dir().join(format!("sluice-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let frames: Vec<(Vec<u8>, u64)> = (0..5u8)
        .map(|i| {
            (
                vec![i; 60 + usize::from(i)],
                1_700_000_000_123_456_789 + u64::from(i) * 1000,
            )
        })
        .collect();
    for name in ["out.pcap", "out.pcapng"] {
        let path = dir.join(name);
        let mut sink = PcapSink::create(&path).unwrap();
        for (data, ts) in &frames {
            sink.write(data, *ts).unwrap();
        }
        sink.finish().unwrap();
        let back: Vec<(Vec<u8>, u64)> = PcapSource::open(&path)
            .unwrap()
            .map(|f| f.unwrap())
            .map(|f| (f.data, f.timestamp_ns))
            .collect();
        assert_eq!(back, frames, "{name}");
        let out = testkit::tool::output(
            std::process::Command::new("tcpdump")
                .args(["--count", "-r"])
                .arg(&path),
        );
        assert!(
            out.status.success(),
            "tcpdump on {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("5 packets"),
            "{name}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn link_types_become_ethernet() {
    let ip = [
        0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
    ];
    let (eth, kind) = capture::to_ethernet_for_tests(101, &ip);
    assert_eq!(kind, LinkKind::Converted);
    assert_eq!(&eth[12..14], &[0x08, 0x00]);
    assert_eq!(&eth[14..], &ip);
    let mut sll = vec![0u8; 16];
    sll[14..16].copy_from_slice(&[0x86, 0xdd]);
    sll.extend_from_slice(&[0x60; 40]);
    let (eth, _) = capture::to_ethernet_for_tests(113, &sll);
    assert_eq!(&eth[12..14], &[0x86, 0xdd]);
    assert_eq!(eth.len(), 14 + 40);
    let (raw, kind) = capture::to_ethernet_for_tests(105, &[1, 2, 3]);
    assert_eq!((raw, kind), (vec![1, 2, 3], LinkKind::Foreign(105)));
}
