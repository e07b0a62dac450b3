//! The NORMAL port side by side with Open vSwitch 3.1 (a sandbox on its
//! dummy datapath, `testkit::ovs`): the same ports (p1 a trunk, p2 an
//! access port of VLAN 20, p3 and p4 of VLAN 30, as `ovs-vsctl set port
//! pN tag=V` sets them), one flow `actions=NORMAL`, and the frames of
//! OVS's tutorial in its order through OVS's `ofproto/trace` (which learns
//! as a packet does) and through sluice's datapath: every frame leaves by
//! the same ports with the same VLAN tag (LOCAL, the bridge's own port,
//! a trunk in both; a flood's order is OVS's list of ports, so outputs are
//! compared as sets).

use openflow::FlowModCommand;
use switch::{CacheOptions, Datapath, Ofproto, Output, PortVlan, Shared, ToController};
use testkit::ovs::OvsSandbox;

const BCAST: &str = "ff:ff:ff:ff:ff:ff";

/// The tutorial's test frames, in its order: (in_port, dl_src, dl_dst,
/// VLAN).
const FRAMES: &[(u32, &str, &str, Option<u16>)] = &[
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

fn mac(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (i, part) in s.split(':').enumerate() {
        m[i] = u8::from_str_radix(part, 16).unwrap();
    }
    m
}

/// An Ethernet frame (a local experimental ethertype, 46 bytes of payload),
/// 802.1Q-tagged with `vlan` (PCP 0).
fn frame(src: &str, dst: &str, vlan: Option<u16>) -> Vec<u8> {
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
fn untag(f: &[u8]) -> (Option<u16>, Vec<u8>) {
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
fn ovs_outputs(actions: &str, mut vlan: Option<u16>) -> Vec<(u32, Option<u16>)> {
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
            let port = if port == 100 {
                openflow::port::LOCAL
            } else {
                port
            };
            out.push((port, vlan));
        }
    }
    out
}

#[derive(Default)]
struct Seen(Vec<(u32, Vec<u8>)>);

impl Output for Seen {
    fn send(&mut self, port: u32, frame: &[u8]) {
        self.0.push((port, frame.to_vec()));
    }
    fn to_controller(&mut self, _: &[u8], _: u32, _: &ToController) {
        panic!("no flow of the tutorial sends to the controller");
    }
}

fn sluice() -> Shared {
    let mut of = Ofproto::new();
    for p in 1..=4 {
        of.set_port(openflow::Port {
            port_no: p,
            name: format!("p{p}"),
            ..openflow::Port::default()
        });
    }
    // LOCAL, a trunk, as the bridge's own port is in OVS.
    of.set_port(openflow::Port {
        port_no: openflow::port::LOCAL,
        name: "br0".into(),
        ..openflow::Port::default()
    });
    for (p, tag) in [(2, 20), (3, 30), (4, 30)] {
        of.set_port_vlan(
            p,
            PortVlan {
                tag: Some(tag),
                trunks: Vec::new(),
            },
        );
    }
    let fm = openflow::parse_flow("actions=NORMAL", FlowModCommand::Add).unwrap();
    of.flow_mod(&fm, 0).unwrap();
    Shared::new(of)
}

#[test]
fn the_normal_port_forwards_and_learns_as_open_vswitch_does() {
    let Some(ovs) = OvsSandbox::start("the NORMAL comparison with OVS", 4) else {
        return;
    };
    for (p, tag) in [(2, 20), (3, 30), (4, 30)] {
        ovs.run(
            "ovs-vsctl",
            &["set", "port", &format!("p{p}"), &format!("tag={tag}")],
        );
    }
    ovs.add_flows(&["actions=NORMAL"]);
    let shared = sluice();
    let mut dp = Datapath::new(CacheOptions::default());
    for (n, &(in_port, src, dst, vlan)) in FRAMES.iter().enumerate() {
        let f = frame(src, dst, vlan);
        let trace = ovs.trace(in_port, &f);
        // The flood's order is OVS's bundle list order: compare sets.
        let mut want = ovs_outputs(&trace.actions, vlan);
        want.sort();
        let mut seen = Seen::default();
        dp.process(&f, in_port, n as u64 * 1_000_000, &shared, &mut seen);
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
        got.sort();
        assert_eq!(
            got, want,
            "frame {n} (in_port={in_port},dl_src={src},dl_dst={dst},vlan={vlan:?}): OVS said {:?}\n{}",
            trace.actions, trace.text
        );
    }
    let learned = shared.with(|of| of.macs.len());
    assert!(learned >= 5, "{learned} MACs learned");
}
