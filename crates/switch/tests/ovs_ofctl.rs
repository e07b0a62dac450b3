//! Open vSwitch's own client, `ovs-ofctl -O OpenFlow13`, drives the switch
//! over TCP on loopback: show, add-flow, dump-flows, mod-flows, del-flows,
//! dump-tables, dump-ports, dump-ports-desc, packet-out and a refused
//! flow; every answer must parse in the tool and say what the switch did
//! to packets sent through its datapath meanwhile. The printed port
//! descriptions, durations, group reference counts and the LOCAL port must
//! read as `ovs-ofctl` prints them for Open vSwitch.

#[path = "../../openflow/tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openflow::Port;
use switch::{CacheOptions, Channel, Core, Datapath, Endpoint, Transmit};

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
    let ports = [(1u32, "p1"), (2, "p2")].map(|(n, name)| Port {
        port_no: n,
        hw_addr: [2, 0, 0, 0, 0, n as u8],
        name: name.into(),
        curr_speed: 10_000_000,
        max_speed: 10_000_000,
        ..Port::default()
    });
    start_with(wire, &ports)
}

/// A switch with `ports` (and LOCAL) served on a loopback port.
fn start_with(wire: Wire, ports: &[Port]) -> Running {
    let core = Arc::new(Core::new(0x5a));
    for p in ports {
        core.add_port(p.clone());
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
    let out = testkit::tool::run_with_timeout(&mut c, Duration::from_secs(20));
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

/// Nicira extensions through the real tool: flows with registers,
/// `load`, `move`, `resubmit` and `note` added by `ovs-ofctl add-flow`,
/// printed back by `dump-flows` as OVS prints them, and run on packets.
#[test]
fn ovs_ofctl_nicira_registers_and_resubmit() {
    if !common::have_ovs_ofctl("the ovs-ofctl Nicira test") {
        return;
    }
    let wire = Wire::default();
    let r = start(wire.clone());
    let added = [
        "table=0,in_port=1,actions=load:0x2->NXM_NX_REG0[],note:01.02,resubmit(,1)",
        "table=0,in_port=2,actions=move:NXM_OF_IN_PORT[]->NXM_NX_REG1[0..15],resubmit(,1)",
        "table=1,reg0=0x2,actions=output:2",
        "table=1,reg1=0x2,actions=resubmit(1,2)",
        "table=2,in_port=1,tcp,actions=output:2",
    ];
    for flow in added {
        ok(&r, "add-flow", &[flow]);
    }
    let f = flows(&r);
    for want in [
        "in_port=1 actions=load:0x2->NXM_NX_REG0[],note:01.02.00.00.00.00,resubmit(,1)",
        "in_port=2 actions=move:NXM_OF_IN_PORT[]->NXM_NX_REG1[0..15],resubmit(,1)",
        "table=1, n_packets=0, n_bytes=0, reg0=0x2 actions=output:2",
        "table=1, n_packets=0, n_bytes=0, reg1=0x2 actions=resubmit(1,2)",
    ] {
        assert!(f.iter().any(|l| l.ends_with(want)), "{want} not in {f:?}");
    }
    let mut dp = Datapath::new(CacheOptions::default());
    let mut tx = wire.clone();
    // From port 1: reg0=2, out port 2. From port 2: reg1=2, then looked
    // up in table 2 as if from port 1: out port 2, the port it came in
    // by, which an output may name because the resubmit changed the
    // in_port (as in OVS, where an output to the flow's in_port is
    // skipped).
    r.core
        .receive(&mut dp, &r.core.port_table(), 1, &tcp(80), &mut tx);
    r.core
        .receive(&mut dp, &r.core.port_table(), 2, &tcp(81), &mut tx);
    let out: Vec<_> = wire.take().iter().map(|w| (w.0, w.1.clone())).collect();
    assert_eq!(out, vec![(2, tcp(80)), (2, tcp(81))]);
    let (good, _, err) = ofctl(&r, "add-flow", &["actions=load:0x1->NXM_OF_IN_PORT[]"]);
    assert!(!good && err.contains("OFPBAC_BAD_SET_TYPE"), "{err}");
}

/// `dump-group-features` and `queue-stats`, which OVS answers and this
/// switch refused (OFPBRC_BAD_STAT): the group types and capabilities it
/// has, and each port's default queue (a port or queue it does not have
/// is an error, as in OVS).
#[test]
fn ovs_ofctl_group_features_and_queue_stats() {
    if !common::have_ovs_ofctl("the ovs-ofctl group features test") {
        return;
    }
    let r = start(Wire::default());
    let out = ok(&r, "dump-group-features", &[]);
    println!("{out}");
    for want in [
        "OFPST_GROUP_FEATURES reply",
        "Group table:",
        "Types:  0xf",
        "Capabilities:  0x1",
        "select group:",
        "max_groups=0xffffff00",
        "actions: output set_field strip_vlan push_vlan mod_nw_ttl dec_ttl set_queue",
    ] {
        assert!(out.contains(want), "{want} not in:\n{out}");
    }
    // Each port has queue 0, as in OVS, its counters the port's; errors
    // as OVS gives them (ovs-ofctl prints them and exits 0).
    let out = ok(&r, "queue-stats", &[]);
    for want in [
        "OFPST_QUEUE reply",
        "3 queues",
        "port 1 queue 0: bytes=0, pkts=0, errors=0",
    ] {
        assert!(out.contains(want), "{want} not in:\n{out}");
    }
    let out = ok(&r, "queue-stats", &["1"]);
    assert!(out.contains("1 queues"), "{out}");
    assert!(ok(&r, "queue-stats", &["9"]).contains("OFPQOFC_BAD_PORT"));
    assert!(ok(&r, "queue-stats", &["1", "3"]).contains("OFPQOFC_BAD_QUEUE"));
}

/// The lines `ovs-ofctl` prints for the port headed `head` (`1(p1)`,
/// `LOCAL(br0)`): its address line and the indented ones below it.
fn port_block(text: &str, head: &str) -> Vec<String> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with(&format!(" {head}: ")));
    let mut block: Vec<String> = lines.next().into_iter().map(str::to_string).collect();
    block.extend(
        lines
            .take_while(|l| l.starts_with("     "))
            .map(|l| l.trim().to_string()),
    );
    block
}

/// Every `duration=` value in `text`.
fn durations(text: &str) -> Vec<String> {
    text.split("duration=")
        .skip(1)
        .map(|rest| {
            rest.split([',', ' ', '\n'])
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Open vSwitch keeps time in milliseconds: its flow, port and group
/// durations have whole milliseconds, which `ovs-ofctl` prints with three
/// decimals (or none).
#[test]
fn ovs_ofctl_durations_have_milliseconds() {
    if !common::have_ovs_ofctl("the ovs-ofctl duration test") {
        return;
    }
    let r = start(Wire::default());
    ok(&r, "add-group", &["group_id=1,type=all,bucket=output:2"]);
    ok(&r, "add-flow", &["priority=5,actions=output:2"]);
    std::thread::sleep(Duration::from_millis(30));
    let mut seen = Vec::new();
    for cmd in ["dump-flows", "dump-ports", "dump-group-stats"] {
        let out = ok(&r, cmd, &[]);
        let d = durations(&out);
        assert!(!d.is_empty(), "{cmd}: {out}");
        seen.extend(d);
    }
    for d in &seen {
        let digits = d.strip_suffix('s').expect("ends in s");
        let ok = match digits.split_once('.') {
            None => digits.parse::<u32>().is_ok(),
            Some((s, ms)) => s.parse::<u32>().is_ok() && ms.len() == 3,
        };
        assert!(ok, "duration={d} is not whole milliseconds: {seen:?}");
    }
}

/// A group's `ref_count` is the number of flow entries that use it, as
/// Open vSwitch counts it.
#[test]
fn ovs_ofctl_group_ref_count_counts_flows() {
    if !common::have_ovs_ofctl("the ovs-ofctl group ref_count test") {
        return;
    }
    let r = start(Wire::default());
    ok(&r, "add-group", &["group_id=1,type=all,bucket=output:2"]);
    ok(
        &r,
        "add-group",
        &["group_id=2,type=indirect,bucket=output:1"],
    );
    ok(&r, "add-flow", &["priority=10,tcp,actions=group:1"]);
    ok(&r, "add-flow", &["priority=9,udp,actions=group:1,group:1"]);
    ok(
        &r,
        "add-flow",
        &["table=1,priority=1,actions=write_actions(group:1)"],
    );
    let refs = |r: &Running| -> Vec<String> {
        ok(r, "dump-group-stats", &[])
            .lines()
            .filter_map(|l| {
                let id = l.trim().strip_prefix("group_id=")?.split(',').next()?;
                let n = l.split("ref_count=").nth(1)?.split(',').next()?;
                Some(format!("{id}:{n}"))
            })
            .collect()
    };
    assert_eq!(refs(&r), vec!["1:3", "2:0"]);
    ok(&r, "del-flows", &["udp"]);
    assert_eq!(refs(&r), vec!["1:2", "2:0"]);
}

/// The LOCAL port, as Open vSwitch has it for its bridge: described,
/// counted, and a flow may output to it (what it sends goes nowhere here).
#[test]
fn ovs_ofctl_shows_the_local_port() {
    if !common::have_ovs_ofctl("the ovs-ofctl LOCAL port test") {
        return;
    }
    let wire = Wire::default();
    let r = start(wire.clone());
    let show = ok(&r, "show", &[]);
    assert_eq!(
        port_block(&show, "LOCAL(br0)"),
        vec![
            " LOCAL(br0): addr:00:00:00:00:00:5a",
            "config:     0",
            "state:      LIVE",
            "speed: 0 Mbps now, 0 Mbps max",
        ],
        "{show}"
    );
    ok(&r, "add-flow", &["priority=10,tcp,actions=LOCAL"]);
    let f = flows(&r);
    assert!(
        f.iter()
            .any(|l| l.ends_with("priority=10,tcp actions=LOCAL")),
        "{f:?}"
    );
    let mut dp = Datapath::new(CacheOptions::default());
    let mut tx = wire.clone();
    for p in [80, 81] {
        r.core
            .receive(&mut dp, &r.core.port_table(), 1, &tcp(p), &mut tx);
    }
    assert!(wire.take().is_empty(), "LOCAL sends nowhere");
    let n = tcp(80).len();
    let ports = ok(&r, "dump-ports", &["LOCAL"]);
    assert!(
        ports.contains(&format!(
            "port LOCAL: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0\n           tx pkts=2, bytes={}, drop=0,",
            2 * n
        )),
        "{ports}"
    );
    // The controller may send to it, and from it.
    let hex: String = tcp(443).iter().map(|b| format!("{b:02x}")).collect();
    ok(
        &r,
        "packet-out",
        &[&format!(
            "in_port=LOCAL packet={hex} actions=output:2,LOCAL"
        )],
    );
    ok(
        &r,
        "packet-out",
        &[&format!("in_port=controller packet={hex} actions=LOCAL")],
    );
    // From LOCAL, output:LOCAL is the in port's: not sent.
    assert_eq!(wire.take(), vec![(2, tcp(443))]);
    let ports = ok(&r, "dump-ports", &["LOCAL"]);
    assert!(ports.contains("tx pkts=3"), "{ports}");
}

/// Runs `ip ARGS`, which must succeed.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(out.status.success(), "ip {args:?}: {out:?}");
}

/// A veth end in this namespace (its peer in a namespace of its own,
/// testkit's), deleted with its namespace on drop. The end stays in the
/// test's own namespace, not in one made for it, because the switch under
/// test opens its ports here.
struct Veth {
    ns: testkit::Netns,
    dev: String,
}

impl Veth {
    fn new(tag: &str) -> Veth {
        let id = std::process::id() % 100_000;
        let (dev, peer) = (format!("so{tag}{id}"), format!("sp{tag}{id}"));
        let v = Veth {
            ns: testkit::Netns::new(&format!("ofctl-{tag}")),
            dev,
        };
        ip(&[
            "link", "add", &v.dev, "type", "veth", "peer", "name", &peer, "netns", &v.ns,
        ]);
        ip(&["link", "set", &v.dev, "up"]);
        ip(&["-n", &v.ns, "link", "set", &peer, "up"]);
        v
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.dev]).status();
    }
}

/// Ports on veths read as Open vSwitch reads them (ethtool): live, 10G
/// copper, `speed: 10000 Mbps now, 0 Mbps max`; a veth whose peer is down
/// has no carrier: `LINK_DOWN`, not live.
#[test]
fn ovs_ofctl_shows_veth_link_state_and_speed() {
    if !common::have_ovs_ofctl("the ovs-ofctl veth port test")
        || !testkit::root_available("the ovs-ofctl veth port test")
    {
        return;
    }
    let (up, down) = (Veth::new("u"), Veth::new("d"));
    let peer = down.dev.replacen("so", "sp", 1);
    ip(&["-n", &down.ns, "link", "set", &peer, "down"]);
    let ports = [
        switch::interface_port(&up.dev, 1, "up"),
        switch::interface_port(&down.dev, 2, "down"),
    ];
    let r = start_with(Wire::default(), &ports);
    let desc = ok(&r, "dump-ports-desc", &[]);
    let block = port_block(&desc, "1(up)");
    let mac = std::fs::read_to_string(format!("/sys/class/net/{}/address", up.dev)).unwrap();
    assert_eq!(block[0], format!(" 1(up): addr:{}", mac.trim()), "{desc}");
    assert_eq!(
        block[1..],
        [
            "config:     0",
            "state:      LIVE",
            "current:    10GB-FD COPPER",
            "speed: 10000 Mbps now, 0 Mbps max",
        ],
        "{desc}"
    );
    let block = port_block(&desc, "2(down)");
    assert_eq!(block[2], "state:      LINK_DOWN", "{desc}");
    // The link comes up: the port is live again.
    ip(&["-n", &down.ns, "link", "set", &peer, "up"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while switch::interface_state(&down.dev).map(|c| c.1) != Some(openflow::port_bits::STATE_LIVE) {
        assert!(
            std::time::Instant::now() < deadline,
            "no carrier on {}",
            down.dev
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    r.core.set_link(2, true);
    let desc = ok(&r, "dump-ports-desc", &[]);
    assert_eq!(
        port_block(&desc, "2(down)")[2],
        "state:      LIVE",
        "{desc}"
    );
}
