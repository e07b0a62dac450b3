//! Open vSwitch's own client, `ovs-ofctl -O OpenFlow13`, drives the switch
//! over TCP on loopback: show, add-flow, dump-flows, mod-flows, del-flows,
//! dump-tables, dump-ports, dump-ports-desc, packet-out and a refused
//! flow; every answer must parse in the tool and say what the switch did
//! to packets sent through its datapath meanwhile.

#[path = "../../openflow/tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openflow::Port;
use switch::channel::{Channel, Endpoint};
use switch::core::{Core, Transmit};
use switch::dpif::{CacheOptions, Datapath};

/// A frame out of a port.
type Sent = (u32, Vec<u8>);

/// Frames sent out of ports, kept.
#[derive(Clone, Default)]
struct Wire(Arc<Mutex<Vec<Sent>>>);

impl Transmit for Wire {
    fn transmit(&mut self, port: u32, frame: &[u8]) -> bool {
        self.0.lock().unwrap().push((port, frame.to_vec()));
        port == 1 || port == 2
    }
}

impl Wire {
    fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

struct Running {
    core: Arc<Core>,
    target: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start(wire: Wire) -> Running {
    let core = Arc::new(Core::new(0x5a));
    for (n, name) in [(1u32, "p1"), (2, "p2")] {
        core.add_port(Port {
            port_no: n,
            hw_addr: [2, 0, 0, 0, 0, n as u8],
            name: name.into(),
            curr_speed: 10_000_000,
            max_speed: 10_000_000,
            ..Port::default()
        });
    }
    let mut ch = Channel::open(&["ptcp:0".parse::<Endpoint>().unwrap()]).unwrap();
    let target = format!("tcp:{}", ch.local_addrs()[0]);
    let stop = Arc::new(AtomicBool::new(false));
    let (c, s) = (core.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let mut tx = wire;
        while !s.load(Ordering::Relaxed) {
            if !ch.poll(&c, &mut tx) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    Running {
        core,
        target,
        stop,
        thread: Some(thread),
    }
}

/// `ovs-ofctl -O OpenFlow13 CMD TARGET ARGS...`: (success, stdout, stderr).
fn ofctl(r: &Running, cmd: &str, args: &[&str]) -> (bool, String, String) {
    let mut c = Command::new("ovs-ofctl");
    c.args(["-O", "OpenFlow13", cmd, &r.target]).args(args);
    let out = common::run_with_timeout(&mut c, Duration::from_secs(20));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(r: &Running, cmd: &str, args: &[&str]) -> String {
    let (good, out, err) = ofctl(r, cmd, args);
    assert!(good, "ovs-ofctl {cmd} {args:?} failed: {err}");
    out
}

/// The flow lines of dump-flows, without the durations.
fn flows(r: &Running) -> Vec<String> {
    ok(r, "dump-flows", &[])
        .lines()
        .filter(|l| l.contains("actions="))
        .map(|l| {
            l.split(", ")
                .filter(|f| !f.trim_start().starts_with("duration="))
                .collect::<Vec<_>>()
                .join(", ")
                .trim()
                .to_string()
        })
        .collect()
}

fn tcp(dport: u16) -> Vec<u8> {
    packet::Builder::tcp("192.168.1.1", "10.1.2.3", 4000, dport).build()
}

#[test]
fn ovs_ofctl_drives_the_switch() {
    if !common::have_ovs_ofctl("the ovs-ofctl switch test") {
        return;
    }
    let wire = Wire::default();
    let r = start(wire.clone());
    let show = ok(&r, "show", &[]);
    assert!(show.contains("dpid:000000000000005a"), "{show}");
    assert!(show.contains("1(p1): addr:02:00:00:00:00:01"), "{show}");
    assert!(show.contains("n_tables:64"), "{show}");

    ok(
        &r,
        "add-flow",
        &["priority=100,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=output:2"],
    );
    ok(&r, "add-flow", &["priority=10,cookie=0x7,actions=output:1"]);
    let f = flows(&r);
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(f.contains(&"cookie=0x0, table=0, n_packets=0, n_bytes=0, priority=100,tcp,nw_dst=10.0.0.0/8,tp_dst=80 actions=output:2".to_string()), "{f:?}");
    assert!(
        f.contains(
            &"cookie=0x7, table=0, n_packets=0, n_bytes=0, priority=10 actions=output:1"
                .to_string()
        ),
        "{f:?}"
    );

    // Packets through a datapath of the switch; its counts pushed.
    let mut dp = Datapath::new(CacheOptions::default());
    let mut tx = wire.clone();
    for p in [80, 80, 22] {
        r.core
            .receive(&mut dp, &r.core.port_table(), 1, &tcp(p), &mut tx);
    }
    // Port 1 is where they came in: the catch-all's output:1 drops.
    assert_eq!(
        wire.take().iter().map(|w| w.0).collect::<Vec<_>>(),
        vec![2, 2]
    );
    dp.push_stats(&r.core.shared);
    let n = tcp(80).len();
    let f = flows(&r);
    assert!(
        f.iter()
            .any(|l| l.contains(&format!("n_packets=2, n_bytes={}, priority=100", 2 * n))),
        "{f:?}"
    );
    assert!(
        f.iter()
            .any(|l| l.contains(&format!("n_packets=1, n_bytes={n}, priority=10"))),
        "{f:?}"
    );

    // mod-flows changes the web flow's actions: the cached megaflow goes.
    ok(
        &r,
        "mod-flows",
        &["tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=output:2,output:controller"],
    );
    r.core
        .receive(&mut dp, &r.core.port_table(), 1, &tcp(80), &mut tx);
    assert_eq!(wire.take().len(), 1);
    assert_eq!(dp.stats.megaflows_revalidated_away, 1);
    let f = flows(&r);
    assert!(
        f.iter()
            .any(|l| l.ends_with("actions=output:2,CONTROLLER:65535")),
        "{f:?}"
    );

    let tables = ok(&r, "dump-tables", &[]);
    assert!(
        tables.contains("table 0:") && tables.contains("active=2, lookup=3, matched=3"),
        "{tables}"
    );

    let ports = ok(&r, "dump-ports", &[]);
    assert!(ports.contains("port  1: rx pkts=4"), "{ports}");
    assert!(ports.contains("port  2: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0\n           tx pkts=3"), "{ports}");
    let desc = ok(&r, "dump-ports-desc", &[]);
    assert!(desc.contains("2(p2): addr:02:00:00:00:00:02"), "{desc}");

    // packet-out from the controller to port 2.
    let hex: String = tcp(443).iter().map(|b| format!("{b:02x}")).collect();
    ok(
        &r,
        "packet-out",
        &[&format!("in_port=controller packet={hex} actions=output:2")],
    );
    assert_eq!(wire.take(), vec![(2, tcp(443))]);

    // A refused flow: the tool prints the switch's error.
    let (good, _, err) = ofctl(&r, "add-flow", &["actions=group:5"]);
    assert!(!good && err.contains("OFPBAC_BAD_OUT_GROUP"), "{err}");

    ok(&r, "del-flows", &["tcp"]);
    let f = flows(&r);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("priority=10"), "{f:?}");
    ok(&r, "del-flows", &[]);
    assert!(flows(&r).is_empty());
}

/// Open vSwitch masks transport ports beyond OpenFlow 1.3's table; the
/// tool sends them as masked OXMs, which the switch must take and match.
#[test]
fn ovs_ofctl_masked_ports_reach_the_switch() {
    if !common::have_ovs_ofctl("the ovs-ofctl masked-port test") {
        return;
    }
    let wire = Wire::default();
    let r = start(wire.clone());
    ok(
        &r,
        "add-flow",
        &["priority=100,tcp,tp_dst=0x1000/0xf000,actions=output:2"],
    );
    let f = flows(&r);
    assert!(
        f.iter()
            .any(|l| l.ends_with("priority=100,tcp,tp_dst=0x1000/0xf000 actions=output:2")),
        "{f:?}"
    );
    let mut dp = Datapath::new(CacheOptions::default());
    let mut tx = wire.clone();
    for p in [0x1234, 0x1fff, 0x2000, 80] {
        r.core
            .receive(&mut dp, &r.core.port_table(), 1, &tcp(p), &mut tx);
    }
    let out: Vec<_> = wire.take().iter().map(|w| w.1.clone()).collect();
    assert_eq!(out, vec![tcp(0x1234), tcp(0x1fff)]);
}
