//! Link types made Ethernet: 802.11 data frames (bare, radiotap, Prism,
//! AVS) and Linux-cooked pseudo-protocols, on frames written here; the
//! 802.11 addresses checked against what tcpdump reads in the same frames.

use std::path::PathBuf;

use capture::{LinkKind, PcapSource, to_ethernet};

const A1: [u8; 6] = [0x02, 0x11, 0, 0, 0, 1];
const A2: [u8; 6] = [0x02, 0x22, 0, 0, 0, 2];
const A3: [u8; 6] = [0x02, 0x33, 0, 0, 0, 3];
const A4: [u8; 6] = [0x02, 0x44, 0, 0, 0, 4];

/// An IPv4/UDP packet (no link header).
fn ip() -> Vec<u8> {
    let mut p = vec![0x45, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0];
    p.extend_from_slice(&[192, 0, 2, 1, 198, 51, 100, 7]);
    p.extend_from_slice(&[0x30, 0x39, 0, 53, 0, 12, 0, 0, 1, 2, 3, 4]);
    p
}

/// An 802.11 data frame: `fc1` flags (ToDS 1, FromDS 2, protected 0x40,
/// order 0x80), QoS data when `qos`, an HT Control when `htc`, `pad`
/// bytes after the header, then LLC/SNAP and `payload`.
fn dot11(fc1: u8, qos: bool, htc: bool, pad: usize, payload: &[u8]) -> Vec<u8> {
    let subtype: u8 = if qos { 8 } else { 0 };
    let mut f = vec![(subtype << 4) | (2 << 2), fc1, 0, 0];
    for a in [A1, A2, A3] {
        f.extend_from_slice(&a);
    }
    f.extend_from_slice(&[0x10, 0]); // sequence 1, fragment 0
    if fc1 & 3 == 3 {
        f.extend_from_slice(&A4);
    }
    if qos {
        f.extend_from_slice(&[0, 0]);
        if htc {
            f.extend_from_slice(&[0; 4]);
        }
    }
    f.extend(std::iter::repeat_n(0, pad));
    f.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00]);
    f.extend_from_slice(payload);
    f
}

/// A radiotap header with TSFT and Flags (`flags`).
fn radiotap(flags: u8, frame: &[u8]) -> Vec<u8> {
    // version, pad, length 8 + 8 (TSFT, aligned) + 1 (flags), present.
    let mut h = vec![0, 0, 17, 0, 0x03, 0, 0, 0];
    h.extend_from_slice(&[0x55; 8]);
    h.push(flags);
    h.extend_from_slice(frame);
    h
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-frames-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A classic pcap of link type `linktype`.
fn pcap(linktype: u32, frames: &[Vec<u8>]) -> PathBuf {
    let mut v = vec![];
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    for x in [0u32, 0, 65_535, linktype] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        for x in [i as u32, 0, f.len() as u32, f.len() as u32] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(f);
    }
    let path = temp(&format!("lt{linktype}.pcap"));
    std::fs::write(&path, v).unwrap();
    path
}

fn mac(m: &[u8]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[test]
fn dot11_data_frames_take_their_addresses_by_to_ds_and_from_ds() {
    // (flags, destination, source) as 802.11 defines the address fields.
    let cases = [(0u8, A1, A2), (2, A1, A3), (1, A3, A2), (3, A3, A4)];
    let payload = ip();
    let mut frames = vec![];
    for (fc1, dst, src) in cases {
        for (qos, htc) in [(false, false), (true, false), (true, true)] {
            // The Order bit says "HT Control follows" in QoS frames only.
            let flags = fc1 | if htc { 0x80 } else { 0 };
            let f = dot11(flags, qos, htc, 0, &payload);
            let (eth, kind) = to_ethernet(105, &f);
            assert_eq!(kind, LinkKind::Converted, "{fc1} {qos} {htc}");
            assert_eq!(&eth[..6], &dst);
            assert_eq!(&eth[6..12], &src);
            assert_eq!(&eth[12..14], &[0x08, 0x00]);
            assert_eq!(&eth[14..], &payload[..]);
            // tcpdump does not skip an HT Control: compared without.
            if !htc {
                frames.push(f);
            }
        }
    }
    // tcpdump names the same source and destination ("SA", "DA").
    let path = pcap(105, &frames);
    let out = testkit::tool::output(
        std::process::Command::new("tcpdump")
            .args(["-nn", "-e", "-r"])
            .arg(&path),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), frames.len(), "{text}");
    for (line, (i, f)) in lines.iter().zip(frames.iter().enumerate()) {
        let (eth, _) = to_ethernet(105, f);
        assert!(
            line.contains(&format!("DA:{}", mac(&eth[..6]))),
            "{i}: {line}"
        );
        assert!(
            line.contains(&format!("SA:{}", mac(&eth[6..12]))),
            "{i}: {line}"
        );
        assert!(line.contains("192.0.2.1.12345 > 198.51.100.7.53"), "{line}");
    }
}

#[test]
fn radio_headers_are_stripped_fcs_and_padding_too() {
    let payload = ip();
    let want = {
        let mut e = A3.to_vec();
        e.extend_from_slice(&A2);
        e.extend_from_slice(&[0x08, 0x00]);
        e.extend_from_slice(&payload);
        e
    };
    // Radiotap: FCS at the end (0x10), a padded body (0x20: a QoS header
    // of 26 bytes padded to 28).
    let mut f = dot11(1, false, false, 0, &payload);
    f.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(
        to_ethernet(127, &radiotap(0x10, &f)),
        (want.clone(), LinkKind::Converted)
    );
    let f = dot11(1, true, false, 2, &payload);
    assert_eq!(
        to_ethernet(127, &radiotap(0x20, &f)),
        (want.clone(), LinkKind::Converted)
    );
    // Without TSFT the Flags byte follows the presence word.
    let f = dot11(1, false, false, 0, &payload);
    let mut rt = vec![0, 0, 9, 0, 0x02, 0, 0, 0, 0];
    rt.extend_from_slice(&f);
    assert_eq!(to_ethernet(127, &rt), (want.clone(), LinkKind::Converted));
    // Prism: a 144-byte header; AVS: its length in its second word, under
    // its own link type or Prism's.
    let mut prism = vec![0x44; 144];
    prism.extend_from_slice(&f);
    assert_eq!(
        to_ethernet(119, &prism),
        (want.clone(), LinkKind::Converted)
    );
    let mut avs = 0x8021_1001u32.to_be_bytes().to_vec();
    avs.extend_from_slice(&64u32.to_be_bytes());
    avs.resize(64, 0);
    avs.extend_from_slice(&f);
    assert_eq!(to_ethernet(163, &avs), (want.clone(), LinkKind::Converted));
    assert_eq!(to_ethernet(119, &avs), (want, LinkKind::Converted));
    // A radiotap header longer than the frame is no 802.11 frame.
    let bad = vec![0, 0, 200, 0, 0, 0, 0, 0];
    assert_eq!(
        to_ethernet(127, &bad),
        (bad.clone(), LinkKind::Foreign(127))
    );
}

#[test]
fn frames_without_an_ethernet_form_stay_foreign() {
    let payload = ip();
    let foreign = |linktype: u32, f: Vec<u8>| {
        assert_eq!(to_ethernet(linktype, &f), (f, LinkKind::Foreign(linktype)));
    };
    // Protected (encrypted): the body is no LLC header to read.
    foreign(105, dot11(0x41, false, false, 0, &payload));
    // A beacon (management), an ACK (control), a null data frame.
    let mut beacon = vec![0x80, 0, 0, 0];
    beacon.extend_from_slice(&[0xff; 6]);
    beacon.extend_from_slice(&A2);
    beacon.extend_from_slice(&A2);
    beacon.extend_from_slice(&[0; 2 + 12]);
    foreign(105, beacon);
    foreign(105, vec![0xd4, 0, 0, 0, 1, 2, 3, 4, 5, 6]);
    let mut null = dot11(1, false, false, 0, &[]);
    null[0] = 0x48;
    null.truncate(24);
    foreign(105, null);
    // A fragment; an A-MSDU; LLC without SNAP.
    let mut frag = dot11(1, false, false, 0, &payload);
    frag[1] |= 0x04;
    foreign(105, frag);
    let mut amsdu = dot11(1, true, false, 0, &payload);
    amsdu[24] = 0x80;
    foreign(105, amsdu);
    let mut llc = dot11(1, false, false, 0, &payload);
    llc[24..27].copy_from_slice(&[0x42, 0x42, 0x03]);
    foreign(105, llc);
    foreign(105, vec![0x08, 0x01, 0]);
    foreign(127, radiotap(0, &[0x08]));
}

#[test]
fn linux_cooked_pseudo_protocols() {
    // SLL2: protocol 0..2, ARPHRD 8..10, 20 bytes; SLL: ARPHRD 2..4,
    // protocol 14..16, 16 bytes.
    let sll2 = |proto: u16, hatype: u16, payload: &[u8]| {
        let mut h = proto.to_be_bytes().to_vec();
        h.extend_from_slice(&[0, 0, 0, 0, 0, 1]);
        h.extend_from_slice(&hatype.to_be_bytes());
        h.extend_from_slice(&[0, 6]);
        h.extend_from_slice(&[0x02, 0, 0, 0, 0, 9, 0, 0]);
        h.extend_from_slice(payload);
        h
    };
    let sll = |proto: u16, hatype: u16, payload: &[u8]| {
        let mut h = vec![0, 0];
        h.extend_from_slice(&hatype.to_be_bytes());
        h.extend_from_slice(&[0, 6, 0x02, 0, 0, 0, 0, 9, 0, 0]);
        h.extend_from_slice(&proto.to_be_bytes());
        h.extend_from_slice(payload);
        h
    };
    let payload = ip();
    for (lt, make) in [
        (276u32, &sll2 as &dyn Fn(u16, u16, &[u8]) -> Vec<u8>),
        (113, &sll),
    ] {
        let (eth, kind) = to_ethernet(lt, &make(0x0800, 1, &payload));
        assert_eq!(
            (kind, &eth[12..14], &eth[14..]),
            (LinkKind::Converted, &[8u8, 0][..], &payload[..])
        );
        // 802.2 LLC: an 802.3 frame, the length where the type was.
        let llc = [0x42, 0x42, 0x03, 1, 2, 3];
        let (eth, kind) = to_ethernet(lt, &make(0x0004, 1, &llc));
        assert_eq!(
            (kind, &eth[12..14], &eth[14..]),
            (LinkKind::Converted, &[0u8, 6][..], &llc[..])
        );
        // Netlink (ARPHRD 824) and CAN (protocol 0x000c): as captured.
        let f = make(0x0000, 824, &[1, 2, 3, 4]);
        assert_eq!(to_ethernet(lt, &f), (f.clone(), LinkKind::Foreign(lt)));
        let f = make(0x000c, 280, &[1, 2, 3, 4]);
        assert_eq!(to_ethernet(lt, &f), (f.clone(), LinkKind::Foreign(lt)));
    }
}

#[test]
fn a_radiotap_capture_reads_as_ethernet() {
    let f = radiotap(0x10, &{
        let mut f = dot11(2, true, false, 0, &ip());
        f.extend_from_slice(&[0; 4]);
        f
    });
    let path = pcap(127, &[f]);
    let frames: Vec<_> = PcapSource::open(&path)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].link, LinkKind::Converted);
    assert_eq!(&frames[0].data[..12], &[A1, A3].concat()[..]);
}
