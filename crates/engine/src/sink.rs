//! [`SinkSpec`]: where the packets of a route (pass, tx, redirect, drop)
//! go: a pcap or pcapng file, or out of an interface; and what was sent
//! out of each interface.

use std::path::PathBuf;
use std::sync::Arc;

use pipeline::{InterfaceSink, PcapWriter, PortCounts, Route, Sinks};
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
}

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

/// Opens the outputs `specs` name, for a replay of the caller's own
/// (`pipeline::replay` over any [`PacketHook`](runtime::PacketHook)).
pub fn open_sinks(specs: &[SinkSpec]) -> Result<Sinks, Error> {
    Ok(open(specs)?.0)
}

/// Opens the outputs `specs` name: files first (in route order), then
/// interfaces.
pub(crate) fn open(specs: &[SinkSpec]) -> Result<(Sinks, Vec<SentPort>), Error> {
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
    Ok((sinks, ports))
}
