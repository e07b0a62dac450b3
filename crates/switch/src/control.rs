//! The control socket of a running switch, as `ovs-appctl` talks to
//! `ovs-vswitchd`: a unix socket where a client writes one command line
//! and reads one JSON document back.
//!
//! - `stats`: per packet thread its tiers (EMC hits, megaflow hits,
//!   upcalls), megaflows, subtables and TSC cycles per packet (as
//!   `dpif-netdev/pmd-perf-show`), and the ports' counters;
//! - `dump-flows`: every thread's megaflows (as `dpctl/dump-flows`), asked
//!   of the threads and answered by each after its next batch or idle poll;
//! - `dump-of-flows`: the OpenFlow flows (as `ovs-ofctl dump-flows`).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::channel::ChannelError;
use crate::channel::unix::SocketFile;
use crate::core::Core;
use crate::error::SwitchError;

/// How long a `dump-flows` waits for the packet threads' answers.
const DUMP_WAIT: Duration = Duration::from_millis(500);

/// How long a client may take to send its command, or a switch to answer.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// The listening control socket: a socket file made mode 0600 (only the
/// user running the switch, and root, may ask it), a stale one replaced
/// only if it is a socket, removed at the end (as `punix:` sockets are).
pub struct ControlSocket {
    socket: SocketFile,
}

impl ControlSocket {
    /// Where a switch listens unless told: /run/sluice for root, else the
    /// user's runtime directory (`$XDG_RUNTIME_DIR/sluice`), else the
    /// temporary directory with the user's id. The switch's OpenFlow socket
    /// goes beside it (`.mgmt`).
    pub fn default_path() -> PathBuf {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        if uid == 0 {
            return PathBuf::from("/run/sluice/switch.ctl");
        }
        match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
            Some(dir) if dir.is_absolute() && dir.is_dir() => dir.join("sluice/switch.ctl"),
            _ => std::env::temp_dir().join(format!("sluice-switch-{uid}.ctl")),
        }
    }

    /// Listens at `path`; a socket file left by a switch that is gone is
    /// replaced, one that a running switch answers on is an error, and so
    /// is anything else there (a file, a symbolic link).
    pub fn bind(path: &Path) -> Result<ControlSocket, SwitchError> {
        let path = path.to_path_buf();
        match SocketFile::bind(&path) {
            Ok(socket) => Ok(ControlSocket { socket }),
            Err(ChannelError::InUse(_)) => Err(SwitchError::ControlInUse(path)),
            Err(ChannelError::Io { source, .. }) => Err(SwitchError::ControlIo { path, source }),
            Err(ChannelError::NotASocket(_)) => Err(SwitchError::ControlNotASocket(path)),
            Err(e) => Err(SwitchError::ControlPath(e)),
        }
    }

    pub fn path(&self) -> &Path {
        &self.socket.path
    }

    /// Sends `command` to the switch listening at `path`; its answer.
    pub fn request(path: &Path, command: &str) -> Result<Value, SwitchError> {
        let what = |source| SwitchError::ControlIo {
            path: path.to_path_buf(),
            source,
        };
        let mut stream =
            UnixStream::connect(path).map_err(|source| SwitchError::ControlNoSwitch {
                path: path.to_path_buf(),
                source,
            })?;
        stream.set_read_timeout(Some(IO_TIMEOUT)).map_err(what)?;
        stream
            .write_all(format!("{command}\n").as_bytes())
            .map_err(what)?;
        let mut text = String::new();
        stream.read_to_string(&mut text).map_err(what)?;
        let v: Value =
            serde_json::from_str(&text).map_err(|source| SwitchError::ControlAnswer {
                path: path.to_path_buf(),
                source,
            })?;
        match v.get("error").and_then(Value::as_str) {
            Some(e) => Err(SwitchError::ControlRefused(e.to_string())),
            None => Ok(v),
        }
    }

    /// Answers the clients waiting; whether there were any.
    pub fn poll(&mut self, core: &Core) -> bool {
        let mut any = false;
        while let Ok((stream, _)) = self.socket.listener.accept() {
            any = true;
            // A client that goes away early loses its answer, nothing else.
            let _ = serve(stream, core);
        }
        any
    }
}

fn serve(stream: UnixStream, core: &Core) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut line = String::new();
    BufReader::new((&stream).take(256)).read_line(&mut line)?;
    let answer = answer(core, line.trim());
    (&stream).write_all(format!("{answer}\n").as_bytes())
}

/// The answer to one command.
pub fn answer(core: &Core, command: &str) -> Value {
    match command {
        "stats" => stats(core),
        "dump-flows" => dump_flows(core),
        "dump-of-flows" => json!({
            "flows": crate::agent::dump_flows(core)
                .iter()
                .map(openflow::format_flow_stats)
                .collect::<Vec<_>>(),
        }),
        other => json!({
            "error": format!("unknown command `{other}` (stats, dump-flows, dump-of-flows)"),
        }),
    }
}

fn stats(core: &Core) -> Value {
    let pmds: Vec<Value> = core
        .pmd_stats()
        .iter()
        .map(|p| {
            let t = &p.tiers;
            json!({
                "pmd": p.id,
                "packets": t.packets,
                "emc_hits": t.emc_hits,
                "megaflow_hits": t.megaflow_hits,
                "upcalls": t.upcalls,
                "subtable_probes": t.subtable_probes,
                "megaflows_added": t.megaflows_added,
                "megaflows_revalidated_away": t.megaflows_revalidated_away,
                "megaflows_expired": t.megaflows_expired,
                "megaflows_offloaded": t.megaflows_offloaded,
                "offload_hits": t.offload_hits,
                "subtables": p.subtables,
                "emc_entries": p.emc_entries,
                "cycles": p.cycles,
                "cycles_per_packet": p.cycles as f64 / t.packets.max(1) as f64,
            })
        })
        .collect();
    let names = core.ports();
    let ports: Vec<Value> = core
        .port_stats(openflow::port::ANY)
        .iter()
        .map(|s| {
            let name = names
                .iter()
                .find(|p| p.port_no == s.port_no)
                .map_or("", |p| p.name.as_str());
            json!({
                "port": s.port_no, "name": name,
                "rx_packets": s.rx_packets, "rx_bytes": s.rx_bytes,
                "tx_packets": s.tx_packets, "tx_bytes": s.tx_bytes,
                "tx_dropped": s.tx_dropped,
            })
        })
        .collect();
    json!({ "pmds": pmds, "ports": ports })
}

fn dump_flows(core: &Core) -> Value {
    let epoch = core.request_dump();
    let t0 = Instant::now();
    let mut pmds = core.pmd_stats();
    while pmds.iter().any(|p| p.dump_epoch < epoch) && t0.elapsed() < DUMP_WAIT {
        std::thread::sleep(Duration::from_millis(2));
        pmds = core.pmd_stats();
    }
    let late: Vec<usize> = pmds
        .iter()
        .filter(|p| p.dump_epoch < epoch)
        .map(|p| p.id)
        .collect();
    json!({
        "flows": pmds.iter().flat_map(|p| p.megaflows.iter().map(move |m| json!({
            "pmd": p.id, "flow": m,
        }))).collect::<Vec<_>>(),
        // Threads that did not answer in time: their megaflows are those
        // of an earlier dump.
        "late_pmds": late,
    })
}
