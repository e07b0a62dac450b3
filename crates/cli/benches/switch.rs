//! Port-to-port forwarding through `sluice switch` (AF_XDP ports) beside
//! Open vSwitch 3.1 itself (Debian's `openvswitch-switch`: ovs-vswitchd
//! with the user-space datapath and afxdp ports), in the same run, on the
//! same namespaces: a sender (`sluice gen`) -- s1 [switch] s2 -- a sink
//! (an XDP program dropping every frame in the kernel, counted by veth:
//! no thread of its own to take a CPU from the switches). Both switches
//! get the same OpenFlow table: one flow (`in_port=1 -> 2`), then N flows
//! matching N source addresses exactly with traffic of N flows (1k, 100k:
//! as many megaflows). sluice runs twice: user space only, and with its
//! XDP fast path (`--offload xdp`: the megaflows in the kernel, 64k of
//! them at most).
//!
//! Two rates per switch: the no-drop rate (the highest rate a paced
//! packet-socket sender offers that the switch forwards with at most 0.5%
//! loss, RFC 2544's throughput) and the forwarding rate under overload
//! (XDP live frames flat out, several Mpps: frames out per second of
//! sending, RFC 2285's maximum forwarding rate); and the packet thread's
//! cycles per packet (sluice's summary, OVS's `pmd-stats-show`). The
//! median of `SLUICE_SWITCH_RUNS` runs (default 1).
//!
//! `cargo bench -p sluice --bench switch` (root; skipped, saying why,
//! without root or ovs-vswitchd).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

mod common;

use common::{sh, wait_xdp};
use testkit::Netns;

/// Namespaces gen, sw and sink (testkit's), deleted however the run ends.
struct Topology {
    gen_ns: Netns,
    sw: Netns,
    sink: Netns,
    dir: PathBuf,
}

impl Drop for Topology {
    fn drop(&mut self) {
        let pin = self.dir.join("pin").display().to_string();
        let _ = Command::new(SLUICE)
            .args([
                "--netns", &self.sink, "detach", "--dev", "k0", "--pin", &pin,
            ])
            .output();
        // The namespaces go next (their fields).
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn topology() -> Topology {
    let id = std::process::id();
    let t = Topology {
        gen_ns: Netns::new("swg"),
        sw: Netns::new("sws"),
        sink: Netns::new("swk"),
        dir: std::env::temp_dir().join(format!("sluice-bench-switch-{id}")),
    };
    std::fs::create_dir_all(&t.dir).unwrap();
    for (ns, end, port) in [(&t.gen_ns, "g0", "s1"), (&t.sink, "k0", "s2")] {
        ns.veth_to(end, &t.sw, port, None);
    }
    let drop = t.dir.join("xdp_drop.o");
    std::fs::write(&drop, programs::object("xdp_drop").expect("xdp_drop")).unwrap();
    sh(&[
        SLUICE,
        "--netns",
        &t.sink,
        "attach",
        "--dev",
        "k0",
        "--pin",
        &t.dir.join("pin").display().to_string(),
        &drop.display().to_string(),
    ]);
    t
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

/// How a trial sends: paced through a packet socket (a millisecond's
/// worth at a time), or flat out as XDP live frames (bursts far beyond
/// any switch's rate; paced live frames come a twentieth of a second's
/// worth at a time, more than a switch's rings hold).
#[derive(Clone, Copy)]
enum Offer {
    Paced(u64),
    Flat,
}

/// One trial: frames sent, frames the sink got, the sender's seconds.
struct Trial {
    sent: u64,
    received: u64,
    seconds: f64,
}

fn trial(t: &Topology, flows: u32, offer: Offer, count: u64) -> Result<Trial, String> {
    let before = sink_count(t)?;
    let spec = match offer {
        Offer::Paced(rate) => {
            format!("udp,flows={flows},src=10.0.0.0/8,count={count},rate={rate}")
        }
        Offer::Flat => format!("udp,flows={flows},src=10.0.0.0/8,count={count}"),
    };
    let method = match offer {
        Offer::Paced(_) => "packet",
        Offer::Flat => "live",
    };
    let sent = Command::new(SLUICE)
        .args(["--netns", &t.gen_ns, "gen", "--dev", "g0", "--json"])
        .args(["--method", method, &spec])
        .output()
        .map_err(|e| e.to_string())?;
    let sent: serde_json::Value =
        serde_json::from_slice(&sent.stdout).map_err(|e| format!("sluice gen: {e}"))?;
    std::thread::sleep(Duration::from_millis(300));
    Ok(Trial {
        sent: count,
        received: sink_count(t)? - before,
        seconds: sent["seconds"].as_f64().unwrap_or(f64::NAN),
    })
}

/// Frames the sink has dropped so far: an XDP program on k0 drops them
/// in the kernel (no thread of its own to take CPU from the switches),
/// and veth counts them (`ethtool -S`).
fn sink_count(t: &Topology) -> Result<u64, String> {
    let out = Command::new("ip")
        .args(["netns", "exec", &t.sink, "ethtool", "-S", "k0"])
        .output()
        .map_err(|e| format!("ethtool: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rx_queue_0_xdp_drops:"))
        .find_map(|v| v.trim().parse().ok())
        .ok_or_else(|| "ethtool -S k0: no rx_queue_0_xdp_drops".to_string())
}

/// Frames of a paced trial at `rate`: a second's worth, and every flow at
/// least once (so that none of the cached flows goes idle between trials).
fn trial_count(flows: u32, rate: u64) -> u64 {
    rate.max(u64::from(flows)).max(20_000)
}

/// A switch's two rates on `flows` flows (Mpps).
#[derive(Clone, Copy)]
struct Rates {
    /// The highest paced rate forwarded with at most 0.5% loss (RFC
    /// 2544's throughput, with room for the frames in flight at the end).
    no_drop: f64,
    /// Frames forwarded per second while offered far more (RFC 2285's
    /// maximum forwarding rate).
    overload: f64,
}

/// The packet socket's rate limit here (the no-drop search's ceiling).
const PACED_MAX: u64 = 1_200_000;

fn rates(t: &Topology, flows: u32) -> Result<Rates, String> {
    // Warm up: every flow through the slow path once, slowly.
    trial(t, flows, Offer::Paced(50_000), trial_count(flows, 50_000))?;
    let flat = trial(t, flows, Offer::Flat, 4_000_000)?;
    // The highest rate offered (as the sender reached it) that passed.
    let (mut lo, mut hi, mut best) = (0u64, PACED_MAX, 0f64);
    for _ in 0..7 {
        let rate = (lo + hi) / 2;
        let tr = trial(t, flows, Offer::Paced(rate), trial_count(flows, rate))?;
        let offered = tr.sent as f64 / tr.seconds.max(1e-9);
        if tr.received as f64 >= tr.sent as f64 * 0.995 {
            best = best.max(offered.min(rate as f64));
            lo = rate;
        } else {
            hi = rate;
        }
    }
    Ok(Rates {
        no_drop: best / 1e6,
        overload: flat.received as f64 / flat.seconds.max(1e-9) / 1e6,
    })
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
/// ports 1 and 2) with `flows`, in the switch's namespace, for `f`; with
/// its PMD thread's processing cycles per packet (`pmd-stats-show`).
fn with_ovs<T>(
    t: &Topology,
    flows: &Path,
    f: impl FnOnce() -> T,
) -> Result<(T, Option<f64>), String> {
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
            &format!("--pidfile={}", p("ovs-vswitchd.pid")),
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
        let r = f();
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &t.sw,
            "ovs-appctl",
            "dpif-netdev/pmd-stats-show",
        ]);
        for (k, v) in &env {
            c.env(k, v);
        }
        let stats = c.output().map_err(|e| e.to_string())?;
        let cycles = String::from_utf8_lossy(&stats.stdout)
            .lines()
            .find_map(|l| l.trim().strip_prefix("avg processing cycles per packet:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok());
        if cycles.is_none() {
            eprintln!(
                "  (ovs-appctl dpif-netdev/pmd-stats-show: {}{})",
                String::from_utf8_lossy(&stats.stdout).trim(),
                String::from_utf8_lossy(&stats.stderr).trim()
            );
        }
        Ok((r, cycles))
    })();
    // End the daemons this benchmark started, by their PIDs.
    for pid in ["ovs-vswitchd.pid", "ovsdb.pid"] {
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

fn median(runs: Vec<Rates>) -> Rates {
    let mid = |f: fn(&Rates) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Rates {
        no_drop: mid(|r| r.no_drop),
        overload: mid(|r| r.overload),
    }
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
    let runs = env_u64("SLUICE_SWITCH_RUNS", 1).max(1);
    let t = topology();
    println!(
        "port-to-port forwarding of 64-byte frames, Mpps: no-drop rate (<= 0.5% loss, paced) / \
         forwarding rate under overload; (cycles per packet of the packet thread); median of {runs}"
    );
    println!(
        "{:>7}  {:>20}  {:>20}  {:>11}  {:>13}  {:>11}  sluice tiers (emc / megaflow / upcall; kernel hits)",
        "flows", "OVS 3.1", "sluice", "vs OVS", "sluice + xdp", "xdp vs user"
    );
    for flows in [1u32, 1_000, 100_000] {
        let file = flows_file(&t.dir, flows);
        let mut ovs_cycles = None;
        let ovs = have_ovs.then(|| {
            let v: Result<Vec<Rates>, String> = (0..runs)
                .map(|_| {
                    let (r, c) = with_ovs(&t, &file, || rates(&t, flows))?;
                    ovs_cycles = c.or(ovs_cycles);
                    r
                })
                .collect();
            v.map(median)
        });
        let mut tiers = String::new();
        let mut cycles = None;
        let mut sluice = |offload: bool| -> Result<Rates, String> {
            let v: Result<Vec<Rates>, String> = (0..runs)
                .map(|_| {
                    let (r, s) = with_sluice(&t, &file, offload, || rates(&t, flows))?;
                    if offload {
                        tiers.push_str(&format!("; {}", s["offload_hits"]));
                    } else {
                        tiers = format!(
                            "{} / {} / {}",
                            s["emc_hits"], s["megaflow_hits"], s["upcalls"]
                        );
                        cycles = s["pmds"][0]["cycles_per_packet"].as_f64();
                    }
                    r
                })
                .collect();
            v.map(median)
        };
        let ours = sluice(false);
        let fast = sluice(true);
        let show = |r: &Result<Rates, String>, c: Option<f64>| match r {
            Ok(x) => {
                let rates = format!("{:.3} / {:.3}", x.no_drop, x.overload);
                match c {
                    Some(c) => format!("{rates} ({c:.0})"),
                    None => rates,
                }
            }
            Err(e) => {
                eprintln!("  ({e})");
                "error".into()
            }
        };
        let ovs_text = ovs
            .as_ref()
            .map_or("skipped".to_string(), |r| show(r, ovs_cycles));
        let ratio = |a: Option<&Result<Rates, String>>, b: &Result<Rates, String>| match (a, b) {
            (Some(Ok(base)), Ok(x)) if base.no_drop > 0.0 && base.overload > 0.0 => format!(
                "{:.2}x/{:.2}x",
                x.no_drop / base.no_drop,
                x.overload / base.overload
            ),
            _ => "-".into(),
        };
        println!(
            "{flows:>7}  {ovs_text:>20}  {:>20}  {:>11}  {:>13}  {:>11}  {tiers}",
            show(&ours, cycles),
            ratio(ovs.as_ref(), &ours),
            show(&fast, None),
            ratio(Some(&ours), &fast),
        );
    }
}
