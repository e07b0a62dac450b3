//! `sluice tc`: tc command lines kept in a configuration file; `show`
//! prints what the kernel's tc prints for the same lines (its text below
//! was read from `tc filter show` on this kernel); a failing command is
//! named and leaves the file as it was.

mod common;

use std::process::Command;

use common::SLUICE;

fn tc(conf: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(SLUICE)
        .arg("tc")
        .arg("--config")
        .arg(conf)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn lines_are_kept_and_shown_as_tc_shows_them() {
    let dir = std::env::temp_dir().join(format!("sluice-tc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tc.conf");
    let _ = std::fs::remove_file(&conf);
    for line in [
        "qdisc add dev v0 clsact",
        "qdisc add dev v1 clsact",
        "filter add dev v0 ingress prio 5 protocol ip u32 match ip src 10.0.0.1/32 match ip dport 80 0xffff flowid 1:1 action mirred egress mirror dev v1",
        "filter add dev v0 ingress prio 5 protocol ip u32 match u8 0x11 0xff at 9 classid 1:2",
    ] {
        let out = tc(&conf, &line.split(' ').collect::<Vec<_>>());
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = tc(&conf, &["-s", "filter", "show", "dev", "v0", "ingress"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "filter protocol ip pref 5 u32 chain 0 \n\
         filter protocol ip pref 5 u32 chain 0 fh 800: ht divisor 1 \n\
         filter protocol ip pref 5 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 *flowid 1:1 not_in_hw \n\
         \x20 match 0a000001/ffffffff at 12\n\
         \x20 match 00000050/0000ffff at 20\n\
         \taction order 1: mirred (Egress Mirror to device v1) pipe\n\
         \tindex 1 ref 1 bind 1\n\
         \tAction statistics:\n\
         \tSent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n\
         \tbacklog 0b 0p requeues 0\n\
         \n\
         filter protocol ip pref 5 u32 chain 0 fh 800::801 order 2049 key ht 800 bkt 0 *flowid 1:2 not_in_hw \n\
         \x20 match 00110000/00ff0000 at 8\n"
    );
    let before = std::fs::read_to_string(&conf).unwrap();
    assert_eq!(before.lines().count(), 4);
    // A bad line: named, exit 1, the file unchanged.
    let out = tc(
        &conf,
        &[
            "filter", "add", "dev", "v0", "ingress", "prio", "5", "protocol", "ip", "u32", "match",
            "u8", "0x1ff", "0xff", "at", "9",
        ],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("0x1ff"));
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), before);
    // JSON as tc -j.
    let out = tc(&conf, &["-j", "filter", "show", "dev", "v0", "ingress"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 4);
    assert_eq!(v[2]["options"]["flowid"], "1:1");
    // A batch: its changes kept, a failing one stops it and keeps nothing.
    let batch = dir.join("batch");
    std::fs::write(
        &batch,
        "filter del dev v0 ingress pref 5\n# gone\nqdisc show\n",
    )
    .unwrap();
    let out = tc(&conf, &["-b", batch.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "qdisc clsact ffff: dev v0 parent ffff:fff1 \n\
         qdisc clsact ffff: dev v1 parent ffff:fff1 \n"
    );
    let out = tc(&conf, &["filter", "show", "dev", "v0", "ingress"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    std::fs::write(&batch, "qdisc del dev v0 clsact\nfilter bogus\n").unwrap();
    let kept = std::fs::read_to_string(&conf).unwrap();
    let out = tc(&conf, &["-b", batch.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2"));
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), kept);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Frames in a capture.
/// Issue 40: tc's `-batch`, devices that must exist, `-s` saying where
/// counters come from, and the help (every classifier and action; `tc
/// compile --help` on stdout, exit 0).
#[test]
fn batch_devices_counters_and_help_as_tc() {
    let dir = std::env::temp_dir().join(format!("sluice-tc40-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tc.conf");
    let batch = dir.join("batch");
    std::fs::write(
        &batch,
        "qdisc add dev v0 clsact\n\
         filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 17 0xff classid 1:1\n",
    )
    .unwrap();
    let ok = |out: &std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(&tc(&conf, &["-batch", batch.to_str().unwrap()]));
    assert_eq!(std::fs::read_to_string(&conf).unwrap().lines().count(), 2);
    // mirred to a device neither the configuration nor this namespace has.
    let out = tc(
        &conf,
        &"filter add dev v0 ingress prio 2 protocol ip u32 match u32 0 0 action mirred egress redirect dev nonexist"
            .split(' ')
            .collect::<Vec<_>>(),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Cannot find device \"nonexist\""));
    // An interface of this namespace is one (lo), as for tc.
    ok(&tc(
        &conf,
        &"filter add dev v0 ingress prio 3 protocol ip u32 match u32 0 0 indev lo action mirred egress mirror dev lo"
            .split(' ')
            .collect::<Vec<_>>(),
    ));
    let out = tc(&conf, &["-s", "filter", "show", "dev", "v0", "ingress"]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("sluice run --tc"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Sent 0 bytes 0 pkt"));
    let help = tc(&conf, &["--help"]);
    ok(&help);
    let help = String::from_utf8_lossy(&help.stdout);
    for word in [
        "u32", "flower", "matchall", "bpf", "gact", "mirred", "police", "skbedit", "pedit", "vlan",
        "csum",
    ] {
        assert!(help.contains(word), "--help lacks {word}:\n{help}");
    }
    let out = tc(&conf, &["compile", "--help"]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: sluice tc compile"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn frames(path: &std::path::Path) -> Vec<Vec<u8>> {
    capture::PcapSource::open(path)
        .unwrap()
        .map(|f| f.unwrap().data)
        .collect()
}

#[test]
fn run_tc_sends_packets_through_the_configuration() {
    let dir = std::env::temp_dir().join(format!("sluice-run-tc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tc.conf");
    std::fs::write(
        &conf,
        "qdisc add dev v0 clsact\n\
         qdisc add dev v1 clsact\n\
         # UDP: mirrored to v1 and on; the rest: redirected to v1, whose\n\
         # egress drops TCP to port 9\n\
         filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 17 0xff classid 1:1 \
            action mirred egress mirror dev v1\n\
         filter add dev v0 ingress prio 2 protocol ip matchall action mirred egress redirect dev v1\n\
         filter add dev v1 egress prio 1 protocol ip u32 match ip dport 9 0xffff action mirred egress redirect dev v1\n",
    )
    .unwrap();
    let (pass, sent) = (dir.join("pass.pcap"), dir.join("sent.pcap"));
    let out = Command::new(SLUICE)
        .args(["run", "--tc"])
        .arg(&conf)
        .args(["--tc-dev", "v0", "--gen", "udp,count=100", "--gen"])
        .arg("tcp,count=50,dport=80")
        .arg("--gen")
        .arg("tcp,count=5,dport=9")
        .arg("--out-pass")
        .arg(&pass)
        .arg("--out-redirect")
        .arg(&sent)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["packets"], 155);
    assert_eq!(r["verdicts"]["PIPE"], 100);
    assert_eq!(r["verdicts"]["STOLEN"], 55);
    // Port 9 loops v1 egress -> v1 egress until the nesting limit.
    assert_eq!(r["too_deep"], 5);
    assert_eq!(r["sent"][0]["dev"], "v1");
    assert_eq!(r["sent"][0]["delivered"], 150);
    assert_eq!(r["sent"][0]["consumed"], 20);
    let matchall = &r["filters"]["v0 ingress"][4]["options"];
    assert_eq!(matchall["rule_hit"], 55, "{matchall}");
    assert_eq!(matchall["actions"][0]["stats"]["packets"], 55, "{matchall}");
    assert_eq!(frames(&pass).len(), 100);
    assert_eq!(frames(&sent).len(), 150);
    // The text report ends with tc's own show output.
    let text = Command::new(SLUICE)
        .args(["run", "--tc"])
        .arg(&conf)
        .args(["--tc-dev", "v0", "--gen", "udp,count=3"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("$ tc -s filter show dev v0 ingress\n"),
        "{text}"
    );
    assert!(text.contains("Sent 150 bytes 3 pkt"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sluice tc --kernel DEV` pushes the configuration's lines for DEV into
/// the kernel (all or nothing), and `sluice diff --tc` runs a capture
/// through the kernel's tc and sluice's and finds every counter equal.
/// Needs root.
#[test]
fn kernel_push_and_diff_agree_with_the_real_tc() {
    if !common::kernel_available("tc --kernel and diff --tc") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("sluice-tc-kernel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tc.conf");
    std::fs::write(
        &conf,
        "qdisc add dev vb clsact\n\
         filter add dev vb ingress prio 1 protocol ip u32 match ip protocol 6 0xff match tcp dst 23 0xffff action mirred egress redirect dev vc\n\
         filter add dev vb ingress prio 2 protocol ip u32 match ip protocol 17 0xff action mirred egress mirror dev vc\n\
         filter add dev vb ingress prio 3 protocol all u32 match u32 0 0 action mirred egress mirror dev vc\n\
         qdisc add dev vc clsact\n\
         filter add dev vc egress prio 1 u32 match u32 0 0 action mirred egress mirror dev vb\n",
    )
    .unwrap();
    let pcap = &testkit::capture("telnet-iac-check-oobr.pcap")
        .display()
        .to_string();
    let out = Command::new(SLUICE)
        .args(["diff", "--json", "--tc-dev", "vb", "--pcap", pcap, "--tc"])
        .arg(&conf)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success(), "{report:#}");
    assert_eq!(report["agrees"], true);
    let counters = report["hooks"][0]["counters"].as_array().unwrap();
    assert!(
        counters
            .iter()
            .any(|c| c["kernel"]["packets"].as_u64() > Some(0)),
        "{report:#}"
    );

    // Pushing: into a namespace of the test's own.
    let ns = common::Netns::with_veth("tcpush", "vb", "vc");
    let push = |extra: &[&str]| {
        Command::new(SLUICE)
            .arg("tc")
            .arg("--config")
            .arg(&conf)
            .args(["--kernel", "vb", "--netns", &ns])
            .args(extra)
            .output()
            .unwrap()
    };
    let first = push(&[]);
    let again = push(&[]);
    let replaced = push(&["--replace"]);
    let shown = common::sh(&["tc", "-n", &ns, "filter", "show", "dev", "vb", "ingress"]);
    let vc = common::sh(&["tc", "-n", &ns, "filter", "show", "dev", "vc", "egress"]);
    drop(ns);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(String::from_utf8_lossy(&first.stdout).contains("4 lines pushed to vb"));
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--replace"));
    assert!(replaced.status.success());
    assert_eq!(shown.matches("fh 80").count(), 6, "{shown}");
    assert!(vc.is_empty(), "only vb's lines: {vc}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// (packets, drops, overlimits) of each rule's first action in `tc -s -j
/// filter show` output (sluice's `filters` in JSON have the same form).
fn first_action_stats(filters: &serde_json::Value) -> Vec<(u64, u64, u64)> {
    filters
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["options"]["actions"][0]["stats"].as_object().cloned())
        .map(|s| {
            let n = |k: &str| s[k].as_u64().unwrap();
            (n("packets"), n("drops"), n("overlimits"))
        })
        .collect()
}

/// mirred to a device that is down sends nothing: the kernel counts an
/// overlimit and a redirect drops the packet (`tcf_mirred_act`), a mirror
/// lets it go on. The same lines in the kernel (namespace b of a veth
/// pair, a down veth beside) and in `sluice run --tc` give the same
/// action counters. Needs root.
#[test]
fn mirred_to_a_device_that_is_down_counts_overlimits_as_the_kernel() {
    if !common::kernel_available("mirred to a down device (veth pair)") {
        return;
    }
    let p = common::Pair::new("tcdown");
    common::sh(&[
        "ip", "-n", &p.b, "link", "add", "sl_down", "type", "veth", "peer", "name", "sl_downp",
    ]);
    let lines = [
        format!("qdisc add dev {} clsact", common::VB),
        format!(
            "filter add dev {} ingress prio 1 protocol ip u32 match ip protocol 17 0xff action mirred egress mirror dev sl_down",
            common::VB
        ),
        format!(
            "filter add dev {} ingress prio 2 protocol ip u32 match u32 0 0 action mirred egress redirect dev sl_down",
            common::VB
        ),
    ];
    for l in &lines {
        let mut args = vec!["netns", "exec", &p.b, "tc"];
        args.extend(l.split_whitespace());
        common::sh(&["ip"].into_iter().chain(args).collect::<Vec<_>>());
    }
    for spec in ["udp,count=5", "tcp,count=3"] {
        common::sluice(&[
            "--netns",
            &p.a,
            "gen",
            "--dev",
            common::VA,
            spec,
            "--method",
            "packet",
        ]);
    }
    // The kernel's action counters: [mirror, redirect].
    let shown = common::sh(&[
        "ip",
        "netns",
        "exec",
        &p.b,
        "tc",
        "-s",
        "-j",
        "filter",
        "show",
        "dev",
        common::VB,
        "ingress",
    ]);
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    let kernel = first_action_stats(&shown);
    assert_eq!(kernel.len(), 2, "{shown:#}");

    let dir = std::env::temp_dir().join(format!("sluice-tc-down-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tc.conf");
    std::fs::write(&conf, lines.join("\n") + "\n").unwrap();
    let out = Command::new(SLUICE)
        .args(["--netns", &p.b, "run", "--tc"])
        .arg(&conf)
        .args([
            "--tc-dev",
            common::VB,
            "--gen",
            "udp,count=5",
            "--gen",
            "tcp,count=3",
        ])
        .arg("--json")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = first_action_stats(&r["filters"][format!("{} ingress", common::VB)]);
    assert_eq!(
        ours, kernel,
        "sluice's (packets, drops, overlimits) against the kernel's"
    );
    // Nothing reached the down device; the redirected packets were
    // dropped, the mirrored ones went on.
    assert_eq!(r["sent"].as_array().map(Vec::len), Some(0), "{r}");
    assert_eq!(
        (&r["verdicts"]["SHOT"], &r["verdicts"]["PIPE"]),
        (&3.into(), &5.into()),
        "{r}"
    );
}
