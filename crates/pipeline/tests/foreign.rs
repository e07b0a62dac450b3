//! Frames without an Ethernet form are skipped by default, counted per
//! link type, and keep their place in the numbering; `Foreign::Pass` gives
//! them as captured.

use std::path::PathBuf;

use capture::LinkKind;
use pipeline::{Batch, Capture, Foreign, Source, for_each_packet};

/// A classic pcap of link type `linktype`, written byte by byte.
fn pcap(name: &str, linktype: u32, frames: &[Vec<u8>]) -> PathBuf {
    let mut v = vec![];
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&[2, 0, 4, 0]);
    for x in [0u32, 0, 65_535, linktype] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    for f in frames {
        for x in [0, 0, f.len() as u32, f.len() as u32] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(f);
    }
    let dir = std::env::temp_dir().join(format!("sluice-foreign-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, v).unwrap();
    path
}

/// An 802.11 data frame from a station to its access point, carrying
/// IPv4 in LLC/SNAP.
fn data_frame() -> Vec<u8> {
    let mut f = vec![0x08, 0x01, 0, 0];
    f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 3, 0, 0]);
    f.extend_from_slice(&[0xaa, 0xaa, 3, 0, 0, 0, 0x08, 0x00]);
    f.extend_from_slice(&[0x45; 20]);
    f
}

/// A beacon: management, no Ethernet form.
fn beacon() -> Vec<u8> {
    let mut f = vec![0x80, 0, 0, 0];
    f.extend_from_slice(&[0xff; 6]);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 9, 2, 0, 0, 0, 0, 9, 0, 0]);
    f.extend_from_slice(&[0; 12]);
    f
}

fn read(source: &mut dyn Source) -> Vec<(u64, LinkKind, usize)> {
    let mut got = vec![];
    for_each_packet(source, None, |info, data| {
        got.push((info.seq, info.link, data.len()));
    })
    .unwrap();
    got
}

#[test]
fn foreign_frames_are_skipped_and_counted_by_default() {
    let frames = vec![beacon(), data_frame(), beacon(), beacon(), data_frame()];
    let path = pcap("wifi.pcap", 105, &frames);
    let eth_len = 14 + 20;
    let mut c = Capture::open(&path).unwrap();
    assert_eq!(
        read(&mut c),
        vec![
            (2, LinkKind::Converted, eth_len),
            (5, LinkKind::Converted, eth_len)
        ]
    );
    assert_eq!(c.skipped(), vec![(105, 3)]);
    // A fork skips as its parent does.
    let mut fork = c.fork().unwrap();
    assert_eq!(read(fork.as_mut()).len(), 2);
    assert_eq!(fork.skipped(), vec![(105, 3)]);

    let mut c = Capture::open(&path).unwrap().foreign(Foreign::Pass);
    let got = read(&mut c);
    assert_eq!(got.len(), 5);
    assert_eq!(got[0], (1, LinkKind::Foreign(105), beacon().len()));
    assert!(c.skipped().is_empty());
}

#[test]
fn skipped_frames_do_not_count_against_a_limit_and_end_nothing_early() {
    // PPP's control protocols (LCP, 0xc021) have no Ethernet form (IP over
    // PPP has): a capture of them gives nothing.
    let path = pcap(
        "ppp.pcap",
        9,
        &vec![vec![0xff, 0x03, 0xc0, 0x21, 0x01]; 100],
    );
    let mut c = Capture::open(&path).unwrap();
    let mut b = Batch::new();
    let (n, end) = c.fill_where(&mut b, 10, &mut |_, _| true);
    assert_eq!((n, end, b.len()), (0, Ok(()), 0));
    assert_eq!(c.skipped(), vec![(9, 100)]);

    let frames: Vec<_> = (0..100)
        .map(|i| if i % 2 == 0 { beacon() } else { data_frame() })
        .collect();
    let path = pcap("mixed.pcap", 105, &frames);
    let mut c = Capture::open(&path).unwrap();
    let mut b = Batch::new();
    let (n, _) = c.fill_where(&mut b, 10, &mut |_, _| true);
    assert_eq!((n, b.len()), (10, 10));
    assert_eq!(b.info(9).seq, 20);
}
