//! Per-CPU map values in `sluice run`'s report with several workers: each
//! worker's value and their sum, in JSON and text, as bpftool gives each
//! CPU's (xdp-tools' counters are unions of two names for one number).

use std::process::Command;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn xdp_filter() -> std::path::PathBuf {
    programs::thirdparty::xdp_tools_objects()
        .into_iter()
        .find(|p| p.ends_with("xdpfilt_alw_all.o"))
        .expect("xdp-tools' xdpfilt_alw_all.o (./dev.sh setup fetches it)")
}

#[test]
fn per_cpu_counters_are_summed_over_the_workers() {
    let obj = xdp_filter();
    let run = |json: bool| {
        let mut c = sluice();
        c.arg("run").arg(&obj);
        c.args(["--gen", "udp,flows=20,size=64,count=601", "--threads", "2"]);
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let v: serde_json::Value = serde_json::from_str(&run(true)).unwrap();
    let stats = v["maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "xdp_stats_map")
        .expect("xdp_stats_map in the report");
    // XDP_PASS (2) counts every packet, spread over both workers.
    let e = &stats["entries"][0];
    assert_eq!(e["key"], "2", "{stats}");
    assert_eq!(e["summed"], true, "{e}");
    assert_eq!(e["value"], "{packets: 601, bytes: 38464}", "{e}");
    let cpus: Vec<&str> = e["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(cpus.len(), 2);
    let packets: u64 = cpus
        .iter()
        .map(|c| {
            let n = c
                .trim_start_matches("{packets: ")
                .split(',')
                .next()
                .unwrap();
            n.parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(packets, 601, "{cpus:?}");
    // The text says the sum and each worker's share.
    let text = run(false);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("2 =>"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("{packets: 601, bytes: 38464}  (per CPU: "),
        "{line}"
    );
}
