//! Open vSwitch's "Advanced Features" tutorial (OVS's `tutorial/Tutorial`),
//! side by side with Open vSwitch 3.1 itself: its flows (a VLAN-aware
//! learning switch in five tables: admission, VLAN input, `learn` of
//! MAC+VLAN into table 10 with the port in a register, lookup by
//! `resubmit`, output) given to both, then the tutorial's test frames in
//! its order, each through OVS (`ofproto/trace` in a sandbox on the dummy
//! datapath, which runs `learn` as a packet does) and through sluice's
//! datapath (caches and all). Every frame must leave by the same ports
//! with the same VLAN tag, and the learned table 10 must hold the same
//! flows.

use openflow::FlowModCommand;
use switch::{CacheOptions, Datapath, Ofproto, Output, Shared, ToController};
use testkit::ovs::OvsSandbox;

/// The tutorial's flows, as it gives them to `ovs-ofctl add-flow(s)`.
const FLOWS: &[&str] = &[
    // Table 0: admission control.
    "table=0, dl_src=01:00:00:00:00:00/01:00:00:00:00:00, actions=drop",
    "table=0, dl_dst=01:80:c2:00:00:00/ff:ff:ff:ff:ff:f0, actions=drop",
    "table=0, priority=0, actions=resubmit(,1)",
    // Table 1: VLAN input (p1 a trunk, p2 access VLAN 20, p3 and p4 30).
    "table=1, priority=0, actions=drop",
    "table=1, priority=99, in_port=1, actions=resubmit(,2)",
    "table=1, priority=99, in_port=2, vlan_tci=0, actions=mod_vlan_vid:20, resubmit(,2)",
    "table=1, priority=99, in_port=3, vlan_tci=0, actions=mod_vlan_vid:30, resubmit(,2)",
    "table=1, priority=99, in_port=4, vlan_tci=0, actions=mod_vlan_vid:30, resubmit(,2)",
    // Table 2: MAC+VLAN learning for the ingress port.
    "table=2 actions=learn(table=10, NXM_OF_VLAN_TCI[0..11], NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[], load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]), resubmit(,3)",
    // Table 3: look up the destination port.
    "table=3 priority=50 actions=resubmit(,10), resubmit(,4)",
    "table=3 priority=99 dl_dst=01:00:00:00:00:00/01:00:00:00:00:00 actions=resubmit(,4)",
    // Table 4: output.
    "table=4 reg0=1 actions=1",
    "table=4 reg0=2 actions=strip_vlan,2",
    "table=4 reg0=3 actions=strip_vlan,3",
    "table=4 reg0=4 actions=strip_vlan,4",
    "table=4 reg0=0 priority=99 dl_vlan=20 actions=1,strip_vlan,2",
    "table=4 reg0=0 priority=99 dl_vlan=30 actions=1,strip_vlan,3,4",
    "table=4 reg0=0 priority=50 actions=1",
];

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
    for flow in FLOWS {
        let fm = openflow::parse_flow(flow, FlowModCommand::Add)
            .unwrap_or_else(|e| panic!("{flow}: {e}"));
        of.flow_mod(&fm, 0)
            .unwrap_or_else(|e| panic!("{flow}: {e}"));
    }
    Shared::new(of)
}

/// Table 10's flows as `ovs-ofctl dump-flows` prints their match and
/// actions, sorted.
fn learned_by_ovs(ovs: &OvsSandbox) -> Vec<String> {
    let text = ovs.run(
        "ovs-ofctl",
        &["-O", "OpenFlow13", "dump-flows", "br0", "table=10"],
    );
    let mut v: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_once("n_bytes="))
        .map(|(_, rest)| {
            rest.split_once(", ")
                .map_or(rest, |r| r.1)
                .trim()
                .to_string()
        })
        .collect();
    v.sort();
    v
}

fn learned_by_sluice(shared: &Shared) -> Vec<String> {
    let mut v: Vec<String> = shared.with(|of| {
        of.tables[10]
            .entries()
            .map(|(_, e)| {
                format!(
                    "{} {}",
                    openflow::format_match(&e.matcher),
                    openflow::format_actions(&e.instructions)
                )
            })
            .collect()
    });
    v.sort();
    v
}

#[test]
fn the_advanced_features_tutorial_forwards_as_open_vswitch_does() {
    let Some(ovs) = OvsSandbox::start("the OVS tutorial comparison", 4) else {
        return;
    };
    ovs.add_flows(FLOWS);
    let shared = sluice();
    let mut dp = Datapath::new(CacheOptions::default());
    for (n, &(in_port, src, dst, vlan)) in FRAMES.iter().enumerate() {
        let f = frame(src, dst, vlan);
        let trace = ovs.trace(in_port, &f);
        let want = ovs_outputs(&trace.actions, vlan);
        let mut seen = Seen::default();
        dp.process(&f, in_port, n as u64 * 1_000_000, &shared, &mut seen);
        let plain = untag(&f).1;
        let got: Vec<(u32, Option<u16>)> = seen
            .0
            .iter()
            .map(|(port, out)| {
                let (vid, rest) = untag(out);
                assert_eq!(rest, plain, "frame {n}: only the tag may change");
                (*port, vid)
            })
            .collect();
        assert_eq!(
            got, want,
            "frame {n} (in_port={in_port},dl_src={src},dl_dst={dst},vlan={vlan:?}): OVS said {:?}\n{}",
            trace.actions, trace.text
        );
    }
    let (theirs, ours) = (learned_by_ovs(&ovs), learned_by_sluice(&shared));
    assert_eq!(ours, theirs, "table 10, learned");
    // Ten MAC+VLAN pairs, the learned ports among 1, 2 and 4.
    assert_eq!(ours.len(), 10, "{ours:?}");
}
