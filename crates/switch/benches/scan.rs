//! Megaflows and upcalls under scans, sluice beside Open vSwitch 3.1 (a
//! sandbox on its dummy datapath, `testkit::ovs`, no root): one flow on one
//! UDP port and 65,535 datagrams to every other port; one flow on one
//! address and 65,536 TCP segments to the addresses of a /16. Prints, per
//! scan and switch, the megaflows installed, the upcalls made and, for
//! sluice (in process), the frames per second through its caches; and the
//! ratios (goal: no more upcalls than OVS). OVS's frames go in through
//! `netdev-dummy/receive`, a few hundred per call, so its times are the
//! control channel's and are not compared.
//!
//! `cargo bench -p switch --bench scan` (`SLUICE_SCAN_FRAMES`, default
//! 65,536 per scan).

use std::time::Instant;

use openflow::FlowModCommand;
use switch::{CacheOptions, Datapath, Ofproto, Output, Shared, ToController};
use testkit::ovs::OvsSandbox;

struct Nothing;

impl Output for Nothing {
    fn send(&mut self, _: u32, _: &[u8]) {}
    fn to_controller(&mut self, _: &[u8], _: u32, _: &ToController) {}
}

/// A scan: its name, the flows it goes past, its frames.
type Scan<'a> = (&'a str, &'a [&'a str], &'a [Vec<u8>]);

/// What one switch did with a scan.
struct Outcome {
    megaflows: usize,
    upcalls: u64,
    seconds: f64,
}

fn sluice(flows: &[&str], frames: &[Vec<u8>]) -> Outcome {
    let mut of = Ofproto::new();
    for p in 1..=2 {
        of.set_port(openflow::Port {
            port_no: p,
            name: format!("p{p}"),
            ..openflow::Port::default()
        });
    }
    for flow in flows {
        let fm = openflow::parse_flow(flow, FlowModCommand::Add).expect("a flow");
        of.flow_mod(&fm, 0).expect("the flow goes in");
    }
    let shared = Shared::new(of);
    let mut dp = Datapath::new(CacheOptions::default());
    let start = Instant::now();
    for (i, f) in frames.iter().enumerate() {
        dp.process(f, 1, i as u64, &shared, &mut Nothing);
    }
    Outcome {
        megaflows: dp.megaflows().count(),
        upcalls: dp.stats.upcalls,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The datapath's lookups (`dpctl/show`): hits, misses (upcalls), lost.
fn ovs_lookups(ovs: &OvsSandbox) -> [u64; 3] {
    let text = ovs.run("ovs-appctl", &["dpctl/show"]);
    let field = |name: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    [field("hit:"), field("missed:"), field("lost:")]
}

fn ovs(ovs: &OvsSandbox, flows: &[&str], frames: &[Vec<u8>]) -> Outcome {
    ovs.run("ovs-ofctl", &["del-flows", "br0"]);
    ovs.run("ovs-appctl", &["dpctl/del-flows"]);
    ovs.add_flows(flows);
    let before = ovs_lookups(ovs);
    let start = Instant::now();
    // A dummy port queues 100 frames at most: fewer per call, and every
    // frame checked to have been looked up below.
    for chunk in frames.chunks(40) {
        let mut args = vec!["netdev-dummy/receive".to_string(), "p1".into()];
        args.extend(
            chunk
                .iter()
                .map(|f| f.iter().map(|b| format!("{b:02x}")).collect()),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ovs.run("ovs-appctl", &args);
    }
    let seconds = start.elapsed().as_secs_f64();
    let after = ovs_lookups(ovs);
    let seen = after[0] + after[1] - before[0] - before[1];
    assert_eq!(
        seen,
        frames.len() as u64,
        "OVS looked up {seen} of {} frames (lost {})",
        frames.len(),
        after[2] - before[2]
    );
    Outcome {
        megaflows: ovs.datapath_flows().len(),
        upcalls: after[1] - before[1],
        seconds,
    }
}

fn main() {
    let n: u32 = std::env::var("SLUICE_SCAN_FRAMES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(65_536);
    let Some(sandbox) = OvsSandbox::start("the scan benchmark", 2) else {
        return;
    };
    // Megaflows stay for the whole run (OVS's default expires them after
    // 10 s idle, shorter than a scan through its control socket).
    sandbox.run(
        "ovs-vsctl",
        &["set", "Open_vSwitch", ".", "other_config:max-idle=600000"],
    );
    let ports: Vec<Vec<u8>> = (0..n.min(65_536))
        .map(|p| p as u16)
        .filter(|&p| p != 9999)
        .map(|p| packet::Builder::udp("10.0.0.1", "10.0.0.2", 1234, p).build())
        .collect();
    let addrs: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let dst = std::net::Ipv4Addr::from(0x0a01_0000 + i).to_string();
            packet::Builder::tcp("10.9.0.1", &dst, 4000, 443).build()
        })
        .collect();
    let scans: [Scan; 2] = [
        ("port scan", &["udp,tp_dst=9999,actions=drop"], &ports),
        ("address scan", &["ip,nw_dst=10.0.0.1,actions=drop"], &addrs),
    ];
    println!(
        "{:<14} {:>8} {:>10} {:>10} {:>12} {:>10} {:>10}",
        "", "frames", "megaflows", "upcalls", "frames/s", "OVS mf", "OVS upc"
    );
    for (name, flows, frames) in scans {
        let ours = sluice(flows, frames);
        let theirs = ovs(&sandbox, flows, frames);
        println!(
            "{name:<14} {:>8} {:>10} {:>10} {:>12.0} {:>10} {:>10}",
            frames.len(),
            ours.megaflows,
            ours.upcalls,
            frames.len() as f64 / ours.seconds,
            theirs.megaflows,
            theirs.upcalls
        );
        println!(
            "  {name}: sluice/OVS upcalls {:.2}x, megaflows {:.2}x (goal <= 1); sluice {:.3} s in process, OVS {:.1} s through its control socket",
            ours.upcalls as f64 / theirs.upcalls.max(1) as f64,
            ours.megaflows as f64 / theirs.megaflows.max(1) as f64,
            ours.seconds,
            theirs.seconds
        );
    }
}
