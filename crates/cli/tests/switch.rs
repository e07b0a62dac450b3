//! `sluice switch` over capture ports: flows from an ovs-ofctl file, a
//! real capture replayed, the frames out of each port written as valid
//! captures that the flows' counters account for, and `--json`.

use std::path::PathBuf;
use std::process::Command;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn capture() -> PathBuf {
    testkit::capture("of10_s4810.pcap")
}

/// `sluice ARGS`, which must fail: what it said.
fn refused(args: &[&str]) -> String {
    let out = sluice().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded: {err}");
    err
}

/// The frames of a capture a port wrote.
fn frames_of(path: &std::path::Path) -> Vec<Vec<u8>> {
    let mut r = pcap_file::pcap::PcapReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut v = Vec::new();
    while let Some(p) = r.next_packet() {
        v.push(p.unwrap().data.into_owned());
    }
    v
}

#[test]
fn a_capture_through_openflow_flows_lands_in_the_ports_captures() {
    let dir = std::env::temp_dir().join(format!("sluice-switch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flows = dir.join("flows.txt");
    std::fs::write(
        &flows,
        "# OpenFlow's port to port 2, other IP (TTL decremented) to 3\n\
         priority=100,tcp,tp_dst=6633,actions=output:2\n\
         priority=50,ip,actions=dec_ttl,output:3\n",
    )
    .unwrap();
    let (a, b) = (dir.join("a.pcap"), dir.join("b.pcap"));
    let out = sluice()
        .args(["switch", "--json", "--flows"])
        .arg(&flows)
        .arg("--port")
        .arg(format!("in=pcap:{}", capture().display()))
        .arg("--port")
        .arg(format!("pcap::{}", a.display()))
        .arg("--port")
        .arg(format!("pcap::{}", b.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = j["packets"].as_u64().unwrap();
    assert!(n > 100);
    assert_eq!(
        j["emc_hits"].as_u64().unwrap()
            + j["megaflow_hits"].as_u64().unwrap()
            + j["upcalls"].as_u64().unwrap(),
        n
    );
    assert!(
        j["upcalls"].as_u64().unwrap() < n / 4,
        "the caches serve most packets"
    );
    // Every frame went somewhere: the port counters, the flows' counters
    // and the captures agree.
    let tx = |i: usize| j["ports"][i]["tx_packets"].as_u64().unwrap();
    assert_eq!(tx(1) + tx(2), n);
    let flows: Vec<&str> = j["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        flows[0].contains(&format!("n_packets={}", tx(1))),
        "{flows:?}"
    );
    assert!(
        flows[1].contains(&format!("n_packets={}", tx(2))),
        "{flows:?}"
    );
    let (fa, fb) = (frames_of(&a), frames_of(&b));
    assert_eq!((fa.len() as u64, fb.len() as u64), (tx(1), tx(2)));
    // Port 3's frames had their TTL decremented (IPv4, no VLAN: byte 22).
    assert!(fb.iter().all(|f| f[22] == 63), "TTL 64 became 63");
    assert!(fa.iter().all(|f| f[22] == 64));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_flows_file_names_the_line() {
    let dir = std::env::temp_dir().join(format!("sluice-switch-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flows = dir.join("flows.txt");
    std::fs::write(
        &flows,
        "priority=1,actions=output:2\nnw_dst=10.0.0.300,actions=drop\n",
    )
    .unwrap();
    let flows_arg = flows.display().to_string();
    let switch = ["switch", "--port", "pcap::/dev/null", "--flows", &flows_arg];
    let err = refused(&switch);
    assert!(
        err.contains("line 2") && err.contains("10.0.0.300"),
        "{err}"
    );
    // A reserved port the switch does not output to is named, not numbered.
    std::fs::write(&flows, "actions=output:TABLE\n").unwrap();
    let err = refused(&switch);
    assert!(
        err.contains("output to port TABLE is not supported here"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--vlan` and the NORMAL action over capture ports: p1 a trunk, p2 and
/// p3 access ports of VLAN 20. A broadcast tagged 20 from p1 floods to p2
/// and p3 untagged; the answer from p2 to the first frame's source goes
/// back to p1 alone, tagged 20 (its source learned there).
#[test]
fn normal_with_access_and_trunk_ports() {
    let dir = testkit::Scratch::new("switch-normal");
    let write = |name: &str, frames: &[(u64, Vec<u8>)]| {
        let path = dir.join(name);
        let mut sink = capture::PcapSink::create(&path).unwrap();
        for (ts, f) in frames {
            sink.write(f, *ts).unwrap();
        }
        sink.finish().unwrap();
        path
    };
    let ether = |src: u8, dst: [u8; 6], vlan: Option<u16>| {
        let mut f = dst.to_vec();
        f.extend_from_slice(&[2, 0, 0, 0, 0, src]);
        if let Some(v) = vlan {
            f.extend_from_slice(&[0x81, 0, (v >> 8) as u8, v as u8]);
        }
        f.extend_from_slice(&[0x88, 0xb5]);
        f.extend_from_slice(&[0u8; 46]);
        f
    };
    let first = ether(1, [0xff; 6], Some(20));
    let answer = ether(2, [2, 0, 0, 0, 0, 1], None);
    let p1in = write("p1in.pcap", &[(1_000_000_000, first.clone())]);
    let p2in = write("p2in.pcap", &[(2_000_000_000, answer.clone())]);
    let flows = dir.join("flows.txt");
    std::fs::write(&flows, "actions=NORMAL\n").unwrap();
    let out_of = |p: &str| dir.join(format!("{p}out.pcap"));
    let out = sluice()
        .args(["switch", "--flows"])
        .arg(&flows)
        .arg("--port")
        .arg(format!(
            "p1=pcap:{}:{}",
            p1in.display(),
            out_of("p1").display()
        ))
        .arg("--port")
        .arg(format!(
            "p2=pcap:{}:{}",
            p2in.display(),
            out_of("p2").display()
        ))
        .arg("--port")
        .arg(format!("p3=pcap::{}", out_of("p3").display()))
        .args(["--vlan", "p2 tag=20", "--vlan", "p3 tag=20"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frames = |p: &str| frames_of(&out_of(p));
    let untagged_first = ether(1, [0xff; 6], None);
    assert_eq!(frames("p2"), vec![untagged_first.clone()]);
    assert_eq!(frames("p3"), vec![untagged_first]);
    assert_eq!(frames("p1"), vec![ether(2, [2, 0, 0, 0, 0, 1], Some(20))]);
    // A port the switch does not have, or a setting it does not know.
    for bad in ["p9 tag=20", "p2 tag=5000", "p2 native=3"] {
        let flows = flows.display().to_string();
        let port = format!("p2=pcap:{}", p2in.display());
        let err = refused(&["switch", "--flows", &flows, "--port", &port, "--vlan", bad]);
        assert!(err.contains("--vlan"), "{bad}: {err}");
    }
}
