//! The NORMAL port side by side with Open vSwitch 3.1 (a sandbox on its
//! dummy datapath, `testkit::ovs`): the same ports (p1 a trunk, p2 an
//! access port of VLAN 20, p3 and p4 of VLAN 30, as `ovs-vsctl set port
//! pN tag=V` sets them), one flow `actions=NORMAL`, and the frames of
//! OVS's tutorial in its order through OVS's `ofproto/trace` (which learns
//! as a packet does) and through sluice's datapath: every frame leaves by
//! the same ports with the same VLAN tag (LOCAL, the bridge's own port,
//! a trunk in both; a flood's order is OVS's list of ports, so outputs are
//! compared as sets).

#[path = "common/side_by_side.rs"]
mod side_by_side;

use openflow::FlowModCommand;
use side_by_side::{ofproto_with_ports, same_as_ovs};
use switch::{PortVlan, Shared};
use testkit::ovs::OvsSandbox;

fn sluice() -> Shared {
    let mut of = ofproto_with_ports(4);
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
    same_as_ovs(&ovs, &shared, true);
    let learned = shared.with(|of| of.macs.len());
    assert!(learned >= 5, "{learned} MACs learned");
}
