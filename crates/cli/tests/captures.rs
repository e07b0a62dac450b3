//! Captures through the commands that read them: frames without an
//! Ethernet form skipped and counted (or passed), packets over 64 KiB
//! kept whole. The captures are written here, byte by byte.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn bpf(name: &str) -> PathBuf {
    PathBuf::from(testkit::object_path(name))
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-cli-captures-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A classic pcap (little-endian, µs) of link type `linktype`.
fn pcap(path: &Path, linktype: u32, snaplen: u32, frames: &[Vec<u8>]) {
    let mut v = vec![];
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&[2, 0, 4, 0]);
    for x in [0u32, 0, snaplen, linktype] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        for x in [1 + i as u32, 0, f.len() as u32, f.len() as u32] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(f);
    }
    std::fs::write(path, v).unwrap();
}

/// An 802.11 data frame (station to AP) carrying IPv4/UDP in LLC/SNAP.
fn data_frame() -> Vec<u8> {
    let mut f = vec![0x08, 0x01, 0, 0];
    f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 3, 0, 0]);
    f.extend_from_slice(&[0xaa, 0xaa, 3, 0, 0, 0, 0x08, 0x00]);
    f.extend_from_slice(&[
        0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    f.extend_from_slice(&[0x30, 0x39, 0, 53, 0, 8, 0, 0]);
    f
}

/// A beacon (management): no Ethernet form.
fn beacon() -> Vec<u8> {
    let mut f = vec![0x80, 0, 0, 0];
    f.extend_from_slice(&[0xff; 6]);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 9, 2, 0, 0, 0, 0, 9, 0, 0]);
    f.extend_from_slice(&[0; 12]);
    f
}

fn ok(out: Output) -> (serde_json::Value, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

#[test]
fn frames_without_an_ethernet_form_are_skipped_counted_and_warned_of() {
    let d = dir("foreign");
    let wifi = d.join("wifi.pcap");
    pcap(
        &wifi,
        105,
        65_535,
        &[beacon(), data_frame(), beacon(), beacon(), data_frame()],
    );
    let warning = "skipped 3 frames without an Ethernet form: 3 IEEE802_11 (105)";

    let run = |extra: &[&str]| {
        sluice()
            .arg("run")
            .arg(bpf("xdp_pass"))
            .arg("--pcap")
            .arg(&wifi)
            .arg("--json")
            .args(extra)
            .output()
            .unwrap()
    };
    let (v, stderr) = ok(run(&[]));
    assert_eq!(v["packets"], 2);
    assert_eq!(v["skipped"]["IEEE802_11 (105)"], 3);
    assert_eq!(v["link_types"]["Converted"], 2);
    assert!(stderr.contains(warning), "{stderr}");
    // In text too, and with threads (each reads the file).
    let out = sluice()
        .arg("run")
        .arg(bpf("xdp_pass"))
        .arg("--pcap")
        .arg(&wifi)
        .args(["--threads", "2"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("skipped       IEEE802_11 (105): 3"), "{text}");
    assert!(text.contains("packets       2 "), "{text}");

    // --foreign pass: today's behaviour, as captured.
    let (v, stderr) = ok(run(&["--foreign", "pass"]));
    assert_eq!(v["packets"], 5);
    assert_eq!(v["link_types"]["Foreign(105)"], 3);
    assert!(v.get("skipped").is_none());
    assert!(!stderr.contains("skipped"), "{stderr}");

    // bench takes the same option and says the same.
    let (v, stderr) = ok(sluice()
        .arg("bench")
        .arg(bpf("xdp_pass"))
        .arg("--pcap")
        .arg(&wifi)
        .args(["--seconds", "0.01", "--json"])
        .output()
        .unwrap());
    assert_eq!(v["packets"], 2);
    assert_eq!(v["skipped"]["IEEE802_11 (105)"], 3);
    assert!(stderr.contains(warning), "{stderr}");

    // diff (which needs the kernel) too, where it can run.
    let out = sluice()
        .arg("diff")
        .arg(bpf("xdp_pass"))
        .arg("--pcap")
        .arg(&wifi)
        .arg("--json")
        .output()
        .unwrap();
    if out.status.success() {
        let (v, stderr) = ok(out);
        assert_eq!(v["packets"], 2);
        assert_eq!(v["skipped"]["IEEE802_11 (105)"], 3);
        assert!(stderr.contains(warning), "{stderr}");
    } else {
        eprintln!("diff not run: {}", String::from_utf8_lossy(&out.stderr));
    }
    let help =
        String::from_utf8(sluice().args(["run", "--help"]).output().unwrap().stdout).unwrap();
    assert!(help.contains("--foreign <FOREIGN>"), "{help}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// An Ethernet frame of `len` bytes (IPv4 EtherType, a counting payload).
fn long_frame(len: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend((14..len).map(|i| (i % 251) as u8));
    f
}

#[test]
fn a_100000_byte_frame_goes_through_whole() {
    let d = dir("big");
    let input = d.join("big.pcap");
    let frame = long_frame(100_000);
    pcap(&input, 1, 262_144, &[long_frame(60), frame.clone()]);

    // xdp_pass writes it whole, in pcap and pcapng; tcpdump reads both.
    for name in ["pass.pcap", "pass.pcapng"] {
        let out = d.join(name);
        let (v, _) = ok(sluice()
            .arg("run")
            .arg(bpf("xdp_pass"))
            .arg("--pcap")
            .arg(&input)
            .arg("--out-pass")
            .arg(&out)
            .arg("--json")
            .output()
            .unwrap());
        assert_eq!(v["verdicts"]["PASS"], 2, "{v}");
        assert_eq!(v["errors"], 0);
        let back: Vec<_> = capture::PcapSource::open(&out)
            .unwrap()
            .map(|f| f.unwrap())
            .collect();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].data.len(), 100_000);
        assert!(back[1].data == frame, "{name}: the bytes differ");
        assert_eq!(back[1].orig_len, 100_000);
        let t = testkit::tool::output(Command::new("tcpdump").args(["-nn", "-r"]).arg(&out));
        assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
        assert_eq!(String::from_utf8_lossy(&t.stdout).lines().count(), 2);
    }

    // A frags-aware program sees the whole length (bpf_xdp_get_buff_len),
    // a page's linear part, and the last bytes through bpf_xdp_load_bytes.
    let (v, _) = ok(sluice()
        .arg("run")
        .arg(bpf("xdp_frags_probe"))
        .arg("--pcap")
        .arg(&input)
        .args(["--limit", "2", "--threads", "1", "--json"])
        .output()
        .unwrap());
    let text = v["maps"].to_string();
    let results = &v["maps"][0]["entries"];
    assert!(results.is_array(), "{text}");
    let value = |k: u64| {
        results
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"].as_str() == Some(k.to_string().as_str()))
            .map(|e| e["value"].clone())
            .unwrap_or_else(|| panic!("key {k} in {text}"))
    };
    let num = |x: serde_json::Value| -> u64 {
        x.as_u64()
            .or_else(|| x.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or_else(|| panic!("{x}"))
    };
    assert_eq!(num(value(0)), 100_000, "{text}");
    assert_eq!(num(value(1)), 3520, "{text}");
    let last = u64::from_le_bytes(frame[100_000 - 8..].try_into().unwrap());
    assert_eq!(num(value(3)), last, "{text}");
}

#[test]
fn a_tc_program_refuses_a_frame_over_64k_loudly() {
    let d = dir("big-tc");
    let input = d.join("big.pcap");
    pcap(&input, 1, 262_144, &[long_frame(60), long_frame(70_000)]);
    let out = sluice()
        .arg("run")
        .arg(bpf("tc_classify"))
        .arg("--pcap")
        .arg(&input)
        .arg("--json")
        .output()
        .unwrap();
    assert!(!out.status.success(), "an error is an error");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["errors"], 1);
    let msg = v["first_errors"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("70000 bytes") && msg.contains("65535"),
        "{msg}"
    );
}
