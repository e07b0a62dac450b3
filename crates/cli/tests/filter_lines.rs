//! `sluice filter -r F EXPR` without `-w` prints a line per matching
//! packet as `tcpdump -n -r F EXPR` does (TZ=UTC: sluice prints UTC), with
//! tcpdump's `-e`, `-t`, `-tt`, `-ttt`, `-v`, `-x`, `-X`, `-A`: the same
//! lines, byte for byte, from the real tcpdump. The expression keeps
//! packets whose every layer sluice decodes (SYNs carry no payload for an
//! application decoder; ICMP, ICMPv6, ARP); the crate `dissect` checks
//! far more packets (docs/dissect.md).

mod common;

use std::process::Command;

use common::SLUICE;

const EXPR: &str = "tcp[tcpflags] & tcp-syn != 0 or icmp or icmp6 or arp";

fn stdout(mut c: Command) -> (bool, String) {
    let out = c.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn lines_are_tcpdumps() {
    let dir = format!("{}/", testkit::captures_dir().display());
    let mut compared = 0;
    for capture in [
        "accecn_handshake.pcap",
        "of10_p3295.pcap",
        "print-flags.pcap",
        "icmpv6.pcap",
        "gso-ipv6.pcap",
    ] {
        let path = format!("{dir}{capture}");
        for flag in ["", "-e", "-t", "-tt", "-ttt", "-v", "-x", "-X", "-A"] {
            // Neighbour discovery's options under -v: not decoded yet.
            if capture == "icmpv6.pcap" && flag == "-v" {
                continue;
            }
            let flags: Vec<&str> = Some(flag).into_iter().filter(|f| !f.is_empty()).collect();
            let mut theirs = Command::new("tcpdump");
            theirs.env("TZ", "UTC").args(["-n", "-r", &path]);
            theirs.args(&flags).arg(EXPR);
            let mut ours = Command::new(SLUICE);
            ours.args(["filter", "-n", "-r", &path])
                .args(&flags)
                .arg(EXPR);
            let ((_, want), (ok, got)) = (stdout(theirs), stdout(ours));
            assert!(ok, "sluice filter {flag} on {capture} failed");
            assert_eq!(got, want, "{capture} {flag}");
            compared += want.lines().count();
        }
    }
    assert!(compared >= 150, "only {compared} lines compared");
    // -c stops after N matches, as tcpdump's.
    let path = format!("{dir}accecn_handshake.pcap");
    let (_, two) = stdout({
        let mut c = Command::new(SLUICE);
        c.args(["filter", "-r", &path, "-c", "2", "tcp"]);
        c
    });
    assert_eq!(two.lines().count(), 2, "{two}");
}
