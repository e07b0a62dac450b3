//! The README's main job: the DDoS filter example over generated traffic,
//! run in the VM, with the report `sluice run` prints.

use std::process::ExitCode;

use engine::{HookSpec, MapUpdate, RunSpec, SourceSpec};

/// Run the DDoS filter example over generated traffic (no root needed)
#[derive(clap::Args)]
pub struct Args {
    /// Print JSON
    #[arg(long)]
    json: bool,
}

/// The traffic: normal clients, a blocked prefix, one source over its rate
/// and clients of a protected port.
/// Over 0.6 s: 200 clients at 500 packets/s each, the blocked prefix,
/// one source at 25,000 packets/s, and clients of port 53.
const TRAFFIC: [&str; 4] = [
    "udp,flows=200,count=60000,rate=100000,src=10.1.0.0/16,dport=80",
    "udp,flows=20,count=20000,rate=33334,src=10.66.0.0/16,dport=80",
    "tcp,flows=1,count=15000,rate=25000,src=10.9.9.9/32,dport=443",
    "udp,flows=50,count=5000,rate=8334,src=10.2.0.0/16,dport=53",
];

const UPDATES: [[&str; 3]; 2] = [
    ["blocklist_v4", "10.66.0.0/16", "0"],
    ["protected_ports", "53", "1"],
];

pub fn run(a: Args) -> Result<ExitCode, String> {
    let object = programs::object("xdp_ddos").ok_or("the xdp_ddos example was not built")?;
    let mut hook = HookSpec::from_bytes("target/bpf/xdp_ddos.o", object);
    hook.contents.map_update = UPDATES
        .iter()
        .map(|[map, key, value]| MapUpdate {
            map: map.to_string(),
            key: key.to_string(),
            value: value.to_string(),
        })
        .collect();
    hook.settings.set = vec!["rate_pps=1000".into(), "burst=100".into()];
    let spec = RunSpec {
        // One thread per core, as `sluice run` runs by default.
        threads: 0,
        ifindex: Some(1),
        map_entries: 5,
        ..RunSpec::new(hook, SourceSpec::generated(TRAFFIC))
    };
    if !a.json {
        out!(
            "sluice demo: the DDoS filter (programs/xdp_ddos.c) in the sluice VM, over 100,000 generated packets:"
        );
        out!(
            "  60,000 from 200 clients in 10.1.0.0/16 (500 packets/s each), 20,000 from the blocked 10.66.0.0/16,"
        );
        out!(
            "  15,000 from one source at 25,000 packets/s (the limit is 1,000), 5,000 UDP to the protected port 53."
        );
        out!(
            "drop_stats counts by reason: 0 passed, 1 blocked, 2 protected port, 3 over the rate, 4 not IP."
        );
        out!("The same with the command line:");
        let mut cmd = String::from("  sluice run target/bpf/xdp_ddos.o");
        for g in TRAFFIC {
            cmd.push_str(&format!(" \\\n      --gen {g}"));
        }
        for [m, k, v] in UPDATES {
            cmd.push_str(&format!(" \\\n      --map-update {m} {k} {v}"));
        }
        cmd.push_str(" --set rate_pps=1000 --set burst=100");
        out!("{cmd}\n");
    }
    // Like `sluice run`: verified first, then replayed without checks.
    crate::cmd::run::replay(&spec, a.json, None, None)
}
