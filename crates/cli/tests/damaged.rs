//! One rule for a damaged capture, in every command that reads packets
//! (`run`, `filter`, `monitor flows|sample|rtt`, `monitor rtt --pping`,
//! `xpf run`): what was read is processed and output, one warning on
//! standard error says after how many packets and why reading stopped, and
//! the exit status is 1, as `sluice run` and tcpdump have it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn root(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
        .display()
        .to_string()
}

/// A copy of the shared capture cut in the middle of a record; the
/// packets whole before the cut, as tcpdump reads them.
fn cut_copy(dir: &Path) -> (PathBuf, usize) {
    let bytes = std::fs::read(testkit::capture("mptcp-v0.pcap")).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..20_000]).unwrap();
    let out = testkit::tool::output(Command::new("tcpdump").args(["-n", "-r"]).arg(&cut));
    let whole = String::from_utf8_lossy(&out.stdout).lines().count();
    let warn = String::from_utf8_lossy(&out.stderr);
    assert!(warn.contains("truncated dump file"), "{warn}");
    (cut, whole)
}

#[test]
fn every_front_end_exits_1_on_a_capture_cut_mid_record() {
    let dir = std::env::temp_dir().join(format!("sluice-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cut, whole) = cut_copy(&dir);
    assert!(whole > 100, "{whole}");
    let c = cut.display().to_string();
    let ipfix = dir.join("flows.ipfix");
    let written = dir.join("matched.pcap");
    let pass = root("target/bpf/xdp_pass.o");
    let xpf = root("programs/xpf/sample.s");
    let ipfix_s = ipfix.display().to_string();
    let written_s = written.display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", &pass, "--pcap", &c, "--json"],
        vec!["filter", "-r", &c, "tcp"],
        vec!["filter", "-r", &c, "-w", &written_s, "tcp"],
        vec!["monitor", "flows", "--pcap", &c, "--ipfix-file", &ipfix_s],
        vec!["monitor", "sample", "--pcap", &c, "--rate", "1/1", "--json"],
        vec!["monitor", "rtt", "--pcap", &c, "--json"],
        vec!["monitor", "rtt", "--pping", "--pcap", &c],
        vec!["xpf", "run", &xpf, "--pcap", &c, "--json"],
    ];
    let warning = format!(
        "sluice: the capture ended early after {whole} packets: {c}, packet {}: truncated record",
        whole + 1
    );
    for args in cases {
        let out = sluice().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches(&warning).count(),
            1,
            "{args:?}: want one `{warning}` in: {stderr}"
        );
        // What was read was output.
        assert!(!stdout.trim().is_empty(), "{args:?}: nothing printed");
        match args[0] {
            "filter" if args.contains(&"-w") => {
                let n =
                    testkit::tool::output(Command::new("tcpdump").args(["-n", "-r", &written_s]));
                assert!(n.status.success(), "{}", String::from_utf8_lossy(&n.stderr));
                assert_eq!(String::from_utf8_lossy(&n.stdout).lines().count(), whole);
            }
            "filter" => assert_eq!(stdout.lines().count(), whole, "{args:?}"),
            "monitor" if args[1] == "flows" => {
                let bytes = std::fs::read(&ipfix).unwrap();
                let mut d = ipfix::Decoder::new();
                let mut at = 0;
                let mut flows = 0;
                while at < bytes.len() {
                    let len = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
                    flows += d.decode(&bytes[at..at + len]).unwrap().flows.len();
                    at += len;
                }
                assert!(flows > 0, "no flow exported");
            }
            _ => {}
        }
        if args.contains(&"--json") && args[0] != "monitor" {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            let packets = v
                .get("packets")
                .or_else(|| v.pointer("/counters/packets"))
                .and_then(|p| p.as_u64());
            if let Some(p) = packets {
                assert_eq!(p, whole as u64, "{args:?}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
