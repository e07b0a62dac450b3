//! Port-to-port forwarding through `sluice switch` (AF_XDP ports) beside
//! Open vSwitch 3.1 itself (Debian's `openvswitch-switch`: ovs-vswitchd
//! with the user-space datapath and afxdp ports), in the same run, on the
//! same namespaces: a sender (`sluice gen`, flat out) -- s1 [switch] s2 --
//! a sink (`sluice xsk rxdrop`). Both switches get the same OpenFlow
//! table: one flow (`in_port=1 -> 2`), then N flows matching N source
//! addresses exactly with traffic of N flows (1k, 100k: as many
//! megaflows). sluice runs twice: user space only, and with its XDP fast
//! path (`--offload xdp`: the megaflows in the kernel, 64k of them at
//! most). Rate = frames the sink received / the sender's time; the
//! median of `SLUICE_SWITCH_RUNS` runs (default 1) of
//! `SLUICE_SWITCH_FRAMES` frames (default 1,000,000).
//!
//! `cargo bench -p sluice --bench switch` (root; skipped, saying why,
//! without root or ovs-vswitchd).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

mod common;

use common::sh;

/// Namespaces gen, sw and sink, deleted however the run ends.
struct Topology {
    gen_ns: String,
    sw: String,
    sink: String,
    dir: PathBuf,
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in [&self.gen_ns, &self.sw, &self.sink] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn topology() -> Topology {
    let id = std::process::id();
    let t = Topology {
        gen_ns: format!("slsw{id}g"),
        sw: format!("slsw{id}s"),
        sink: format!("slsw{id}k"),
        dir: std::env::temp_dir().join(format!("sluice-bench-switch-{id}")),
    };
    std::fs::create_dir_all(&t.dir).unwrap();
    for ns in [&t.gen_ns, &t.sw, &t.sink] {
        sh(&["ip", "netns", "add", ns]);
        sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        sh(&[
            "ip",
            "netns",
            "exec",
            ns,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ]);
    }
    for (ns, end, port) in [(&t.gen_ns, "g0", "s1"), (&t.sink, "k0", "s2")] {
        sh(&[
            "ip", "link", "add", end, "netns", ns, "type", "veth", "peer", "name", port, "netns",
            &t.sw,
        ]);
        sh(&["ip", "-n", ns, "link", "set", end, "up"]);
        sh(&["ip", "-n", &t.sw, "link", "set", port, "up"]);
    }
    t
}

/// Waits (10 s at most) until `dev` in `ns` has an XDP program, or none.
fn wait_xdp(ns: &str, dev: &str, attached: bool) -> bool {
    for _ in 0..200 {
        let out = Command::new("ip")
            .args(["-n", ns, "link", "show", dev])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).contains("xdp") == attached {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The OpenFlow table of a case: `n` flows, one per source address.
fn flows_file(dir: &Path, n: u32) -> PathBuf {
    let path = dir.join(format!("flows-{n}.txt"));
    let mut text = String::new();
    if n == 1 {
        text.push_str("in_port=1,actions=output:2\n");
    } else {
        let base = u32::from(std::net::Ipv4Addr::new(10, 0, 0, 0));
        for i in 0..n {
            let a = std::net::Ipv4Addr::from(base + i);
            text.push_str(&format!("ip,in_port=1,nw_src={a},actions=output:2\n"));
        }
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// Sends `frames` of `flows` flows from gen through the switch; the
/// sink's frames per second (Mpps).
fn measure(t: &Topology, flows: u32, frames: u64) -> Result<f64, String> {
    let sink = Command::new(SLUICE)
        .args(["--netns", &t.sink, "xsk", "rxdrop", "--dev", "k0", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if !wait_xdp(&t.sink, "k0", true) {
        return Err("the sink did not start".into());
    }
    std::thread::sleep(Duration::from_millis(300));
    let spec = format!("udp,flows={flows},src=10.0.0.0/8,count={frames}");
    let sent = Command::new(SLUICE)
        .args(["--netns", &t.gen_ns, "gen", "--dev", "g0", "--json", &spec])
        .output()
        .map_err(|e| e.to_string())?;
    let sent: serde_json::Value =
        serde_json::from_slice(&sent.stdout).map_err(|e| format!("sluice gen: {e}"))?;
    std::thread::sleep(Duration::from_millis(500));
    let got = stop_json(sink)?;
    wait_xdp(&t.sink, "k0", false);
    std::thread::sleep(Duration::from_millis(300));
    let rx = got["rx_packets"].as_f64().ok_or("sink: no rx_packets")?;
    Ok(rx / sent["seconds"].as_f64().unwrap_or(f64::NAN) / 1e6)
}

fn stop_json(child: Child) -> Result<serde_json::Value, String> {
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `sluice switch` on s1, s2 with `flows` (and the XDP fast path with
/// `offload`); its summary after `f` ran.
fn with_sluice<T>(
    t: &Topology,
    flows: &Path,
    offload: bool,
    f: impl FnOnce() -> T,
) -> Result<(T, serde_json::Value), String> {
    let ctl = t.dir.join("switch.ctl");
    let child = Command::new(SLUICE)
        .args(["--netns", &t.sw, "switch", "--port", "s1", "--port", "s2"])
        .args(if offload {
            &["--offload", "xdp"][..]
        } else {
            &[]
        })
        .arg("--flows")
        .arg(flows)
        .arg("--ctl")
        .arg(&ctl)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if !(wait_xdp(&t.sw, "s1", true) && wait_xdp(&t.sw, "s2", true)) {
        return Err("sluice switch did not start".into());
    }
    std::thread::sleep(Duration::from_millis(300));
    let r = f();
    let summary = stop_json(child)?;
    wait_xdp(&t.sw, "s1", false);
    wait_xdp(&t.sw, "s2", false);
    std::thread::sleep(Duration::from_millis(300));
    Ok((r, summary))
}

/// ovs-vswitchd (user-space datapath, afxdp ports s1 and s2 as OpenFlow
/// ports 1 and 2) with `flows`, in the switch's namespace, for `f`.
fn with_ovs<T>(t: &Topology, flows: &Path, f: impl FnOnce() -> T) -> Result<T, String> {
    let d = t.dir.join("ovs");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
    let env = [
        ("OVS_RUNDIR", d.clone()),
        ("OVS_LOGDIR", d.clone()),
        ("OVS_DBDIR", d.clone()),
    ];
    let run = |args: &[&str]| -> Result<(), String> {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &t.sw]).args(args);
        for (k, v) in &env {
            c.env(k, v);
        }
        let out = c.output().map_err(|e| format!("{}: {e}", args[0]))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    let p = |name: &str| d.join(name).display().to_string();
    let db = format!("unix:{}", p("db.sock"));
    run(&[
        "ovsdb-tool",
        "create",
        &p("conf.db"),
        "/usr/share/openvswitch/vswitch.ovsschema",
    ])?;
    run(&[
        "ovsdb-server",
        &p("conf.db"),
        &format!("--remote=punix:{}", p("db.sock")),
        &format!("--pidfile={}", p("ovsdb.pid")),
        "--detach",
        &format!("--log-file={}", p("ovsdb.log")),
    ])?;
    let result = (|| {
        let vsctl = |args: &[&str]| {
            let mut all = vec!["ovs-vsctl", "--timeout=20"];
            let db_arg = format!("--db={db}");
            all.push(&db_arg);
            all.extend(args);
            run(&all)
        };
        vsctl(&["--no-wait", "init"])?;
        run(&[
            "ovs-vswitchd",
            &db,
            &format!("--pidfile={}", p("vswitchd.pid")),
            "--detach",
            &format!("--log-file={}", p("vswitchd.log")),
        ])?;
        vsctl(&[
            "add-br",
            "br0",
            "--",
            "set",
            "bridge",
            "br0",
            "datapath_type=netdev",
        ])?;
        for (port, no) in [("s1", "1"), ("s2", "2")] {
            vsctl(&[
                "add-port",
                "br0",
                port,
                "--",
                "set",
                "interface",
                port,
                "type=afxdp",
                "options:xdp-mode=native",
                &format!("ofport_request={no}"),
            ])?;
        }
        let mgmt = format!("unix:{}", p("br0.mgmt"));
        run(&["ovs-ofctl", "del-flows", &mgmt])?;
        run(&[
            "ovs-ofctl",
            "-O",
            "OpenFlow13",
            "add-flows",
            &mgmt,
            &flows.display().to_string(),
        ])?;
        if !(wait_xdp(&t.sw, "s1", true) && wait_xdp(&t.sw, "s2", true)) {
            return Err("ovs-vswitchd did not attach its XDP programs".to_string());
        }
        std::thread::sleep(Duration::from_millis(500));
        Ok(f())
    })();
    // End the daemons this benchmark started, by their PIDs.
    for pid in ["vswitchd.pid", "ovsdb.pid"] {
        if let Ok(text) = std::fs::read_to_string(d.join(pid))
            && let Ok(pid) = text.trim().parse::<i32>()
        {
            // SAFETY: signalling a daemon this run started, by its PID.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
    wait_xdp(&t.sw, "s1", false);
    wait_xdp(&t.sw, "s2", false);
    std::thread::sleep(Duration::from_millis(300));
    result
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("bench switch: SKIPPED (needs root for namespaces and AF_XDP)");
        return;
    }
    let have_ovs = Path::new("/usr/sbin/ovs-vswitchd").exists();
    if !have_ovs {
        eprintln!(
            "bench switch: Open vSwitch's baseline SKIPPED (apt-get install openvswitch-switch)"
        );
    }
    let frames = env_u64("SLUICE_SWITCH_FRAMES", 1_000_000);
    let runs = env_u64("SLUICE_SWITCH_RUNS", 1).max(1);
    let t = topology();
    println!("port-to-port forwarding, {frames} frames of 64 bytes a run, median of {runs}");
    println!(
        "{:>8}  {:>12}  {:>11}  {:>6}  {:>10}  {:>12}  sluice tiers (emc / megaflow / upcall; kernel hits)",
        "flows", "OVS 3.1 Mpps", "sluice Mpps", "vs OVS", "+xdp Mpps", "xdp vs user"
    );
    for flows in [1u32, 1_000, 100_000] {
        let file = flows_file(&t.dir, flows);
        let ovs = have_ovs.then(|| {
            let v: Result<Vec<f64>, String> = (0..runs)
                .map(|_| with_ovs(&t, &file, || measure(&t, flows, frames)).and_then(|r| r))
                .collect();
            v.map(median)
        });
        let mut tiers = String::new();
        let mut sluice = |offload: bool| -> Result<f64, String> {
            let v: Result<Vec<f64>, String> = (0..runs)
                .map(|_| {
                    let (r, s) = with_sluice(&t, &file, offload, || measure(&t, flows, frames))?;
                    if offload {
                        tiers.push_str(&format!("; {}", s["offload_hits"]));
                    } else {
                        tiers = format!(
                            "{} / {} / {}",
                            s["emc_hits"], s["megaflow_hits"], s["upcalls"]
                        );
                    }
                    r
                })
                .collect();
            v.map(median)
        };
        let ours = sluice(false);
        let fast = sluice(true);
        let show = |r: &Result<f64, String>| match r {
            Ok(x) => format!("{x:.3}"),
            Err(e) => {
                eprintln!("  ({e})");
                "error".into()
            }
        };
        let ovs_text = ovs.as_ref().map_or("skipped".to_string(), show);
        let ratio = |a: Option<&Result<f64, String>>, b: &Result<f64, String>| match (a, b) {
            (Some(Ok(base)), Ok(x)) if *base > 0.0 => format!("{:.2}x", x / base),
            _ => "-".into(),
        };
        println!(
            "{flows:>8}  {ovs_text:>12}  {:>11}  {:>6}  {:>10}  {:>12}  {tiers}",
            show(&ours),
            ratio(ovs.as_ref(), &ours),
            show(&fast),
            ratio(Some(&ours), &fast),
        );
    }
}
