//! `PcapSource::read_into` and `PcapSink::write_parts` against the reader
//! and writer this crate had before (pcap-file's, one `Vec` per frame).

mod common;

use std::path::{Path, PathBuf};

use capture::*;
use common::reference::{OldError, OldSource};

/// A fresh directory `sluice-io-NAME-PID` (testkit's).
fn temp_dir(name: &str) -> PathBuf {
    testkit::temp_dir(&format!("io-{name}"))
}

/// What a capture reads as: its frames, and the error that ended it.
#[derive(Debug, PartialEq, Eq)]
struct Read {
    frames: Vec<Frame>,
    /// Packet index and reason.
    error: Option<(Option<usize>, String)>,
}

fn read_old(path: &Path) -> Result<(Read, bool), String> {
    let mut src = OldSource::open(path)?;
    let pcapng = src.is_pcapng();
    let mut read = Read {
        frames: vec![],
        error: None,
    };
    while let Some(r) = src.next_frame() {
        match r {
            Ok(f) => read.frames.push(f),
            Err(OldError {
                path: p,
                packet,
                reason,
            }) => {
                assert_eq!(p, path);
                read.error = Some((packet, reason));
            }
        }
    }
    Ok((read, pcapng))
}

/// Reads through `read_into` in batches of up to 64 frames appended to one
/// buffer, as a pipeline would.
fn read_new(path: &Path) -> Result<Read, IoError> {
    let mut src = PcapSource::open(path)?;
    let mut read = Read {
        frames: vec![],
        error: None,
    };
    let mut buf = Vec::with_capacity(64 * 2048);
    let mut infos = Vec::with_capacity(64);
    loop {
        buf.clear();
        infos.clear();
        let mut end = None;
        while infos.len() < 64 {
            let before = buf.len();
            match src.read_into(&mut buf) {
                None => {
                    end = Some(None);
                    break;
                }
                Some(Ok(info)) => {
                    assert_eq!(buf.len() - before, info.len as usize);
                    infos.push(info);
                }
                Some(Err(e)) => {
                    assert_eq!(buf.len(), before, "an error appends nothing");
                    assert_eq!(e.path, path);
                    end = Some(Some((e.packet, e.reason)));
                    break;
                }
            }
        }
        let mut at = 0;
        for info in &infos {
            let len = info.len as usize;
            read.frames.push(Frame {
                data: buf[at..at + len].to_vec(),
                orig_len: info.orig_len,
                timestamp_ns: info.timestamp_ns,
                link: info.link,
            });
            at += len;
        }
        if let Some(error) = end {
            read.error = error;
            assert_eq!(PcapSource::count(&src), read.frames.len());
            assert!(src.read_into(&mut buf).is_none(), "the source has ended");
            return Ok(read);
        }
    }
}

fn read_frames(path: &Path) -> Result<Read, IoError> {
    let mut src = PcapSource::open(path)?;
    let mut read = Read {
        frames: vec![],
        error: None,
    };
    for r in &mut src {
        match r {
            Ok(f) => read.frames.push(f),
            Err(e) => read.error = Some((e.packet, e.reason)),
        }
    }
    Ok(read)
}

/// Compares the new reader with the old on one file: the same frames, and
/// an error at the same packet. Classic pcap errors now say what was
/// wrong, where pcap-file said "Error reading bytes". pcapng is parsed
/// here now, skipping the options pcap-file refused ("Invalid option"):
/// a pcapng file gives the frames it gave before, and may go on where
/// pcap-file stopped.
fn compare(path: &Path) -> (usize, bool) {
    let old = read_old(path);
    let new = read_new(path);
    let (old, pcapng) = match (old, new.as_ref()) {
        (Ok(old), Ok(_)) => old,
        (Err(_), Err(_)) => return (0, false),
        (Err(_), Ok(_)) if is_pcapng(path) => return (0, false),
        (old, new) => panic!("{}: opens as {old:?} before, {new:?} now", path.display()),
    };
    let new = new.unwrap();
    let name = path.display();
    if pcapng && old.error.is_some() {
        assert!(new.frames.len() >= old.frames.len(), "{name}: frame count");
    } else {
        assert_eq!(new.frames.len(), old.frames.len(), "{name}: frame count");
    }
    for (i, (n, o)) in new.frames.iter().zip(&old.frames).enumerate() {
        assert_eq!(n, o, "{name}: frame {}", i + 1);
    }
    match (&new.error, &old.error) {
        (None, None) => {}
        (_, Some(_)) if pcapng => {}
        (Some((np, nr)), Some((op, or))) => {
            assert_eq!(np, op, "{name}: error at another packet: {nr} / {or}");
        }
        (n, o) => panic!("{name}: error {n:?}, before {o:?}"),
    }
    assert_eq!(read_frames(path).unwrap(), new, "{name}: next_frame");
    (old.frames.len(), old.error.is_some())
}

fn is_pcapng(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]))
}

#[test]
fn the_corpus_reads_through_read_into_as_it_did_before() {
    let files = testkit::captures();
    assert!(files.len() >= 400, "found {} captures", files.len());
    let (mut frames, mut errors) = (0, 0);
    for f in &files {
        let (n, e) = compare(f);
        frames += n;
        errors += usize::from(e);
    }
    println!(
        "{} files, {frames} frames, {errors} ending in an error: same as before",
        files.len()
    );
    // The corpus's captures are malformed inside their packets, not in
    // their records: bad records are tested on made-up files below.
    assert!(frames > 3000, "{frames} frames");
}

/// A classic pcap file: `big` byte order, `nano` magic, link type 1.
fn pcap_bytes(big: bool, nano: bool, snaplen: u32, records: &[(u32, u32, u32, &[u8])]) -> Vec<u8> {
    let w = |v: &mut Vec<u8>, x: u32| {
        v.extend_from_slice(&if big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        })
    };
    let mut v = vec![];
    w(&mut v, if nano { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
    let (major, minor) = (2u16, 4u16);
    for x in [major, minor] {
        v.extend_from_slice(&if big {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        });
    }
    for x in [0, 0, snaplen, 1] {
        w(&mut v, x);
    }
    for &(sec, frac, orig, data) in records {
        for x in [sec, frac, data.len() as u32, orig] {
            w(&mut v, x);
        }
        v.extend_from_slice(data);
    }
    v
}

#[test]
fn byte_orders_resolutions_and_bad_records_read_as_before() {
    let dir = temp_dir("synthetic");
    let long = vec![7u8; 3000];
    let records: &[(u32, u32, u32, &[u8])] = &[
        (1, 999_999, 60, &[1; 60]),
        (2, 5, 9000, &[2; 100]),
        // Longer than the snapshot length (100): accepted, as libpcap does.
        (3, 7, 3000, &long),
        (4, 0, 0, &[]),
    ];
    let mut cases = vec![];
    for big in [false, true] {
        for nano in [false, true] {
            let whole = pcap_bytes(big, nano, 100, records);
            cases.push((format!("b{big}n{nano}.pcap"), whole.clone()));
            // Cut in the last record's data, in its header, and in the
            // third record; trailing garbage shorter than a header.
            let last = whole.len() - 16;
            for (name, cut) in [("data", whole.len() - 1500), ("hdr", last + 5), ("tail", 0)] {
                let mut v = whole.clone();
                if cut == 0 {
                    v.extend_from_slice(&[0; 3]);
                } else {
                    v.truncate(cut);
                }
                cases.push((format!("b{big}n{nano}{name}.pcap"), v));
            }
            // A corrupt length: 200 MB.
            let mut v = pcap_bytes(big, nano, 100, &records[..1]);
            let mut bad = pcap_bytes(big, nano, 100, &[(9, 9, 9, &[9; 16])]);
            let at = bad.len() - 16 - 8;
            bad[at..at + 4].copy_from_slice(&if big {
                200_000_000u32.to_be_bytes()
            } else {
                200_000_000u32.to_le_bytes()
            });
            v.extend_from_slice(&bad[24..]);
            cases.push((format!("b{big}n{nano}huge.pcap"), v));
        }
    }
    // Records beyond the 1 MiB read buffer, up to pcap-file's bound (a
    // 16-byte header and 8 000 000 bytes in all) and just past it.
    let big = vec![5u8; 2_000_000];
    let at_limit = vec![6u8; 8_000_000 - 16];
    let past_limit = vec![6u8; 8_000_000 - 15];
    for (name, rec) in [("big", &big), ("limit", &at_limit), ("past", &past_limit)] {
        let v = pcap_bytes(
            false,
            true,
            100,
            &[(1, 1, 60, &[1; 60]), (2, 2, 9, rec), (3, 3, 60, &[3; 60])],
        );
        cases.push((format!("{name}.pcap"), v));
    }
    cases.push(("short.pcap".into(), vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0]));
    cases.push(("empty.pcap".into(), pcap_bytes(false, false, 100, &[])));
    let mut checked = 0;
    for (name, bytes) in cases {
        let path = dir.join(&name);
        std::fs::write(&path, &bytes).unwrap();
        let (frames, error) = compare(&path);
        if name.starts_with("bfalsenfalse") && !name.contains("huge") {
            let want = if name.ends_with("data.pcap") {
                2
            } else if name.ends_with("hdr.pcap") {
                3
            } else {
                4
            };
            assert_eq!(frames, want, "{name}");
            assert_eq!(
                error,
                name.contains("data") || name.contains("hdr") || name.contains("tail"),
                "{name}"
            );
        }
        checked += 1;
    }
    let first = read_new(&dir.join("bfalsentrue.pcap")).unwrap();
    assert_eq!(first.frames[0].timestamp_ns, 1_000_999_999);
    let micro = read_new(&dir.join("btruenfalse.pcap")).unwrap();
    assert_eq!(micro.frames[0].timestamp_ns, 1_999_999_000);
    assert_eq!(micro.frames[2].data, long);
    let cut = read_new(&dir.join("btruenfalsedata.pcap")).unwrap();
    assert_eq!(
        cut.error,
        Some((Some(3), "truncated record (1516 of 3000 bytes)".into()))
    );
    let cut = read_new(&dir.join("bfalsenfalsehdr.pcap")).unwrap();
    assert_eq!(
        cut.error,
        Some((Some(4), "truncated record header (5 of 16 bytes)".into()))
    );
    assert_eq!(read_new(&dir.join("limit.pcap")).unwrap().frames.len(), 3);
    let past = read_new(&dir.join("past.pcap")).unwrap();
    assert_eq!(
        (past.frames.len(), past.error.map(|e| e.0)),
        (1, Some(Some(2)))
    );
    let err = PcapSource::open(&dir.join("short.pcap")).err().unwrap();
    assert!(err.to_string().contains("short.pcap"), "{err}");
    assert_eq!(checked, 25);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn frames_to_write() -> Vec<(Vec<u8>, Vec<u8>, u64)> {
    (0..300u32)
        .map(|i| {
            let head = (0..60 + i % 7).map(|b| (b ^ i) as u8).collect();
            let tail = vec![i as u8; (i % 3 * 100) as usize];
            (head, tail, 1_700_000_000_123_456_789 + u64::from(i) * 1000)
        })
        .collect()
}

#[test]
fn write_parts_round_trips_and_writes_what_pcap_file_wrote() {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    use pcap_file::pcapng::PcapNgWriter;
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::{
        InterfaceDescriptionBlock, InterfaceDescriptionOption,
    };
    use pcap_file::{DataLink, TsResolution};
    use std::time::Duration;

    let dir = temp_dir("roundtrip");
    let frames = frames_to_write();
    for name in ["out.pcap", "out.pcapng"] {
        let path = dir.join(name);
        let mut sink = PcapSink::create(&path).unwrap();
        for (head, tail, ts) in &frames {
            sink.write_parts(head, tail, *ts).unwrap();
        }
        assert_eq!(sink.count(), frames.len());
        sink.finish().unwrap();
        let back = read_new(&path).unwrap();
        assert_eq!(back.error, None);
        let want: Vec<Frame> = frames
            .iter()
            .map(|(h, t, ts)| Frame {
                data: [&h[..], t].concat(),
                orig_len: (h.len() + t.len()) as u32,
                timestamp_ns: *ts,
                link: LinkKind::Ethernet,
            })
            .collect();
        assert_eq!(back.frames, want, "{name}");

        // The bytes pcap-file's writers made before.
        let mut old = Vec::new();
        if name.ends_with("pcapng") {
            let mut w = PcapNgWriter::new(&mut old).unwrap();
            w.write_pcapng_block(InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: 262_144,
                options: vec![InterfaceDescriptionOption::IfTsResol(9)],
            })
            .unwrap();
            for f in &want {
                w.write_pcapng_block(EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp: Duration::from_nanos(f.timestamp_ns),
                    original_len: f.orig_len,
                    data: f.data[..].into(),
                    options: vec![],
                })
                .unwrap();
            }
        } else {
            let header = PcapHeader {
                datalink: DataLink::ETHERNET,
                ts_resolution: TsResolution::NanoSecond,
                snaplen: 262_144,
                ..PcapHeader::default()
            };
            let mut w = PcapWriter::with_header(&mut old, header).unwrap();
            for f in &want {
                w.write_packet(&PcapPacket::new(
                    Duration::from_nanos(f.timestamp_ns),
                    f.orig_len,
                    &f.data,
                ))
                .unwrap();
            }
        }
        assert!(
            std::fs::read(&path).unwrap() == old,
            "{name}: other bytes than before"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_packets_are_refused_and_the_sink_goes_on() {
    let dir = temp_dir("refused");
    let path = dir.join("o.pcap");
    let mut sink = PcapSink::create(&path).unwrap();
    sink.write(&[1; 60], 5).unwrap();
    let e = sink.write_parts(&[0; 262_144], &[1], 6).unwrap_err();
    assert_eq!(e.packet, Some(2));
    assert!(e.to_string().contains("snapshot length"), "{e}");
    let e = sink
        .write(&[1; 60], 5_000_000_000 * 1_000_000_000)
        .unwrap_err();
    assert!(e.to_string().contains("timestamp"), "{e}");
    sink.write(&[2; 60], 7).unwrap();
    sink.finish().unwrap();
    let back = read_new(&path).unwrap();
    assert_eq!(back.frames.len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn write_errors_say_write_and_the_os_error() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        return;
    }
    for format in [SinkFormat::Pcap, SinkFormat::PcapNg] {
        let mut sink = PcapSink::create_as(full, format).unwrap();
        let mut err = None;
        // The buffer fills, then its write fails.
        for _ in 0..20_000 {
            if let Err(e) = sink.write_parts(&[0; 64], &[0; 36], 1) {
                err = Some(e);
                break;
            }
        }
        let err = err.unwrap_or_else(|| sink.finish().unwrap_err());
        assert_eq!(
            err.to_string(),
            "writing /dev/full: No space left on device (0 packets written before it)"
        );
    }
    let sink = PcapSink::create(full).unwrap();
    let err = sink.finish().unwrap_err().to_string();
    assert_eq!(
        err,
        "writing /dev/full: No space left on device (0 packets written before it)"
    );
}

/// The fuzz target's first find (`captures`): a pcap of one 15-byte record
/// (its link type word with FCS bits set, a snapshot length of 15). The
/// reader was right; the target called `src.count()`, which is
/// `Iterator::count` (it reads the rest), where `PcapSource::count` was
/// meant. Kept as the reader's regression test.
#[test]
fn fuzz_crasher_one_frame_with_fcs_bits_in_the_link_type() {
    let bytes: [u8; 55] = [
        212, 195, 178, 161, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 0, 0, 0, 1, 0, 0, 48, 48, 48,
        48, 48, 63, 66, 15, 0, 15, 0, 0, 0, 0, 0, 4, 0, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48,
        48, 254, 254, 48,
    ];
    let path = Path::new("crasher.pcap");
    let mut src = PcapSource::from_reader(path, Box::new(std::io::Cursor::new(bytes))).unwrap();
    let mut buf = Vec::new();
    let first = src.read_into(&mut buf).unwrap().unwrap();
    assert_eq!(
        (first.len, first.orig_len, first.link),
        (15, 0x40000, LinkKind::Ethernet)
    );
    assert_eq!(PcapSource::count(&src), 1);
    assert!(src.read_into(&mut buf).is_none());
    assert_eq!(PcapSource::count(&src), 1);
}
