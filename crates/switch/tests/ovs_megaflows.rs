//! Megaflows as general as Open vSwitch's: the same flows in sluice and in
//! Open vSwitch 3.1 (a sandbox on its dummy datapath, `testkit::ovs`), the
//! same scan sent to both, and sluice may not install more megaflows (nor
//! make more upcalls) than OVS. A scan past a flow on one port or one
//! address must not become one megaflow per packet: a miss looks only at
//! the bits that tell the packet apart from the flows (whole fields, and
//! the high bits of addresses and ports, as OVS's staged lookup and prefix
//! tries do).

#[path = "common/side_by_side.rs"]
mod side_by_side;

use openflow::FlowModCommand;
use switch::{CacheOptions, Datapath, Output, Shared, ToController};
use testkit::ovs::OvsSandbox;

struct Nothing;

impl Output for Nothing {
    fn send(&mut self, _: u32, _: &[u8]) {}
    fn to_controller(&mut self, _: &[u8], _: u32, _: &ToController) {}
}

fn sluice(flows: &[&str]) -> Shared {
    let mut of = side_by_side::ofproto_with_ports(2);
    for flow in flows {
        let fm = openflow::parse_flow(flow, FlowModCommand::Add).unwrap();
        of.flow_mod(&fm, 0).unwrap();
    }
    Shared::new(of)
}

/// Megaflows and upcalls after `frames` arrive on port 1, in sluice and
/// in OVS: ((sluice megaflows, upcalls), OVS megaflows).
fn scan(ovs: &OvsSandbox, flows: &[&str], frames: &[Vec<u8>]) -> ((usize, u64), usize) {
    ovs.run("ovs-ofctl", &["del-flows", "br0"]);
    ovs.run("ovs-appctl", &["dpctl/del-flows"]);
    ovs.add_flows(flows);
    let shared = sluice(flows);
    let mut dp = Datapath::new(CacheOptions::default());
    for (i, f) in frames.iter().enumerate() {
        dp.process(f, 1, i as u64, &shared, &mut Nothing);
        ovs.receive(1, f);
    }
    // OVS installs its megaflows from its handler threads: wait until the
    // count stays put.
    let mut theirs = ovs.datapath_flows().len();
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let now = ovs.datapath_flows().len();
        if now == theirs && now > 0 {
            break;
        }
        theirs = now;
    }
    ((dp.megaflows().count(), dp.stats.upcalls), theirs)
}

#[test]
fn a_port_scan_and_an_address_scan_need_no_more_megaflows_than_in_ovs() {
    let Some(ovs) = OvsSandbox::start("the megaflow comparison with OVS", 2) else {
        return;
    };
    // The case: one flow on one UDP port, 200 datagrams to others.
    let flows = ["udp,tp_dst=9999,actions=drop"];
    let frames: Vec<Vec<u8>> = (0..200)
        .map(|i| packet::Builder::udp("10.0.0.1", "10.0.0.2", 1234, 20000 + i).build())
        .collect();
    let ((ours, upcalls), theirs) = scan(&ovs, &flows, &frames);
    println!("port scan: sluice {ours} megaflows ({upcalls} upcalls), OVS {theirs}");
    assert!(ours <= theirs, "port scan: sluice {ours}, OVS {theirs}");
    assert_eq!(upcalls as usize, ours, "an upcall per megaflow, no more");
    // An address scan past a flow on one address, with a port flow too.
    let flows = [
        "ip,nw_dst=10.0.0.1,actions=drop",
        "tcp,tp_dst=80,actions=output:2",
    ];
    let frames: Vec<Vec<u8>> = (0..200u32)
        .map(|i| {
            let dst = std::net::Ipv4Addr::from(0x0a00_0100 + i).to_string();
            packet::Builder::tcp("10.9.0.1", &dst, 4000, 443).build()
        })
        .collect();
    let ((ours, upcalls), theirs) = scan(&ovs, &flows, &frames);
    println!("address scan: sluice {ours} megaflows ({upcalls} upcalls), OVS {theirs}");
    assert!(ours <= theirs, "address scan: sluice {ours}, OVS {theirs}");
    assert!(
        ours < 20,
        "an address scan is not one megaflow per address: {ours}"
    );
}
