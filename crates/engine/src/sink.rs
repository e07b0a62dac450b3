//! [`SinkSpec`]: where the packets of a route (pass, tx, redirect, drop)
//! go: a pcap or pcapng file, out of an interface, or kept in memory
//! ([`Output`]); and what was sent out of each interface.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use pipeline::{Collect, Collected, InterfaceSink, PcapWriter, PortCounts, Route, Sinks};
use serde::{Deserialize, Serialize};

use crate::Error;

#[derive(Serialize, Deserialize)]
#[serde(remote = "Route", rename_all = "lowercase")]
enum RouteDef {
    Pass,
    Tx,
    Redirect,
    Drop,
}

/// Where packets go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// A capture file: pcap, pcapng for a `.pcapng` name, `-` for
    /// standard output.
    File(PathBuf),
    /// Sent out of an interface (AF_PACKET).
    Interface(String),
    /// Kept in memory, in the order the run gave them: the report's
    /// [`Output`] (a front end's own use of the packets, not a file).
    Memory,
}

/// The packets of the routes a run kept in memory ([`Target::Memory`]):
/// `(timestamp_ns, frame)` per route name (`pass`, `tx`, `redirect`,
/// `drop`, as [`route_name`]), each in the order the run gave them.
pub type Output = BTreeMap<&'static str, Vec<(u64, Vec<u8>)>>;

/// The packets of one route, sent to one target (a route with several
/// specs goes to all of them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkSpec {
    #[serde(with = "RouteDef")]
    pub route: Route,
    pub to: Target,
}

/// The interface a route is sent out of, and what was sent out of it.
pub(crate) struct SentPort {
    pub route: Route,
    pub iface: String,
    pub counts: Arc<PortCounts>,
}

/// The lower-case name of a route: `pass`, `tx`, `redirect`, `drop`.
pub fn route_name(route: Route) -> &'static str {
    match route {
        Route::Pass => "pass",
        Route::Tx => "tx",
        Route::Redirect => "redirect",
        Route::Drop => "drop",
    }
}

/// The outputs of a run, open: the sinks, the interfaces sent to, the
/// routes kept in memory.
pub(crate) struct Opened {
    pub sinks: Sinks,
    pub ports: Vec<SentPort>,
    pub kept: Vec<(Route, Collected)>,
}

impl Opened {
    /// What the routes kept in memory took (after the replay).
    pub(crate) fn output(kept: &[(Route, Collected)]) -> Output {
        let mut out = Output::new();
        for (route, packets) in kept {
            let mut packets = packets.lock().unwrap_or_else(|e| e.into_inner());
            out.entry(route_name(*route))
                .or_default()
                .append(&mut packets);
        }
        out
    }
}

/// Opens the outputs `specs` name, for a replay of the caller's own
/// (`pipeline::replay` over any [`PacketHook`](runtime::PacketHook)).
pub fn open_sinks(specs: &[SinkSpec]) -> Result<Sinks, Error> {
    Ok(open(specs)?.sinks)
}

/// Opens the outputs `specs` name: files first (in route order), then
/// interfaces, then memory (once per route).
pub(crate) fn open(specs: &[SinkSpec]) -> Result<Opened, Error> {
    let stdout = specs
        .iter()
        .filter(|s| matches!(&s.to, Target::File(p) if capture::is_stdout(p)))
        .count();
    if stdout > 1 {
        return Err(Error::StdoutTwice);
    }
    let mut sinks = Sinks::new();
    for route in Route::ALL {
        for spec in specs.iter().filter(|s| s.route == route) {
            if let Target::File(p) = &spec.to {
                sinks.add(&[route], Box::new(PcapWriter::create(p)?));
            }
        }
    }
    let mut ports = Vec::new();
    for route in Route::ALL {
        for spec in specs.iter().filter(|s| s.route == route) {
            if let Target::Interface(name) = &spec.to {
                let port =
                    InterfaceSink::open(name).map_err(|cause| Error::Send { route, cause })?;
                ports.push(SentPort {
                    route,
                    iface: port.interface().name.clone(),
                    counts: port.counts(),
                });
                sinks.add(&[route], Box::new(port));
            }
        }
    }
    let mut kept = Vec::new();
    for route in Route::ALL {
        if specs
            .iter()
            .any(|s| s.route == route && s.to == Target::Memory)
        {
            let sink = Collect::default();
            kept.push((route, sink.packets.clone()));
            sinks.add(&[route], Box::new(sink));
        }
    }
    Ok(Opened { sinks, ports, kept })
}
