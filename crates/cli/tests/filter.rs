//! `sluice filter` behaves as `tcpdump -r`: on every capture of tcpdump's
//! test suite it matches and writes the same packets, of every link type;
//! `-d`, `-dd` and `-ddd` print what tcpdump prints; bad expressions fail
//! with libpcap's message.

mod common;

use std::path::Path;
use std::process::Command;

use common::{SLUICE, captures, sluice};

const EXPRESSIONS: &[&str] = &["tcp", "udp port 53 or icmp", "ip6", "not ip", "len > 200"];

/// `(timestamp, bytes)` of every packet of a capture, as read back.
fn packets(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let mut src = capture::PcapSource::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(Ok(f)) = src.next_raw() {
        v.push((f.timestamp_ns / 1000, f.data.to_vec()));
    }
    v
}

#[test]
fn filters_every_capture_as_tcpdump_does() {
    let dir = std::env::temp_dir().join(format!("sluice-filter-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ours, theirs) = (dir.join("ours.pcap"), dir.join("theirs.pcap"));
    let (mut files, mut compared, mut matched, mut refused, mut beyond_2106) = (0, 0, 0, 0, 0);
    for capture in captures() {
        let c = capture.to_str().unwrap();
        for expr in EXPRESSIONS {
            let _ = std::fs::remove_file(&theirs);
            let t = testkit::tool::output(Command::new("tcpdump").args([
                "-r",
                c,
                "-w",
                theirs.to_str().unwrap(),
                expr,
            ]));
            let s = Command::new(SLUICE)
                .args([
                    "filter",
                    "-r",
                    c,
                    "-w",
                    ours.to_str().unwrap(),
                    "--json",
                    expr,
                ])
                .output()
                .unwrap();
            if !t.status.success() || !theirs.exists() {
                // tcpdump refuses the file or the expression for its link
                // type: so must sluice, naming why.
                if !s.status.success() {
                    assert!(
                        !s.stderr.is_empty(),
                        "{c} `{expr}`: an error without a reason"
                    );
                }
                refused += 1;
                continue;
            }
            let err = String::from_utf8_lossy(&s.stderr);
            if !s.status.success() && err.contains("beyond what pcap can hold") {
                // tcpdump wraps a time past 2106 in a pcap record; sluice
                // says it cannot write it.
                beyond_2106 += 1;
                continue;
            }
            assert!(s.status.success(), "{c} `{expr}`: {err}");
            let want = packets(&theirs);
            let got = packets(&ours);
            assert_eq!(got.len(), want.len(), "{c} `{expr}`: packets matched");
            let bytes = |v: &[(u64, Vec<u8>)]| v.iter().map(|p| p.1.clone()).collect::<Vec<_>>();
            assert!(
                bytes(&got) == bytes(&want),
                "{c} `{expr}`: the packets written differ"
            );
            // Times agree to the microsecond tcpdump writes, except in the
            // suite's captures of invalid times (a fraction of a second
            // over a second), which tcpdump copies as they are and sluice
            // carries into the seconds.
            if !c.contains("timestamp_invalid") {
                let times = |v: &[(u64, Vec<u8>)]| v.iter().map(|p| p.0).collect::<Vec<_>>();
                assert_eq!(times(&got), times(&want), "{c} `{expr}`: times");
            }
            let report: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
            assert_eq!(report["matched"], want.len() as u64);
            compared += 1;
            matched += want.len();
        }
        files += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{files} captures x {} expressions: {compared} runs alike ({matched} packets matched), \
         {refused} refused by tcpdump (link type or file), {beyond_2106} not written (a time past 2106)",
        EXPRESSIONS.len()
    );
    assert!(beyond_2106 <= EXPRESSIONS.len());
    assert!(compared > 1900 && matched > 3000);
}

/// The bytes of each packet kept.
type Kept = Vec<Vec<u8>>;

/// The packets tcpdump and sluice keep of `capture` for `expr`, as
/// `(tcpdump's, sluice's)`; `None` where tcpdump refuses the run.
fn kept_by_both(capture: &str, expr: &str, dir: &Path) -> Option<(Kept, Kept)> {
    let (ours, theirs) = (dir.join("ours.pcap"), dir.join("theirs.pcap"));
    let _ = std::fs::remove_file(&theirs);
    let t = testkit::tool::output(Command::new("tcpdump").args([
        "-r",
        capture,
        "-w",
        theirs.to_str().unwrap(),
        expr,
    ]));
    if !t.status.success() || !theirs.exists() {
        return None;
    }
    let s = Command::new(SLUICE)
        .args(["filter", "-r", capture, "-w", ours.to_str().unwrap(), expr])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&s.stderr);
    assert!(s.status.success(), "{capture} `{expr}`: {err}");
    let bytes = |p: &Path| packets(p).into_iter().map(|p| p.1).collect();
    Some((bytes(&theirs), bytes(&ours)))
}

#[test]
fn protochain_and_loads_before_the_packet_as_tcpdump() {
    // `ip6 protochain 6` jumps backward (libpcap runs it, the kernel
    // does not); `ip[0]` on Juniper link types reads `[-2]`, before the
    // packet, which libpcap rejects.
    let dir = std::env::temp_dir().join(format!("sluice-protochain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut runs, mut kept) = (0, 0);
    for capture in captures() {
        let c = capture.to_str().unwrap();
        let name = capture.file_name().unwrap().to_str().unwrap();
        let exprs: &[&str] = if name.contains("juniper") {
            &["ip[0] & 0xf != 5"]
        } else if name.contains("ipv6") || name.contains("ip6") {
            &["ip6 protochain 6", "ip6 protochain 17 or ip6 protochain 58"]
        } else {
            continue;
        };
        for expr in exprs {
            let Some((want, got)) = kept_by_both(c, expr, &dir) else {
                continue;
            };
            assert_eq!(got.len(), want.len(), "{c} `{expr}`: packets kept");
            assert!(got == want, "{c} `{expr}`: the packets written differ");
            runs += 1;
            kept += want.len();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{runs} runs alike, {kept} packets kept");
    assert!(runs > 30 && kept > 10, "{runs} runs, {kept} kept");
}

#[test]
fn the_kernel_refuses_protochain_and_capture_says_why() {
    // A live capture hands the program to the kernel (SO_ATTACH_FILTER),
    // which runs no backward jump: refused before any socket is opened.
    let out = Command::new(SLUICE)
        .args(["capture", "-i", "lo", "-c", "1", "ip6 protochain 6"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("jumps backward"), "{err}");
}

#[test]
fn a_cut_capture_exits_1_and_c_0_is_refused_as_tcpdump() {
    let dir = std::env::temp_dir().join(format!("sluice-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let whole = captures()
        .into_iter()
        .find(|c| c.ends_with("IGMP_V1.pcap"))
        .unwrap();
    // Cut inside the fourth record.
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &std::fs::read(&whole).unwrap()[..300]).unwrap();
    let c = cut.to_str().unwrap();
    let out = dir.join("out.pcap");
    let o = out.to_str().unwrap();
    let t = testkit::tool::output(Command::new("tcpdump").args(["-r", c, "-w", o, "ip"]));
    let want = packets(&out).len();
    let s = Command::new(SLUICE)
        .args(["filter", "-r", c, "-w", o, "ip"])
        .output()
        .unwrap();
    assert_eq!(s.status.code(), t.status.code(), "exit status");
    assert_eq!(s.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&s.stderr).contains("truncated"));
    assert_eq!(packets(&out).len(), want, "the packets before the cut");
    assert!(want == 3, "{want}");
    for tool in ["tcpdump", SLUICE] {
        let mut cmd = Command::new(tool);
        if tool == SLUICE {
            cmd.arg("filter");
        }
        let r = cmd
            .args(["-c", "0", "-r", whole.to_str().unwrap(), "ip"])
            .output()
            .unwrap();
        assert!(!r.status.success(), "{tool} -c 0");
        assert!(
            String::from_utf8_lossy(&r.stderr).contains("count 0"),
            "{tool}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn programs_print_as_tcpdump_prints_them() {
    for expr in [
        "udp port 53",
        "tcp[tcpflags] & tcp-syn != 0",
        "vlan and ip6",
    ] {
        for flag in ["-d", "-dd", "-ddd"] {
            let want = testkit::tool::output(Command::new("tcpdump").args([flag, expr]));
            assert_eq!(
                sluice(&["filter", flag, expr]),
                String::from_utf8_lossy(&want.stdout),
                "{flag} {expr}"
            );
        }
    }
    // With a capture: its link type and snapshot length, as tcpdump -r.
    for capture in captures().iter().step_by(23) {
        let c = capture.to_str().unwrap();
        let want = testkit::tool::output(Command::new("tcpdump").args(["-r", c, "-d", "ip"]));
        if !want.status.success() || want.stdout.is_empty() {
            continue;
        }
        let got = Command::new(SLUICE)
            .args(["filter", "-r", c, "-d", "ip"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got.stdout),
            String::from_utf8_lossy(&want.stdout),
            "-r {c} -d ip"
        );
    }
    let raw = sluice(&["filter", "-d", "-y", "RAW", "udp"]);
    assert!(raw.starts_with("(000) ldb      [0]"), "{raw}");
}

#[test]
fn a_bad_expression_fails_with_libpcaps_message() {
    let out = Command::new(SLUICE)
        .args(["filter", "-d", "udp", "port"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("udp port") && err.contains("syntax error"),
        "{err}"
    );
}
