//! What the side-by-side tests with Open vSwitch share: the frames of
//! OVS's "Advanced Features" tutorial in its order, the frame they make,
//! OVS's datapath actions read as outputs, and the comparison of one run
//! of them through OVS's `ofproto/trace` and through sluice's datapath.

#![allow(dead_code)]

use openflow::port;
use switch::{CacheOptions, Datapath, Output, Shared, ToController};
use testkit::ovs::OvsSandbox;

pub const BCAST: &str = "ff:ff:ff:ff:ff:ff";

/// The tutorial's test frames, in its order: (in_port, dl_src, dl_dst,
/// VLAN).
pub const FRAMES: &[(u32, &str, &str, Option<u16>)] = &[
    // Table 0.
    (1, "00:00:00:00:00:00", "01:80:c2:00:00:05", None),
    (1, "00:00:00:00:00:00", "01:80:c2:00:00:10", None),
    (1, "01:00:00:00:00:01", BCAST, None),
    // Table 1.
    (1, "00:00:00:00:00:00", "00:00:00:00:00:00", Some(5)),
    (2, "00:00:00:00:00:00", "00:00:00:00:00:00", None),
    (2, "00:00:00:00:00:00", "00:00:00:00:00:00", Some(5)),
    // Table 2: learning.
    (1, "50:00:00:00:00:01", BCAST, Some(20)),
    (2, "50:00:00:00:00:01", BCAST, None),
    // Table 3.
    (1, "f0:00:00:00:00:01", "90:00:00:00:00:01", Some(20)),
    (2, "90:00:00:00:00:01", "f0:00:00:00:00:01", None),
    (1, "f0:00:00:00:00:01", "90:00:00:00:00:01", Some(20)),
    // Table 4: broadcast, multicast, unknown destinations.
    (1, "00:00:00:00:00:00", BCAST, Some(30)),
    (3, "00:00:00:00:00:00", BCAST, None),
    (1, "00:00:00:00:00:00", BCAST, None),
    (1, "00:00:00:00:00:00", BCAST, Some(55)),
    (1, "00:00:00:00:00:00", BCAST, Some(20)),
    (2, "00:00:00:00:00:00", BCAST, None),
    (4, "00:00:00:00:00:00", BCAST, None),
    (4, "00:00:00:00:00:00", "01:00:00:00:00:00", None),
    (1, "00:00:00:00:00:00", "90:12:34:56:78:90", Some(20)),
    (1, "00:00:00:00:00:00", "90:12:34:56:78:90", Some(30)),
    // Table 4: MAC learning.
    (1, "10:00:00:00:00:01", "20:00:00:00:00:01", Some(30)),
    (4, "20:00:00:00:00:01", "10:00:00:00:00:01", None),
    (1, "10:00:00:00:00:01", "20:00:00:00:00:01", Some(30)),
];

pub fn mac(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (i, part) in s.split(':').enumerate() {
        m[i] = u8::from_str_radix(part, 16).unwrap();
    }
    m
}

/// An Ethernet frame (a local experimental ethertype, 46 bytes of payload),
/// 802.1Q-tagged with `vlan` (PCP 0).
pub fn frame(src: &str, dst: &str, vlan: Option<u16>) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&mac(dst));
    f.extend_from_slice(&mac(src));
    if let Some(vid) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&[0x88, 0xb5]);
    f.extend((0..46u8).map(|i| i.wrapping_mul(7)));
    f
}

/// A frame's VLAN (its 802.1Q tag's VID, PCP 0 required) and the frame
/// without the tag.
pub fn untag(f: &[u8]) -> (Option<u16>, Vec<u8>) {
    if f.len() >= 16 && f[12..14] == [0x81, 0x00] {
        let tci = u16::from_be_bytes([f[14], f[15]]);
        assert_eq!(tci >> 12, 0, "PCP 0, CFI 0: {tci:#x}");
        let mut plain = f[..12].to_vec();
        plain.extend_from_slice(&f[16..]);
        (Some(tci & 0xfff), plain)
    } else {
        (None, f.to_vec())
    }
}

/// What OVS's datapath actions do to a frame tagged `vlan`: each output,
/// with the VLAN the frame then has.
pub fn ovs_outputs(actions: &str, mut vlan: Option<u16>) -> Vec<(u32, Option<u16>)> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in actions.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&actions[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&actions[start..]);
    for p in parts {
        let p = p.trim();
        if p == "drop" || p.is_empty() {
            continue;
        }
        if p == "pop_vlan" {
            vlan = None;
        } else if let Some(args) = p.strip_prefix("push_vlan(") {
            let vid = args
                .split(',')
                .find_map(|a| a.strip_prefix("vid="))
                .unwrap_or_else(|| panic!("{p}"));
            assert!(args.contains("pcp=0"), "{p}");
            vlan = Some(vid.parse().unwrap());
        } else {
            let port: u32 = p
                .parse()
                .unwrap_or_else(|_| panic!("OVS action {p} in {actions}"));
            // The bridge's own port (br0) is datapath port 100 in the sandbox.
            let port = if port == 100 { port::LOCAL } else { port };
            out.push((port, vlan));
        }
    }
    out
}

#[derive(Default)]
pub struct Seen(pub Vec<(u32, Vec<u8>)>);

impl Output for Seen {
    fn send(&mut self, port: u32, frame: &[u8]) {
        self.0.push((port, frame.to_vec()));
    }
    fn to_controller(&mut self, _: &[u8], _: u32, _: &ToController) {
        panic!("no flow of the tutorial sends to the controller");
    }
}

/// Ports 1..=`n` named p1.., and LOCAL (br0), as the sandbox has them.
pub fn ofproto_with_ports(n: u32) -> switch::Ofproto {
    let mut of = switch::Ofproto::new();
    for p in (1..=n).chain([port::LOCAL]) {
        of.set_port(openflow::Port {
            port_no: p,
            name: if p == port::LOCAL {
                "br0".into()
            } else {
                format!("p{p}")
            },
            ..openflow::Port::default()
        });
    }
    of
}

/// [`FRAMES`] in order through OVS (`ofproto/trace`, which learns as a
/// packet does) and through sluice's datapath with its caches: each frame
/// must leave by the same ports with the same VLAN tag, and only the tag
/// may change. `as_sets`: compare a frame's copies regardless of order (a
/// flood's order is OVS's list of ports).
pub fn same_as_ovs(ovs: &OvsSandbox, shared: &Shared, as_sets: bool) {
    let mut dp = Datapath::new(CacheOptions::default());
    for (n, &(in_port, src, dst, vlan)) in FRAMES.iter().enumerate() {
        let f = frame(src, dst, vlan);
        let trace = ovs.trace(in_port, &f);
        let mut want = ovs_outputs(&trace.actions, vlan);
        let mut seen = Seen::default();
        dp.process(&f, in_port, n as u64 * 1_000_000, shared, &mut seen);
        let plain = untag(&f).1;
        let mut got: Vec<(u32, Option<u16>)> = seen
            .0
            .iter()
            .map(|(port, out)| {
                let (vid, rest) = untag(out);
                assert_eq!(rest, plain, "frame {n}: only the tag may change");
                (*port, vid)
            })
            .collect();
        if as_sets {
            want.sort();
            got.sort();
        }
        assert_eq!(
            got, want,
            "frame {n} (in_port={in_port},dl_src={src},dl_dst={dst},vlan={vlan:?}): OVS said {:?}\n{}",
            trace.actions, trace.text
        );
    }
}
