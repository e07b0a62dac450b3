//! `sluice switch`: the OpenFlow 1.3 switch, on live interfaces (AF_XDP
//! or AF_PACKET, needs root) or over capture ports (no root needed):
//! flows from an `ovs-ofctl add-flows` file and from OpenFlow connections,
//! frames through Open vSwitch's cache hierarchy, then what it did. The
//! subsystem is the `switch` crate (docs/switch.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use switch::{
    Backend, CacheOptions, Channel, ChannelOptions, ControlSocket, Core, Endpoint, LiveOptions,
    LivePort, PcapPort, SwitchError, TierStats, TlsFiles, replay,
};

use super::xsk;

/// An OpenFlow 1.3 switch with Open vSwitch's exact-match and megaflow caches, on interfaces (AF_XDP, AF_PACKET) or capture ports (docs/switch.md)
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    query: Option<Query>,
    /// A port, numbered from 1 in order: [NAME=]IF or [NAME=]afxdp:IF (AF_XDP), [NAME=]afpacket:IF, or [NAME=]pcap:IN[:OUT] (replays IN as the frames arriving on it, writes the frames sent out of it to OUT). AF_XDP ports get their XDP program through a bpf link of this process: the kernel detaches it when the switch ends, even by SIGKILL
    #[arg(long = "port", value_name = "SPEC", required = true)]
    ports: Vec<String>,
    /// A port's VLANs for the NORMAL action, in `ovs-vsctl set port` words: "NAME tag=20" (an access port of VLAN 20), "NAME trunks=10,20" (a trunk of those VLANs; a port without either is a trunk of all VLANs)
    #[arg(long = "vlan", value_name = "PORT SETTINGS")]
    vlans: Vec<String>,
    /// Flows to start with, in `ovs-ofctl add-flows` syntax (one a line)
    #[arg(long, value_name = "FILE")]
    flows: Option<PathBuf>,
    /// Listen for OpenFlow clients or connect to a controller, as Open vSwitch names them: punix:PATH (a socket file, mode 0600: only its owner and root may connect), pssl:PORT[:IP] (TLS; a client must show a certificate signed by --ca-cert), ptcp:PORT[:IP] (plain TCP, loopback unless IP is given: EVERY local user can then reprogram the switch), unix:PATH, ssl:IP[:PORT], tcp:IP[:PORT] [default for live ports: punix: beside the control socket, its name ending in .mgmt (/run/sluice/switch.mgmt as root); capture runs have none unless given, and with --duration S serve it S seconds after the captures]
    #[arg(long = "of", value_name = "ENDPOINT")]
    of: Vec<Endpoint>,
    /// The switch's private key (PEM), for pssl: and ssl: (as ovs-vswitchd's --private-key)
    #[arg(long, value_name = "FILE")]
    private_key: Option<PathBuf>,
    /// The switch's certificate (PEM), signed by a CA its peers trust, for pssl: and ssl:
    #[arg(long, value_name = "FILE")]
    certificate: Option<PathBuf>,
    /// The CA certificate (PEM) that must have signed every peer's certificate, for pssl: and ssl:
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Without the exact-match cache (megaflows only)
    #[arg(long)]
    no_emc: bool,
    /// Without any cache: every packet goes through the OpenFlow tables
    #[arg(long)]
    no_cache: bool,
    /// A fast path in front of the user-space switch: `xdp` mirrors the megaflows that drop or output to one port into an XDP program on the ports, which forwards their packets in the kernel (AF_XDP ports only; the receiving ends of veth ports need XDP or GRO on for redirected frames); the user-space thread then waits for misses in poll() unless --pmd-threads is given
    #[arg(long, value_name = "KIND", value_enum)]
    offload: Option<OffloadKind>,
    /// Print the OpenFlow flows at the end, as ovs-ofctl dump-flows
    #[arg(long)]
    dump_flows: bool,
    /// Print the datapath's megaflows at the end, as ovs-appctl dpctl/dump-flows
    #[arg(long)]
    dump_datapath: bool,
    /// The control socket of a live switch (mode 0600), for `sluice switch stats|dump-flows` [default: /run/sluice/switch.ctl as root, else $XDG_RUNTIME_DIR/sluice/switch.ctl]
    #[arg(long, value_name = "PATH")]
    ctl: Option<PathBuf>,
    /// AF_XDP and run options (AF_XDP ports use the queue, mode and ring options)
    #[command(flatten)]
    common: xsk::Common,
}

#[derive(Copy, Clone, clap::ValueEnum)]
enum OffloadKind {
    /// An XDP program on the ports, its flows in BPF maps
    Xdp,
}

/// Questions to a running switch, over its control socket.
#[derive(clap::Subcommand)]
enum Query {
    /// Per packet thread: packets, EMC hits, megaflow hits, upcalls, cycles per packet (as ovs-appctl dpif-netdev/pmd-perf-show); the ports' counters
    Stats(QueryArgs),
    /// The datapath's megaflows of every packet thread (as ovs-appctl dpctl/dump-flows)
    DumpFlows(QueryArgs),
}

#[derive(clap::Args)]
struct QueryArgs {
    /// The switch's control socket [default: /run/sluice/switch.ctl as root, else $XDG_RUNTIME_DIR/sluice/switch.ctl]
    #[arg(long, value_name = "PATH")]
    ctl: Option<PathBuf>,
    /// JSON output
    #[arg(long)]
    json: bool,
}

/// The ports of a run: all captures, or all interfaces of one kind.
enum Ports {
    Pcap(Vec<PcapPort>),
    Live { ports: Vec<LivePort>, afxdp: bool },
}

fn ports(specs: &[String]) -> Result<Ports, String> {
    let mut pcap = Vec::new();
    let mut live = Vec::new();
    let mut kinds = std::collections::BTreeSet::new();
    for (i, s) in specs.iter().enumerate() {
        let port_no = i as u32 + 1;
        let (name, spec) = match s.split_once('=') {
            Some((n, rest)) if !n.contains(':') => (Some(n.to_string()), rest),
            _ => (None, s.as_str()),
        };
        if spec.starts_with("pcap:") {
            let mut p: PcapPort = spec.parse().map_err(|e: SwitchError| e.to_string())?;
            p.port_no = port_no;
            p.name = name.unwrap_or_else(|| format!("p{port_no}"));
            pcap.push(p);
            kinds.insert("pcap");
            continue;
        }
        let (kind, dev) = match spec.split_once(':') {
            Some(("afxdp", dev)) => ("afxdp", dev),
            Some(("afpacket", dev)) => ("afpacket", dev),
            Some((k, _)) => {
                return Err(format!(
                    "port `{s}`: unknown kind `{k}` (afxdp:IF, afpacket:IF or pcap:IN[:OUT])"
                ));
            }
            None => ("afxdp", spec),
        };
        if dev.is_empty() {
            return Err(format!("port `{s}`: no interface"));
        }
        kinds.insert(kind);
        live.push(LivePort {
            port_no,
            name: name.unwrap_or_else(|| dev.to_string()),
            dev: dev.to_string(),
        });
    }
    if kinds.len() > 1 {
        return Err(format!(
            "the ports mix {}: one run takes one kind of port",
            kinds.into_iter().collect::<Vec<_>>().join(" and ")
        ));
    }
    Ok(if live.is_empty() {
        Ports::Pcap(pcap)
    } else {
        Ports::Live {
            afxdp: kinds.contains("afxdp"),
            ports: live,
        }
    })
}

/// `--vlan "NAME tag=N"` / `--vlan "NAME trunks=N,M"`: each port's number
/// and VLANs.
fn port_vlans(specs: &[String], ports: &Ports) -> Result<Vec<(u32, switch::PortVlan)>, String> {
    let named: Vec<(String, u32)> = match ports {
        Ports::Pcap(p) => p.iter().map(|p| (p.name.clone(), p.port_no)).collect(),
        Ports::Live { ports, .. } => ports.iter().map(|p| (p.name.clone(), p.port_no)).collect(),
    };
    let mut out = Vec::new();
    for spec in specs {
        let mut words = spec.split_whitespace();
        let name = words.next().unwrap_or_default();
        let port_no = named
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| *p)
            .ok_or_else(|| {
                let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
                format!(
                    "--vlan `{spec}`: no port `{name}` (the ports: {})",
                    names.join(", ")
                )
            })?;
        let mut vlan = switch::PortVlan::default();
        let vid = |v: &str| {
            v.parse::<u16>()
                .ok()
                .filter(|&v| v < 4096)
                .ok_or_else(|| format!("--vlan `{spec}`: {v} is not a VLAN (0-4095)"))
        };
        for word in words {
            match word.split_once('=') {
                Some(("tag", v)) => vlan.tag = Some(vid(v)?),
                Some(("trunks", v)) => {
                    vlan.trunks = v.split(',').map(vid).collect::<Result<_, _>>()?;
                }
                _ => {
                    return Err(format!(
                        "--vlan `{spec}`: `{word}` is not tag=N or trunks=N,M"
                    ));
                }
            }
        }
        if vlan.tag.is_some() && !vlan.trunks.is_empty() {
            return Err(format!(
                "--vlan `{spec}`: an access port (tag) has no trunks"
            ));
        }
        out.push((port_no, vlan));
    }
    Ok(out)
}

/// What either kind of run did, for printing.
struct Report {
    packets: u64,
    seconds: f64,
    tiers: TierStats,
    megaflows: Vec<String>,
    subtables: usize,
    /// Per packet thread (live runs): id, tiers, cycles per packet.
    pmds: Vec<(usize, TierStats, f64)>,
    /// The kernel fast path's counts (`--offload xdp`).
    offload: Option<switch::OffloadReport>,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    if let Some(q) = &a.query {
        return query(q);
    }
    let ports = ports(&a.ports)?;
    if a.offload.is_some() && !matches!(ports, Ports::Live { afxdp: true, .. }) {
        return Err("--offload xdp needs AF_XDP ports (IF or afxdp:IF)".into());
    }
    let core = Core::new(0x51);
    for (port_no, vlan) in port_vlans(&a.vlans, &ports)? {
        core.shared.with(|of| of.set_port_vlan(port_no, vlan));
    }
    if let Some(path) = &a.flows {
        let text = crate::files::text(path)?;
        let mods =
            openflow::parse_flows_file(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let now = core.now();
        for fm in &mods {
            fm.matcher
                .check_prerequisites()
                .and_then(|()| core.shared.with(|of| of.flow_mod(fm, now)).map(|_| ()))
                .map_err(|e| format!("{}: {}: {e}", path.display(), openflow::format_flow(fm)))?;
        }
    }
    let ctl = a.ctl.clone().unwrap_or_else(ControlSocket::default_path);
    let mut channel = open_channel(&a, &ports, &ctl)?;
    let options = CacheOptions {
        emc: !a.no_emc && !a.no_cache,
        megaflows: !a.no_cache,
    };
    let names: Vec<String>;
    let report = match ports {
        Ports::Pcap(ports) => {
            names = ports.iter().map(|p| p.name.clone()).collect();
            let r = replay(&core, &ports, channel.as_mut(), options).map_err(|e| e.to_string())?;
            if let (Some(ch), Some(d)) = (channel.as_mut(), a.common.duration()) {
                serve_after_replay(&core, ch, d);
            }
            Report {
                packets: r.packets,
                seconds: r.seconds,
                tiers: r.tiers,
                megaflows: r.megaflows,
                subtables: r.subtables,
                pmds: Vec::new(),
                offload: None,
            }
        }
        Ports::Live { ports, afxdp } => {
            names = ports.iter().map(|p| p.name.clone()).collect();
            let c = &a.common;
            let backend = if afxdp {
                // With the fast path in the kernel user space sees only the
                // misses: its thread waits for them in poll() unless
                // polling threads are asked for.
                let wait = a.offload.is_some() && c.pmd_threads.is_none();
                Backend::AfXdp(datapath::program::ProgramOptions {
                    pmd_threads: Some(c.pmd_threads.unwrap_or(1)),
                    pmd: !c.no_pmd && !wait,
                    ..super::datapath::options(c)
                })
            } else {
                Backend::AfPacket
            };
            let stop = crate::signals::stop_on_signals();
            if !c.json {
                let devs: Vec<&str> = ports.iter().map(|p| p.dev.as_str()).collect();
                say!(
                    "sluice switch: {} ({}); Ctrl-C stops",
                    devs.join(", "),
                    if afxdp {
                        format!(
                            "AF_XDP, {} XDP{}",
                            c.xdp_mode().name(),
                            if a.offload.is_some() {
                                ", megaflows offloaded to XDP"
                            } else {
                                ""
                            }
                        )
                    } else {
                        "AF_PACKET".to_string()
                    }
                );
                if let Some(ch) = &channel {
                    for e in ch.listening() {
                        say!("sluice switch: OpenFlow clients on {e}");
                    }
                }
            }
            let mut control = ControlSocket::bind(&ctl).map_err(|e| e.to_string())?;
            let live = LiveOptions {
                backend,
                cache: options,
                duration: c.duration(),
                offload: a.offload.is_some(),
            };
            let r = switch::run_live(
                &core,
                &ports,
                &live,
                channel.as_mut(),
                Some(&mut control),
                stop,
            )
            .map_err(|e| e.to_string())?;
            let mut tiers = TierStats::default();
            for p in &r.pmds {
                tiers += p.tiers;
            }
            Report {
                packets: tiers.packets,
                seconds: r.seconds,
                tiers,
                megaflows: r.pmds.iter().flat_map(|p| p.megaflows.clone()).collect(),
                subtables: r.pmds.iter().map(|p| p.subtables).max().unwrap_or(0),
                pmds: r
                    .pmds
                    .iter()
                    .map(|p| {
                        (
                            p.id,
                            p.tiers,
                            p.cycles as f64 / p.tiers.packets.max(1) as f64,
                        )
                    })
                    .collect(),
                offload: r.offload,
            }
        }
    };
    print_report(&core, &report, &names, &a)
}

/// The OpenFlow channel of the run: `--of`, else for live ports a
/// `punix:` socket beside the control socket (only root, or the user who
/// runs the switch, may connect), else none.
fn open_channel(a: &Args, ports: &Ports, ctl: &Path) -> Result<Option<Channel>, String> {
    let (endpoints, hint) = if !a.of.is_empty() {
        (a.of.clone(), "")
    } else if matches!(ports, Ports::Live { .. }) {
        let mgmt = Endpoint::ListenUnix(ctl.with_extension("mgmt"));
        (
            vec![mgmt],
            " (give --of, or --ctl PATH to move both sockets)",
        )
    } else {
        return Ok(None);
    };
    let tls = match (&a.private_key, &a.certificate, &a.ca_cert) {
        (Some(k), Some(c), Some(ca)) => Some(TlsFiles {
            private_key: k.clone(),
            certificate: c.clone(),
            ca_cert: ca.clone(),
        }),
        (None, None, None) => None,
        _ => return Err("TLS needs all of --private-key, --certificate and --ca-cert".into()),
    };
    let options = ChannelOptions {
        tls,
        log: true,
        ..ChannelOptions::default()
    };
    Channel::open_with(&endpoints, &options)
        .map(Some)
        .map_err(|e| format!("OpenFlow channel: {e}{hint}"))
}

/// After a replay with `--duration`: the channel is served until that
/// much time has passed or a signal comes, so that clients can look at
/// (and change) the switch the captures went through.
fn serve_after_replay(core: &Core, ch: &mut Channel, d: std::time::Duration) {
    let stop = crate::signals::stop_on_signals();
    let start = std::time::Instant::now();
    for e in ch.listening() {
        say!(
            "sluice switch: captures done; OpenFlow clients on {e} for {:.0} s (Ctrl-C stops)",
            d.as_secs_f64()
        );
    }
    let mut tx = Nowhere;
    while start.elapsed() < d && !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if !ch.poll(core, &mut tx) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// Packet-outs once the capture ports are closed: no port takes them.
struct Nowhere;

impl switch::Transmit for Nowhere {
    fn transmit(&mut self, _port: u32, _frame: &[u8]) -> bool {
        false
    }
}

fn print_report(
    core: &Core,
    report: &Report,
    names: &[String],
    a: &Args,
) -> Result<ExitCode, String> {
    let flows = switch::dump_flows(core);
    let port_stats = core.port_stats(openflow::port::ANY);
    let t = report.tiers;
    if a.common.json {
        let j = serde_json::json!({
            "packets": report.packets,
            "seconds": report.seconds,
            "emc_hits": t.emc_hits,
            "megaflow_hits": t.megaflow_hits,
            "upcalls": t.upcalls,
            "subtable_probes": t.subtable_probes,
            "megaflows": report.megaflows.len(),
            "subtables": report.subtables,
            "megaflows_revalidated_away": t.megaflows_revalidated_away,
            "megaflows_expired": t.megaflows_expired,
            "megaflows_offloaded": t.megaflows_offloaded,
            "offload_hits": t.offload_hits,
            "offload": report.offload.as_ref().map(|o| serde_json::json!({
                "hits": o.hits, "misses": o.misses,
                "megaflows": o.megaflows, "masks": o.masks,
            })),
            "pmds": report.pmds.iter().map(|(id, t, cpp)| serde_json::json!({
                "pmd": id, "packets": t.packets, "emc_hits": t.emc_hits,
                "megaflow_hits": t.megaflow_hits, "upcalls": t.upcalls,
                "offload_hits": t.offload_hits,
                "cycles_per_packet": cpp,
            })).collect::<Vec<_>>(),
            "ports": port_stats.iter().zip(names).map(|(s, name)| serde_json::json!({
                "port": s.port_no, "name": name,
                "rx_packets": s.rx_packets, "rx_bytes": s.rx_bytes,
                "tx_packets": s.tx_packets, "tx_bytes": s.tx_bytes, "tx_dropped": s.tx_dropped,
            })).collect::<Vec<_>>(),
            "flows": flows.iter().map(openflow::format_flow_stats).collect::<Vec<_>>(),
            "datapath_flows": report.megaflows,
        });
        out!("{j:#}");
        return Ok(ExitCode::SUCCESS);
    }
    let pct = |n: u64| 100.0 * n as f64 / report.packets.max(1) as f64;
    out!(
        "switch: {} ports, {} packets in {:.3} s",
        names.len(),
        report.packets,
        report.seconds
    );
    out!(
        "  emc hits {} ({:.1}%), megaflow hits {} ({:.1}%), upcalls {} ({:.1}%)",
        t.emc_hits,
        pct(t.emc_hits),
        t.megaflow_hits,
        pct(t.megaflow_hits),
        t.upcalls,
        pct(t.upcalls)
    );
    out!(
        "  megaflows {} in {} subtables, {} revalidated away, {} expired",
        report.megaflows.len(),
        report.subtables,
        t.megaflows_revalidated_away,
        t.megaflows_expired
    );
    if let Some(o) = &report.offload {
        out!(
            "  xdp fast path: {} hits in the kernel, {} misses sent up; {} megaflows offloaded ({} in the kernel at the end, {} masks)",
            o.hits,
            o.misses,
            t.megaflows_offloaded,
            o.megaflows,
            o.masks
        );
    }
    for (id, t, cpp) in &report.pmds {
        out!(
            "  pmd {id}: {} packets, emc hits {}, megaflow hits {}, upcalls {}, {cpp:.0} cycles/packet",
            t.packets,
            t.emc_hits,
            t.megaflow_hits,
            t.upcalls
        );
    }
    for (s, name) in port_stats.iter().zip(names) {
        out!(
            "  port {} ({name}): rx {} packets {} bytes, tx {} packets {} bytes, tx dropped {}",
            s.port_no,
            s.rx_packets,
            s.rx_bytes,
            s.tx_packets,
            s.tx_bytes,
            s.tx_dropped
        );
    }
    if a.dump_flows {
        for f in &flows {
            out!(" {}", openflow::format_flow_stats(f));
        }
    }
    if a.dump_datapath {
        for m in &report.megaflows {
            out!("{m}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `sluice switch stats|dump-flows`: asks a running switch.
fn query(q: &Query) -> Result<ExitCode, String> {
    let (args, command) = match q {
        Query::Stats(a) => (a, "stats"),
        Query::DumpFlows(a) => (a, "dump-flows"),
    };
    let path = args.ctl.clone().unwrap_or_else(ControlSocket::default_path);
    let v = ControlSocket::request(&path, command).map_err(|e| e.to_string())?;
    if args.json {
        out!("{v:#}");
        return Ok(ExitCode::SUCCESS);
    }
    let empty = Vec::new();
    let list = |k: &str| v[k].as_array().unwrap_or(&empty).clone();
    match q {
        Query::Stats(_) => {
            for p in list("pmds") {
                let n = p["packets"].as_u64().unwrap_or(0);
                let pct = |k: &str| {
                    let x = p[k].as_u64().unwrap_or(0);
                    format!("{x} ({:.1}%)", 100.0 * x as f64 / n.max(1) as f64)
                };
                out!("pmd thread {}:", p["pmd"]);
                out!("  packets:        {n}");
                out!("  emc hits:       {}", pct("emc_hits"));
                out!("  megaflow hits:  {}", pct("megaflow_hits"));
                out!("  upcalls:        {}", pct("upcalls"));
                let offloaded = p["megaflows_offloaded"].as_u64().unwrap_or(0);
                if offloaded > 0 {
                    out!(
                        "  offload hits:   {} (in the kernel, {offloaded} megaflows offloaded)",
                        p["offload_hits"]
                    );
                }
                out!(
                    "  megaflows:      {} in {} subtables, {:.2} subtables probed per lookup",
                    p["megaflows_added"].as_u64().unwrap_or(0)
                        - p["megaflows_revalidated_away"].as_u64().unwrap_or(0)
                        - p["megaflows_expired"].as_u64().unwrap_or(0),
                    p["subtables"],
                    p["subtable_probes"].as_u64().unwrap_or(0) as f64
                        / (n - p["emc_hits"].as_u64().unwrap_or(0)).max(1) as f64
                );
                out!(
                    "  cycles/packet:  {:.1}",
                    p["cycles_per_packet"].as_f64().unwrap_or(0.0)
                );
            }
            for p in list("ports") {
                out!(
                    "port {} ({}): rx {} packets {} bytes, tx {} packets {} bytes, tx dropped {}",
                    p["port"],
                    p["name"].as_str().unwrap_or(""),
                    p["rx_packets"],
                    p["rx_bytes"],
                    p["tx_packets"],
                    p["tx_bytes"],
                    p["tx_dropped"]
                );
            }
        }
        Query::DumpFlows(_) => {
            for f in list("flows") {
                out!("{}", f["flow"].as_str().unwrap_or(""));
            }
            if let Some(late) = v["late_pmds"].as_array().filter(|l| !l.is_empty()) {
                say!(
                    "sluice switch: packet threads {late:?} did not answer in time: their flows are from an earlier dump"
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
