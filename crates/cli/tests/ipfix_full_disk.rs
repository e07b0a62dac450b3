//! `monitor flows --ipfix-file` on a full file system: the file is cut
//! back to its last whole IPFIX message (every message reads back
//! through sluice's decoder), the error names ENOSPC and says how many flows
//! were written and lost, and the exit status is 1.
//!
//! Needs root (a 64 KiB tmpfs mounted in a private mount namespace): without
//! it the test is skipped loudly, or fails under `SLUICE_REQUIRE_KERNEL=1`.

mod common;

use std::process::Command;

/// Every message of an IPFIX file, decoded: (messages, flow records).
fn read_back(bytes: &[u8]) -> (usize, usize) {
    let mut d = ipfix::Decoder::new();
    let (mut at, mut messages, mut flows) = (0, 0, 0);
    while at < bytes.len() {
        assert!(at + 4 <= bytes.len(), "a message header cut at {at}");
        let len = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
        assert!(at + len <= bytes.len(), "a message cut at {at}");
        flows += d
            .decode(&bytes[at..at + len])
            .unwrap_or_else(|e| panic!("message at {at}: {e}"))
            .flows
            .len();
        messages += 1;
        at += len;
    }
    (messages, flows)
}

#[test]
fn a_full_disk_leaves_whole_ipfix_messages_and_exit_status_1() {
    if !common::root_available("a_full_disk_leaves_whole_ipfix_messages_and_exit_status_1") {
        return;
    }
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("sluice-ipfix-full-{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    let kept = dir.join("kept.ipfix");
    // In a private mount namespace (`unshare -m`), so the mount goes away
    // with the shell even if the test fails; the file is copied out first.
    let script = format!(
        "set -e; mkdir -p {d}/mnt; mount -t tmpfs -o size=64k none {d}/mnt; \
         rc=0; {sluice} monitor flows --gen udp,flows=20000,count=20000 --json \
         --ipfix-file {d}/mnt/f.ipfix >/dev/null 2>{d}/err || rc=$?; \
         cp {d}/mnt/f.ipfix {kept}; umount {d}/mnt; exit $rc",
        d = dir.display(),
        sluice = env!("CARGO_BIN_EXE_sluice"),
        kept = kept.display(),
    );
    let status = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .status()
        .unwrap();
    let err = std::fs::read_to_string(dir.join("err")).unwrap_or_default();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let bytes = std::fs::read(&kept).unwrap();
    let (messages, flows) = read_back(&bytes);
    let line = err
        .lines()
        .find(|l| l.contains("flows written in whole messages"))
        .unwrap_or_else(|| panic!("no count of what was written: {err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "flows").unwrap();
    let written: usize = words[at - 1].parse().unwrap();
    let lost: usize = words[at + 5].parse().unwrap();
    assert_eq!(written, flows, "{line}");
    assert_eq!(written + lost, 20_000, "{line}");
    assert!(
        messages > 0 && bytes.len() <= 64 << 10,
        "{messages} {}",
        bytes.len()
    );
    eprintln!(
        "64 KiB tmpfs: {} bytes, {messages} messages, {flows} flows kept, {lost} lost",
        bytes.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
