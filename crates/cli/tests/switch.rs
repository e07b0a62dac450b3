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
    let frames = |p: &PathBuf| {
        let mut r = pcap_file::pcap::PcapReader::new(std::fs::File::open(p).unwrap()).unwrap();
        let mut v = Vec::new();
        while let Some(p) = r.next_packet() {
            v.push(p.unwrap().data.into_owned());
        }
        v
    };
    let (fa, fb) = (frames(&a), frames(&b));
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
    let out = sluice()
        .args(["switch", "--port", "pcap::/dev/null", "--flows"])
        .arg(&flows)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2") && err.contains("10.0.0.300"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
