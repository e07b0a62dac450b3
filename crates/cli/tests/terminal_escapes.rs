//! Untrusted bytes never reach the terminal raw: an escape sequence in an
//! assembly file, a tcpdump expression, a `tc` line, a flows file or a
//! file name comes back in the message that quotes it as `\x1b`, never as
//! the byte the terminal would obey.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::SLUICE;

/// An escape sequence that clears the screen and homes the cursor.
const CLEAR: &str = "\x1b[2J\x1b[H";

/// A fresh directory `sluice-escapes-NAME-PID` (testkit's).
fn scratch(name: &str) -> PathBuf {
    testkit::temp_dir(&format!("escapes-{name}"))
}

/// Runs `cmd` and checks its output: no control byte but newline and tab,
/// and the escape shown as `\x1b` in a message that quotes the input.
fn shown_not_sent(what: &str, cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let raw = bytes
            .iter()
            .position(|&b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f);
        assert!(
            raw.is_none(),
            "{what}: a raw control byte on {stream}: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    assert!(
        String::from_utf8_lossy(&all).contains("\\x1b[2J"),
        "{what}: the input is not quoted (escaped) in the message: {}",
        String::from_utf8_lossy(&all)
    );
    out
}

#[test]
fn an_assembly_file_with_an_escape_sequence() {
    let dir = scratch("asm");
    let file = dir.join("evil.s");
    std::fs::write(&file, format!("mov %r0, 1\nex{CLEAR}it\n")).unwrap();
    let out = shown_not_sent("asm", Command::new(SLUICE).arg("asm").arg(&file));
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_file_name_with_an_escape_sequence() {
    let dir = scratch("name");
    let file = dir.join(format!("no{CLEAR}such.o"));
    let out = shown_not_sent("verify", Command::new(SLUICE).arg("verify").arg(&file));
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_tcpdump_expression_with_an_escape_sequence() {
    let capture = testkit::capture("802.1ad_QinQ.pcap").display().to_string();
    let out = shown_not_sent(
        "filter",
        Command::new(SLUICE)
            .args(["filter", "-r", &capture])
            .arg(format!("host {CLEAR}")),
    );
    assert!(!out.status.success());
}

#[test]
fn a_tc_line_with_an_escape_sequence() {
    let dir = scratch("tc");
    let conf = dir.join("tc.conf");
    let qdisc = Command::new(SLUICE)
        .arg("tc")
        .arg("--config")
        .arg(&conf)
        .args(["qdisc", "add", "dev", "v0", "clsact"])
        .output()
        .unwrap();
    assert!(qdisc.status.success(), "{qdisc:?}");
    let out = shown_not_sent(
        "tc",
        Command::new(SLUICE)
            .arg("tc")
            .arg("--config")
            .arg(&conf)
            .args(["filter", "add", "dev", "v0", "ingress", "prio", "1"])
            .args(["protocol", "ip", "u32", "match", "ip", "src"])
            .arg(format!("10.0.0.1{CLEAR}"))
            .args(["flowid", "1:1"]),
    );
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_flows_file_with_an_escape_sequence() {
    let dir = scratch("flows");
    let flows = dir.join("flows.txt");
    std::fs::write(&flows, format!("priority=1,udp,actions={CLEAR}\n")).unwrap();
    let capture = dir.join("in.pcap");
    let out = shown_not_sent(
        "switch",
        Command::new(SLUICE)
            .arg("switch")
            .arg("--flows")
            .arg(&flows)
            .arg("--port")
            .arg(format!("pcap:{}", capture.display())),
    );
    assert!(!out.status.success());
    let _ = std::fs::remove_dir_all(dir);
}
