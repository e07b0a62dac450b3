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

#[path = "common/side_by_side.rs"]
mod side_by_side;

use openflow::FlowModCommand;
use side_by_side::{ofproto_with_ports, same_as_ovs};
use switch::Shared;
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

fn sluice() -> Shared {
    let mut of = ofproto_with_ports(4);
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
    same_as_ovs(&ovs, &shared, false);
    let (theirs, ours) = (learned_by_ovs(&ovs), learned_by_sluice(&shared));
    assert_eq!(ours, theirs, "table 10, learned");
    // Ten MAC+VLAN pairs, the learned ports among 1, 2 and 4.
    assert_eq!(ours.len(), 10, "{ours:?}");
}
