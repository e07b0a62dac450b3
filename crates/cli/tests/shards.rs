//! `sluice shards`: plans (text and JSON), `--check` counting every frame
//! of the capture once, a damaged capture's error as a sequential read
//! gives it, and bad arguments refused with a message.

use std::process::Command;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = sluice()
        .arg("shards")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Frames of a capture as one sequential read gives them.
fn frames(path: &std::path::Path) -> u64 {
    capture::PcapSource::open(path)
        .unwrap()
        .map_while(Result::ok)
        .count() as u64
}

#[test]
fn a_plan_and_its_check_count_every_frame_once() {
    let path = testkit::capture("mptcp-v0.pcap");
    let p = path.to_str().unwrap();
    let plan = json(&[p, "--split", "4K"]);
    let shards = plan["shards"].as_array().unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert_eq!(shards.len() as u64, size.div_ceil(4096));
    assert_eq!(shards[0]["start"], 0);
    assert_eq!(shards.last().unwrap()["end"], size);
    assert!(plan.get("check").is_none());

    let checked = json(&[p, "--split", "4K", "--check"]);
    let check = &checked["check"];
    assert_eq!(check["frames"].as_u64().unwrap(), frames(&path));
    assert_eq!(check["errors"].as_array().unwrap().len(), 0);
    let boundaries = check["boundaries"].as_array().unwrap();
    for w in boundaries.windows(2) {
        assert_eq!(w[0]["next"], w[1]["first"], "{w:?}");
    }

    let out = sluice()
        .args(["shards", p, "--split", "4K", "--check"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("begins at 0 (from the header)"), "{text}");
    assert!(text.contains("guess proven"), "{text}");
    assert!(
        text.contains(&format!("{} frames;", frames(&path))),
        "{text}"
    );
}

#[test]
fn a_damaged_capture_ends_on_the_sequential_reads_error() {
    let dir = std::env::temp_dir().join(format!("sluice-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(testkit::capture("mptcp-v0.pcap")).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..20_000]).unwrap();
    let want = capture::PcapSource::open(&cut)
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    let out = sluice()
        .args(["shards", cut.to_str().unwrap(), "--split", "3K", "--check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim(), format!("sluice: {want}"));
}

#[test]
fn bad_arguments_are_refused() {
    let out = sluice()
        .args(["shards", "x.pcap", "--split", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("split size `0`"),
        "{err}"
    );
    let out = sluice()
        .args(["shards", "/nonexistent/*.pcap"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no file matches"),
        "{err}"
    );
}
