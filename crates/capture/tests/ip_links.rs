//! IP over PPP, Cisco HDLC, ARCNET and behind Juniper headers becomes
//! Ethernet that tcpdump reads as it reads the original: for every frame
//! of those link types in tcpdump's corpus, tcpdump's line for the frame
//! made Ethernet is its line for the frame as captured; a frame left as
//! captured is one tcpdump reads no IP in.

use std::path::Path;
use std::process::Command;

use capture::{LinkKind, PcapSource, to_ethernet};

/// PPP, PPP_HDLC, C_HDLC, ARCNET_BSD, ARCNET_LINUX, IPNET and the
/// Juniper link types.
fn converted_link(linktype: u32) -> bool {
    matches!(
        linktype,
        7 | 9 | 50 | 104 | 129 | 226 | 130..=137 | 164 | 167 | 168 | 178..=183 | 194 | 200 | 217..=219 | 238
    )
}

/// A one-frame pcap of link type `linktype`.
fn write_pcap(path: &Path, linktype: u32, data: &[u8]) {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&262_144u32.to_le_bytes());
    f.extend_from_slice(&linktype.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    let len = (data.len() as u32).to_le_bytes();
    f.extend_from_slice(&len);
    f.extend_from_slice(&len);
    f.extend_from_slice(data);
    std::fs::write(path, f).unwrap();
}

/// tcpdump's text for the one frame of `path`, without a timestamp.
fn tcpdump_text(path: &Path) -> String {
    let out = testkit::tool::output(Command::new("tcpdump").args(["-n", "-t", "-r"]).arg(path));
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

fn reads_ip(text: &str) -> bool {
    ["IP ", "IP6 ", "MPLS "].iter().any(|p| text.starts_with(p))
}

#[test]
fn ip_over_serial_arcnet_and_juniper_links_reads_as_tcpdump_reads_it() {
    let dir = std::env::temp_dir().join(format!("sluice-ip-links-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (orig, conv) = (dir.join("orig.pcap"), dir.join("conv.pcap"));
    let (mut converted, mut kept, mut files) = (0, 0, 0);
    for path in testkit::captures() {
        let mut src = PcapSource::open(&path).unwrap();
        let mut counted = false;
        while let Some(Ok(frame)) = src.next_raw() {
            if !converted_link(frame.linktype) {
                break;
            }
            if !counted {
                files += 1;
                counted = true;
            }
            let (linktype, data) = (frame.linktype, frame.data.to_vec());
            write_pcap(&orig, linktype, &data);
            let want = tcpdump_text(&orig);
            let (eth, kind) = to_ethernet(linktype, &data);
            let name = path.file_name().unwrap().to_string_lossy();
            match kind {
                LinkKind::Converted => {
                    write_pcap(&conv, 1, &eth);
                    assert_eq!(tcpdump_text(&conv), want, "{name}: frame made Ethernet");
                    converted += 1;
                }
                LinkKind::Foreign(l) => {
                    assert_eq!(l, linktype);
                    assert!(!reads_ip(&want), "{name}: left as captured, yet {want}");
                    kept += 1;
                }
                LinkKind::Ethernet => panic!("{name}: not Ethernet"),
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    // The corpus: 22 IP frames of 26 in the ARCNET capture, IP and MPLS
    // over PPP, IS-IS and SLARP over Cisco HDLC, Juniper Ethernet.
    assert_eq!(
        (files, converted, kept),
        (25, 48, 80),
        "captures, frames converted, frames left"
    );
}

/// An IPv4/UDP packet, 10.0.0.1:1000 > 10.0.0.2:53, 4 bytes of payload.
fn udp4() -> Vec<u8> {
    let mut ip = vec![
        0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    ip.extend_from_slice(&[0x03, 0xe8, 0, 53, 0, 12, 0, 0, 1, 2, 3, 4]);
    ip
}

fn with(header: &[u8], payload: &[u8]) -> Vec<u8> {
    [header, payload].concat()
}

/// Link types the corpus has no IP frame of, made up: tcpdump reads the
/// same packet in the frame and in the Ethernet frame made of it.
#[test]
fn made_up_ipnet_and_juniper_frames_read_as_tcpdump_reads_them() {
    let ip = udp4();
    let mut ipnet = vec![1, 2, 0, 0];
    ipnet.extend_from_slice(&(ip.len() as u32).to_be_bytes());
    ipnet.extend_from_slice(&[0; 16]);
    let cookie = [0x01, 0, 0, 0, 0, 0, 0, 0];
    let cases: Vec<(&str, u32, Vec<u8>)> = vec![
        ("IPNET", 226, with(&ipnet, &ip)),
        (
            "JUNIPER_MONITOR",
            164,
            with(&with(b"MGC\x00", &cookie), &ip),
        ),
        (
            "JUNIPER_SERVICES",
            136,
            with(&with(b"MGC\x01", &cookie), &ip),
        ),
        (
            "JUNIPER_GGSN",
            133,
            with(&with(b"MGC\x00", &[0, 0, 2, 0, 0, 0, 0, 0]), &ip),
        ),
        ("JUNIPER_PPP", 179, with(b"MGC\x00\xff\x03\x00\x21", &ip)),
        ("JUNIPER_CHDLC", 181, with(b"MGC\x00\x0f\x00\x08\x00", &ip)),
        ("JUNIPER_ATM1 no-L2", 137, with(b"MGC\x02\0\0\0\0", &ip)),
        (
            "JUNIPER_PPP with an extension",
            179,
            with(b"MGC\x80\x00\x03\x01\x01\x07\xff\x03\x00\x21", &ip),
        ),
    ];
    let dir = std::env::temp_dir().join(format!("sluice-ip-links-made-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (orig, conv) = (dir.join("orig.pcap"), dir.join("conv.pcap"));
    for (name, linktype, frame) in cases {
        let (eth, kind) = to_ethernet(linktype, &frame);
        assert_eq!(kind, LinkKind::Converted, "{name}");
        assert_eq!(&eth[14..], &ip[..], "{name}");
        write_pcap(&orig, linktype, &frame);
        write_pcap(&conv, 1, &eth);
        let want = tcpdump_text(&orig);
        assert!(
            want.contains("10.0.0.1.1000 > 10.0.0.2.53"),
            "{name}: {want}"
        );
        assert_eq!(tcpdump_text(&conv), want, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
