//! `sluice monitor flows` over every capture of tcpdump's test suite,
//! exporting IPFIX over UDP to nfdump's own collector (`nfcapd` on a
//! loopback port of the test's): `nfdump` reads back exactly the flows
//! sluice printed (per-flow totals against tshark are checked in the
//! monitor crate's tests). An unreachable collector is reported and
//! accounting goes on.

mod common;

use std::net::IpAddr;
use std::process::Command;
use std::time::Duration;

use common::{SLUICE, captures};
use ipfix::nfdump::{Nfcapd, Seen, free_udp_port, read_files};
use serde_json::Value;

/// A flow line's source address (its IPFIX element: v4 or v6).
fn src(v: &Value) -> &Value {
    v.get("sourceIPv4Address")
        .unwrap_or_else(|| &v["sourceIPv6Address"])
}

/// A flow line of `sluice monitor flows --json` as nfdump keeps it.
fn seen(v: &Value) -> Seen {
    let n = |k: &str| v[k].as_u64().unwrap();
    let protocol = n("protocolIdentifier") as u8;
    let dst = v
        .get("destinationIPv4Address")
        .unwrap_or_else(|| &v["destinationIPv6Address"]);
    let (src, dst): (IpAddr, IpAddr) = (
        src(v).as_str().unwrap().parse().unwrap(),
        dst.as_str().unwrap().parse().unwrap(),
    );
    let icmp = (protocol == 1 && src.is_ipv4()) || (protocol == 58 && src.is_ipv6());
    let dport = if icmp {
        v.get("icmpTypeCodeIPv4")
            .unwrap_or_else(|| &v["icmpTypeCodeIPv6"])
            .as_u64()
            .unwrap() as u16
    } else {
        n("destinationTransportPort") as u16
    };
    Seen {
        src,
        dst,
        protocol,
        l4: if icmp {
            (dport >> 8, dport & 0xff)
        } else if protocol == 132 {
            // nfdump 1.7 keeps SCTP's source port only.
            (n("sourceTransportPort") as u16, 0)
        } else {
            (n("sourceTransportPort") as u16, dport)
        },
        packets: n("packetDeltaCount"),
        bytes: n("octetDeltaCount"),
        first_ms: n("flowStartMilliseconds"),
        last_ms: n("flowEndMilliseconds"),
        tcp_flags: n("tcpControlBits") as u8,
        end_reason: n("flowEndReason") as u8,
    }
}

#[test]
fn nfdump_collects_the_flows_sluice_accounts_in_every_capture() {
    let dir = std::env::temp_dir().join(format!("sluice-nfcapd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_udp_port();
    let nfcapd = Nfcapd::start(port, &dir);
    let collector = format!("127.0.0.1:{port}");
    let mut want = Vec::new();
    let (mut runs, mut packets) = (0, 0);
    for path in captures() {
        // One observation domain per run: nfcapd keeps sequence numbers
        // per exporter address and domain.
        let out = Command::new(SLUICE)
            .args([
                "monitor", "flows", "--json", "--ipfix", &collector, "--pcap",
            ])
            .arg(&path)
            .args(["--domain", &(runs + 1).to_string()])
            .output()
            .unwrap();
        if !out.status.success() {
            // A capture sluice cannot read names itself; nothing exported.
            assert!(!out.stderr.is_empty());
            continue;
        }
        runs += 1;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if let Some(s) = v.get("summary") {
                packets += s["accounted"].as_u64().unwrap();
                assert_eq!(s["exported"], s["flows"], "{}", path.display());
                assert_eq!(s["export_errors"], 0, "{}", path.display());
            } else {
                want.push(seen(&v));
            }
        }
        // Small bursts: a loopback socket buffer never overflows.
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(300));
    let log = nfcapd.stop();
    assert!(log.contains("Sequence Errors: 0"), "nfcapd's log:\n{log}");
    let mut got = read_files(&dir).unwrap();
    got.sort();
    want.sort();
    assert_eq!(got.len(), want.len(), "flows nfdump read back");
    let differ: Vec<String> = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| g != w)
        .map(|(g, w)| format!("nfdump {g:?}\n sluice {w:?}"))
        .collect();
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
    println!(
        "{runs} captures, {packets} IP packets: {} flows exported to nfcapd and read back alike by nfdump",
        want.len()
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_xpf_engine_prints_the_flows_the_table_prints() {
    let json = |engine: &str, input: &[&str]| {
        let out = Command::new(SLUICE)
            .args([
                "monitor", "flows", "--json", "--engine", engine, "--idle", "0.5",
            ])
            .args(input)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{engine} {input:?}: {err}");
        // Times to the microsecond (the filter's clock moves a nanosecond
        // per packet); the summary names no engine.
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                for k in ["flowStartNanoseconds", "flowEndNanoseconds"] {
                    if let Some(t) = v[k].as_u64() {
                        v[k] = (t / 1000).into();
                    }
                }
                v.to_string()
            })
            .collect::<Vec<_>>()
    };
    let capture = common::captures()
        .into_iter()
        .find(|p| p.ends_with("zmtp1.pcap"))
        .unwrap();
    for input in [
        vec!["--pcap", capture.to_str().unwrap()],
        vec!["--gen", "tcp,v6,flows=50,count=2000,rate=50"],
    ] {
        let want = json("table", &input);
        assert!(want.len() > 2, "{want:?}");
        assert_eq!(json("xpf", &input), want, "{input:?}");
    }
    let refused = |args: &[&str], why: &str| {
        let out = Command::new(SLUICE)
            .args(["monitor", "flows", "--engine", "xpf"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why),
            "{args:?}: {err}"
        );
    };
    refused(&["--dev", "lo"], "does not load into the kernel");
    refused(&["--gen", "udp", "--capacity", "5000"], "holds 1 to 2048");
}

#[test]
fn an_unreachable_collector_is_reported_and_accounting_goes_on() {
    let port = free_udp_port(); // nobody listens there
    let out = Command::new(SLUICE)
        .args([
            "monitor",
            "flows",
            "--json",
            "--gen",
            "udp,flows=300,count=3000",
        ])
        .args(["--ipfix", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    let last: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(last["summary"]["flows"], 300);
    assert!(last["summary"]["export_errors"].as_u64().unwrap() >= 1);
}

#[test]
fn live_flows_on_a_veth_count_what_gen_sent_and_leave_nothing_attached() {
    if !common::kernel_available("sluice monitor flows --dev (veth pair)") {
        return;
    }
    let p = common::Pair::new("mon");
    // Loopback up, for the metrics.
    common::sh(&["ip", "-n", &p.b, "link", "set", "lo", "up"]);
    let child = common::spawn_sluice(
        &p.b,
        &[
            "monitor",
            "flows",
            "--dev",
            common::VB,
            "--json",
            "--duration",
            "4",
            "--idle",
            "1",
            "--metrics",
            "9464",
        ],
    );
    // Attached once the interface shows an XDP program.
    p.wait_for("xdp");
    // The program's maps, by id, to see them gone at the end.
    let maps = attached_maps(&p.b);
    assert!(maps.len() >= 3, "the flows program's maps: {maps:?}");
    p.send("udp,flows=4,size=100,count=200", "packet");
    // Idle after a second, swept within the next: the metrics show them
    // while the run goes on (fetched inside the namespace).
    std::thread::sleep(Duration::from_millis(2500));
    let metrics = common::sh(&[
        "ip",
        "netns",
        "exec",
        &p.b,
        "bash",
        "-c",
        "exec 3<>/dev/tcp/127.0.0.1/9464 && printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3",
    ]);
    assert!(metrics.contains("sluice_packets_total 200\n"), "{metrics}");
    assert!(metrics.contains("sluice_flows_active 0\n"), "{metrics}");
    assert!(
        metrics.contains("sluice_drops_total{app=\"flows\",reason=\"table_full\"} 0\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sluice_flows_ended_total{reason=\"idle_timeout\"} 4\n"),
        "{metrics}"
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let mut keys = std::collections::BTreeSet::new();
    let (mut packets, mut bytes) = (0, 0);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v.get("summary").is_some() {
            assert_eq!(v["summary"]["evicted"], 0);
            continue;
        }
        assert_eq!(v["protocolIdentifier"], 17, "{v}");
        keys.insert((src(&v).to_string(), v["sourceTransportPort"].to_string()));
        packets += v["packetDeltaCount"].as_u64().unwrap();
        bytes += v["octetDeltaCount"].as_u64().unwrap();
    }
    assert_eq!((keys.len(), packets), (4, 200), "{keys:?}");
    // 100-byte frames: 86 bytes of IP each.
    assert_eq!(bytes, 200 * 86);
    assert!(!common::sh(&["ip", "-n", &p.b, "link", "show", common::VB]).contains("xdp"));
    // The kernel frees a map once its last reference goes (after an RCU
    // grace period): gone within two seconds.
    for id in maps {
        let t0 = std::time::Instant::now();
        while Command::new("bpftool")
            .args(["map", "show", "id", &id.to_string()])
            .output()
            .unwrap()
            .status
            .success()
        {
            assert!(
                t0.elapsed() < Duration::from_secs(2),
                "map {id} is still there"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The ids of the maps of the XDP program attached to `VB` in `ns`.
fn attached_maps(ns: &str) -> Vec<u64> {
    let link = common::sh(&["ip", "-j", "-n", ns, "link", "show", common::VB]);
    let link: Value = serde_json::from_str(&link).unwrap();
    let prog = link[0]["xdp"]["prog"]["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("no XDP program: {link}"));
    let out = Command::new("bpftool")
        .args(["-j", "prog", "show", "id", &prog.to_string()])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["map_ids"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

/// Runs `sluice monitor flows --dev` with `args` in a pair's namespace b
/// while `sluice gen` sends 200 frames of 4 UDP flows from a; the JSON
/// lines it printed.
fn live_user_space_flows(tag: &str, args: &[&str], attached: &str) -> Vec<Value> {
    let p = common::Pair::new(tag);
    let mut all = vec!["monitor", "flows", "--dev", common::VB, "--json"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--duration", "3"]);
    let child = common::spawn_sluice(&p.b, &all);
    // Ready once the interface shows the program (AF_XDP) or after a
    // moment (AF_PACKET: nothing to see).
    p.wait_for(attached);
    p.send("udp,flows=4,size=100,count=200", "packet");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("frames"), "the source's note: {err}");
    assert!(!common::sh(&["ip", "-n", &p.b, "link", "show", common::VB]).contains("xdp"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The generated flows' packets and bytes among `lines` (the kernel may
/// send the namespace's own IPv6 chatter too).
fn udp_flows(lines: &[Value]) -> (usize, u64, u64) {
    let mut keys = std::collections::BTreeSet::new();
    let (mut packets, mut bytes) = (0, 0);
    for v in lines.iter().filter(|v| v["protocolIdentifier"] == 17) {
        keys.insert((src(v).to_string(), v["sourceTransportPort"].to_string()));
        packets += v["packetDeltaCount"].as_u64().unwrap();
        bytes += v["octetDeltaCount"].as_u64().unwrap();
    }
    (keys.len(), packets, bytes)
}

#[test]
fn live_flows_on_the_af_xdp_datapath_with_the_xpf_engine_count_what_gen_sent() {
    if !common::kernel_available("sluice monitor flows --dev --datapath afxdp (veth pair)") {
        return;
    }
    let lines = live_user_space_flows("mxk", &["--datapath", "afxdp", "--engine", "xpf"], "xdp");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["evicted"], 0, "{summary}");
    // 100-byte frames: 86 bytes of IP each.
    assert_eq!(udp_flows(&lines), (4, 200, 200 * 86), "{lines:?}");
}

#[test]
fn live_flows_through_af_packet_count_what_gen_sent() {
    if !common::kernel_available("sluice monitor flows --dev --datapath afpacket (veth pair)") {
        return;
    }
    let lines = live_user_space_flows("mpk", &["--datapath", "afpacket"], "");
    assert_eq!(udp_flows(&lines), (4, 200, 200 * 86), "{lines:?}");
}
