//! pcapng files made here, byte by byte: options the reader does not know
//! are skipped (as the specification says and libpcap does), and errors
//! name the file, block and offset.

use std::path::{Path, PathBuf};

use capture::{LinkKind, PcapSource};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-pcapng-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A pcapng writer in either byte order.
struct Ng {
    big: bool,
    out: Vec<u8>,
}

impl Ng {
    fn u16(&self, v: u16) -> [u8; 2] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn u32(&self, v: u32) -> [u8; 4] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    /// An option, padded.
    fn opt(&self, code: u16, value: &[u8]) -> Vec<u8> {
        let mut v = self.u16(code).to_vec();
        v.extend_from_slice(&self.u16(value.len() as u16));
        v.extend_from_slice(value);
        v.resize(v.len().next_multiple_of(4), 0);
        v
    }
    fn block(&mut self, block_type: u32, body: &[u8]) {
        let len = 12 + body.len().next_multiple_of(4);
        let mut b = self.u32(block_type).to_vec();
        b.extend_from_slice(&self.u32(len as u32));
        b.extend_from_slice(body);
        b.resize(len - 4, 0);
        b.extend_from_slice(&self.u32(len as u32));
        self.out.extend_from_slice(&b);
    }
    fn section(&mut self, options: &[u8]) {
        let mut body = self.u32(0x1a2b_3c4d).to_vec();
        body.extend_from_slice(&self.u16(1));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&[0xff; 8]);
        body.extend_from_slice(options);
        self.block(0x0a0d_0d0a, &body);
    }
    fn interface(&mut self, linktype: u16, options: &[u8]) {
        let mut body = self.u16(linktype).to_vec();
        body.extend_from_slice(&[0, 0]);
        body.extend_from_slice(&self.u32(262_144));
        body.extend_from_slice(options);
        self.block(1, &body);
    }
    fn packet(&mut self, interface: u32, ts: u64, data: &[u8], options: &[u8]) {
        let mut body = Vec::new();
        for v in [
            interface,
            (ts >> 32) as u32,
            ts as u32,
            data.len() as u32,
            data.len() as u32 + 4,
        ] {
            body.extend_from_slice(&self.u32(v));
        }
        body.extend_from_slice(data);
        body.resize(body.len().next_multiple_of(4), 0);
        body.extend_from_slice(options);
        self.block(6, &body);
    }
}

/// A UDP-in-IPv4 Ethernet frame, `n` bytes of payload.
fn frame(n: u8) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = 28 + u16::from(n);
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&[0x30, 0x39, 0, 53, 0, 8 + n, 0, 0]);
    f.extend(0..n);
    f
}

/// A file with options of every kind the reader skips: unknown codes,
/// custom options (2988, 2989: a Private Enterprise Number and bytes),
/// comments, and option lists without an end-of-options marker.
fn with_unknown_options(big: bool) -> Vec<u8> {
    let mut w = Ng { big, out: vec![] };
    let mut shb_opts = w.opt(1, b"made by hand");
    shb_opts.extend(w.opt(0x7777, &[1, 2, 3]));
    w.section(&shb_opts);
    // if_tsresol 9 (ns), an unknown option, a custom one, no opt_endofopt.
    let mut idb = w.opt(9, &[9]);
    idb.extend(w.opt(0x4321, &[0xaa; 5]));
    idb.extend(w.opt(2988, &[0, 0, 0x7e, 0xd9, b'x', b'y']));
    w.interface(1, &idb);
    let mut epb = w.opt(2989, &[0, 0, 0x7e, 0xd9, 1, 2, 3, 4, 5]);
    epb.extend(w.opt(0x1234, &[0xee; 7]));
    epb.extend(w.opt(2, &0x0000_0001u32.to_be_bytes()));
    w.packet(0, 1_700_000_000_000_000_123, &frame(10), &epb);
    // An unknown option with the end marker after it.
    let mut epb = w.opt(0x5555, &[]);
    epb.extend(w.opt(0, &[]));
    w.packet(0, 1_700_000_000_000_001_000, &frame(3), &epb);
    // An unknown block (a custom block, 0x00000BAD) between packets.
    w.block(0x0000_0bad, &[0, 0, 0x7e, 0xd9, 9, 9, 9, 9]);
    w.packet(0, 1_700_000_000_000_002_000, &frame(0), &[]);
    w.out
}

fn tcpdump(path: &Path) -> String {
    let out = testkit::tool::output(
        std::process::Command::new("tcpdump")
            .args(["-nn", "-tt", "--nano", "-r"])
            .arg(path),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn unknown_and_custom_options_are_skipped_as_tcpdump_skips_them() {
    for big in [false, true] {
        let path = temp(if big {
            "opts-be.pcapng"
        } else {
            "opts-le.pcapng"
        });
        std::fs::write(&path, with_unknown_options(big)).unwrap();
        let frames: Vec<_> = PcapSource::open(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{e}"));
        let want: Vec<_> = [10u8, 3, 0].iter().map(|&n| frame(n)).collect();
        let got: Vec<_> = frames.iter().map(|f| f.data.clone()).collect();
        assert_eq!(got, want);
        assert!(frames.iter().all(|f| f.link == LinkKind::Ethernet));
        assert_eq!(frames[0].orig_len, frame(10).len() as u32 + 4);
        // tcpdump reads the same packets with the same timestamps.
        let text = tcpdump(&path);
        let stamps: Vec<String> = text
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect();
        let ours: Vec<String> = frames
            .iter()
            .map(|f| {
                format!(
                    "{}.{:09}",
                    f.timestamp_ns / 1_000_000_000,
                    f.timestamp_ns % 1_000_000_000
                )
            })
            .collect();
        assert_eq!(stamps, ours, "{text}");
    }
}

#[test]
fn ts_offset_and_resolution_are_applied_as_tcpdump_applies_them() {
    let mut w = Ng {
        big: false,
        out: vec![],
    };
    w.section(&[]);
    // if_tsresol 2^-10 s, if_tsoffset 1000 s.
    let mut idb = w.opt(9, &[0x80 | 10]);
    idb.extend(w.opt(14, &1000u64.to_le_bytes()));
    w.interface(1, &idb);
    w.packet(0, 3 * 1024 + 512, &frame(1), &[]);
    let path = temp("tsoffset.pcapng");
    std::fs::write(&path, &w.out).unwrap();
    let f = PcapSource::open(&path).unwrap().next().unwrap().unwrap();
    assert_eq!(f.timestamp_ns, 1_003_500_000_000);
    assert!(tcpdump(&path).starts_with("1003.500000000 "));
}

#[test]
fn errors_name_the_file_the_block_and_its_offset() {
    let mut w = Ng {
        big: false,
        out: vec![],
    };
    w.section(&[]);
    w.interface(1, &[]);
    w.packet(0, 0, &frame(1), &[]);
    let good = w.out.len();
    w.packet(0, 0, &frame(2), &[]);
    // The second packet's captured length runs past its block.
    let caplen_at = good + 8 + 12;
    w.out[caplen_at..caplen_at + 4].copy_from_slice(&5000u32.to_le_bytes());
    let path = temp("bad.pcapng");
    std::fs::write(&path, &w.out).unwrap();
    let mut src = PcapSource::open(&path).unwrap();
    assert!(src.next().unwrap().is_ok());
    let e = src.next().unwrap().unwrap_err().to_string();
    assert!(e.contains("bad.pcapng"), "{e}");
    assert!(e.contains("packet 2"), "{e}");
    assert!(e.contains(&format!("type 0x6 at offset {good}")), "{e}");
    assert!(e.contains("captured length 5000"), "{e}");
    assert!(src.next().is_none());

    // A packet of an interface never described; a truncated block.
    let mut w = Ng {
        big: true,
        out: vec![],
    };
    w.section(&[]);
    w.packet(3, 0, &frame(1), &[]);
    std::fs::write(&path, &w.out).unwrap();
    let e = PcapSource::open(&path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("interface 3, which was never described"),
        "{e}"
    );
    w.out.truncate(w.out.len() - 6);
    std::fs::write(&path, &w.out).unwrap();
    let e = PcapSource::open(&path)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
}
