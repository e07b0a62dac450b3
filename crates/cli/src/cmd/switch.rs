//! `sluice switch`: the OpenFlow 1.3 switch over capture ports (no root
//! needed): flows from an `ovs-ofctl add-flows` file and from OpenFlow
//! connections, the captures replayed through Open vSwitch's cache
//! hierarchy, then what it did. The subsystem is the `switch` crate
//! (docs/switch.md).

use std::path::PathBuf;
use std::process::ExitCode;

use switch::channel::{Channel, Endpoint};
use switch::core::Core;
use switch::dpif::CacheOptions;
use switch::replay::{PcapPort, replay};

/// An OpenFlow 1.3 switch with Open vSwitch's exact-match and megaflow caches, over capture ports (docs/switch.md)
#[derive(clap::Args)]
pub struct Args {
    /// A port, numbered from 1 in order: [NAME=]pcap:IN[:OUT] replays IN as the frames arriving on it and writes the frames sent out of it to OUT
    #[arg(long = "port", value_name = "SPEC", required = true)]
    ports: Vec<String>,
    /// Flows to start with, in `ovs-ofctl add-flows` syntax (one a line)
    #[arg(long, value_name = "FILE")]
    flows: Option<PathBuf>,
    /// Listen for OpenFlow clients (ptcp:PORT[:IP], loopback by default) or connect to a controller (tcp:IP[:PORT])
    #[arg(long = "of", value_name = "ENDPOINT")]
    of: Vec<Endpoint>,
    /// Without the exact-match cache (megaflows only)
    #[arg(long)]
    no_emc: bool,
    /// Without any cache: every packet goes through the OpenFlow tables
    #[arg(long)]
    no_cache: bool,
    /// Print the OpenFlow flows at the end, as ovs-ofctl dump-flows
    #[arg(long)]
    dump_flows: bool,
    /// Print the datapath's megaflows at the end, as ovs-appctl dpctl/dump-flows
    #[arg(long)]
    dump_datapath: bool,
    /// JSON output
    #[arg(long)]
    json: bool,
}

fn ports(specs: &[String]) -> Result<Vec<PcapPort>, String> {
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (name, spec) = match s.split_once('=') {
                Some((n, rest)) if !n.contains(':') => (n.to_string(), rest),
                _ => (format!("p{}", i + 1), s.as_str()),
            };
            let mut p: PcapPort = spec.parse()?;
            p.port_no = i as u32 + 1;
            p.name = name;
            Ok(p)
        })
        .collect()
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let ports = ports(&a.ports)?;
    let core = Core::new(0x51);
    if let Some(path) = &a.flows {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
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
    let mut channel = if a.of.is_empty() {
        None
    } else {
        Some(Channel::open(&a.of).map_err(|e| format!("OpenFlow channel: {e}"))?)
    };
    let options = CacheOptions {
        emc: !a.no_emc && !a.no_cache,
        megaflows: !a.no_cache,
    };
    let report = replay(&core, &ports, channel.as_mut(), options)?;
    let flows = switch::agent::dump_flows(&core);
    let port_stats = core.port_stats(openflow::port::ANY);
    if a.json {
        let t = report.tiers;
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
            "ports": port_stats.iter().zip(&ports).map(|(s, p)| serde_json::json!({
                "port": s.port_no, "name": p.name,
                "rx_packets": s.rx_packets, "rx_bytes": s.rx_bytes,
                "tx_packets": s.tx_packets, "tx_bytes": s.tx_bytes, "tx_dropped": s.tx_dropped,
            })).collect::<Vec<_>>(),
            "flows": flows.iter().map(openflow::format_flow_stats).collect::<Vec<_>>(),
            "datapath_flows": report.megaflows,
        });
        println!("{j:#}");
        return Ok(ExitCode::SUCCESS);
    }
    let t = report.tiers;
    let pct = |n: u64| 100.0 * n as f64 / report.packets.max(1) as f64;
    println!(
        "switch: {} ports, {} packets in {:.3} s",
        ports.len(),
        report.packets,
        report.seconds
    );
    println!(
        "  emc hits {} ({:.1}%), megaflow hits {} ({:.1}%), upcalls {} ({:.1}%)",
        t.emc_hits,
        pct(t.emc_hits),
        t.megaflow_hits,
        pct(t.megaflow_hits),
        t.upcalls,
        pct(t.upcalls)
    );
    println!(
        "  megaflows {} in {} subtables, {} revalidated away, {} expired",
        report.megaflows.len(),
        report.subtables,
        t.megaflows_revalidated_away,
        t.megaflows_expired
    );
    for (s, p) in port_stats.iter().zip(&ports) {
        println!(
            "  port {} ({}): rx {} packets {} bytes, tx {} packets {} bytes, tx dropped {}",
            s.port_no, p.name, s.rx_packets, s.rx_bytes, s.tx_packets, s.tx_bytes, s.tx_dropped
        );
    }
    if a.dump_flows {
        for f in &flows {
            println!(" {}", openflow::format_flow_stats(f));
        }
    }
    if a.dump_datapath {
        for m in &report.megaflows {
            println!("{m}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
