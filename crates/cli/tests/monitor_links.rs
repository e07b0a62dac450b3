//! Every front end reads IP over ARCNET (as tcpdump does: 22 IP frames of
//! 26) and warns, with the same text, of the frames left without an
//! Ethernet form (`sluice run` warned; monitor and `xpf run` said
//! nothing and counted 0 packets).

mod common;

use std::process::Command;

use common::SLUICE;

fn pcap(name: &str) -> String {
    testkit::capture(name).display().to_string()
}

/// stdout and stderr of a `sluice` that must succeed.
fn run(args: &[&str]) -> (String, String) {
    let out = Command::new(SLUICE).args(args).output().unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "sluice {args:?}: {e}");
    (o, e)
}

const ARCNET_WARNING: &str =
    "sluice: warning: skipped 4 frames without an Ethernet form: 4 ARCNET_LINUX (129)";

#[test]
fn monitor_and_xpf_read_ip_over_arcnet_and_warn_of_the_rest() {
    let arcnet = pcap("arcnet-rfc1051-arp-icmp-http.pcap");
    let (out, err) = run(&["monitor", "flows", "--pcap", &arcnet]);
    assert!(
        out.starts_with("22 packets, 22 with IP in 7 flows"),
        "{out}"
    );
    assert!(err.contains(ARCNET_WARNING), "{err}");
    for app in ["rtt", "sample"] {
        let (_, err) = run(&["monitor", app, "--pcap", &arcnet]);
        assert!(err.contains(ARCNET_WARNING), "monitor {app}: {err}");
    }
    let dir = std::env::temp_dir().join(format!("sluice-links-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("accept.s");
    std::fs::write(&prog, "ret #1\n").unwrap();
    let (out, err) = run(&["xpf", "run", prog.to_str().unwrap(), "--pcap", &arcnet]);
    assert!(out.contains(": 22 packets, 22 accepted"), "{out}");
    assert!(err.contains(ARCNET_WARNING), "{err}");
    std::fs::remove_dir_all(&dir).ok();
    // `sluice run` words it the same, with its own hint.
    let hdlc = pcap("ISIS_p2p_adjacency.pcap");
    let (_, err) = run(&["monitor", "flows", "--pcap", &hdlc]);
    assert!(
        err.contains(
            "sluice: warning: skipped 26 frames without an Ethernet form: 26 C_HDLC (104)\n"
        ),
        "{err}"
    );
}
