//! The switch on live interfaces: packet threads receive on the ports and
//! forward through their own caches ([`Pmd`]), while the calling thread
//! serves the OpenFlow channel and runs the timers (flow timeouts).
//!
//! Two ways to reach the ports: AF_XDP, through sluice's user-space
//! datapath (a polling thread per queue of every port, the frames the
//! switch sends copied into the egress port's UMEM), and AF_PACKET (a
//! thread per port receiving with `recvmmsg` and sending with
//! `sendmmsg`), which works on any interface. Packets the controller
//! sends (PACKET_OUT) leave through AF_PACKET sockets either way.
//!
//! With `offload`, AF_XDP ports get the kernel fast path
//! ([`crate::xdp_offload`]) in front of their sockets, and the packet threads'
//! megaflows are mirrored into it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use datapath::program::{self, ProgramOptions, ProgramSummary};
use openflow::port_bits;
use pipeline::{Batch, Interface, Live, Sink};

use crate::channel::Channel;
use crate::control::ControlSocket;
use crate::core::{Core, PmdStats, Transmit};
use crate::dpif::CacheOptions;
use crate::error::SwitchError;
use crate::pmd::{Pmd, PortRef};
use crate::xdp_offload::{OffloadReport, XdpOffload};

/// How the switch reaches its ports.
#[derive(Clone, Debug)]
pub enum Backend {
    /// AF_PACKET sockets, a thread per port.
    AfPacket,
    /// The AF_XDP datapath with these options (their `ports` are the
    /// switch's).
    AfXdp(ProgramOptions),
}

/// A port on an interface.
#[derive(Clone, Debug)]
pub struct LivePort {
    pub port_no: u32,
    /// The OpenFlow name.
    pub name: String,
    /// The interface.
    pub dev: String,
}

/// How a live switch runs.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    pub backend: Backend,
    pub cache: CacheOptions,
    /// Until then (else until the stop flag).
    pub duration: Option<Duration>,
    /// Megaflows forwarded in the kernel by an XDP program (AF_XDP only).
    pub offload: bool,
}

/// What a live run did.
pub struct LiveReport {
    pub seconds: f64,
    /// Each packet thread's datapath at the end.
    pub pmds: Vec<PmdStats>,
    /// The AF_XDP datapath's own counts (AF_XDP ports only).
    pub xdp: Option<ProgramSummary>,
    /// The kernel fast path's counts (with `offload`).
    pub offload: Option<OffloadReport>,
}

/// Runs the switch on `ports` until `stop` is set or `duration` is over
/// (then sets `stop` itself, for the packet threads).
pub fn run_live(
    core: &Core,
    ports: &[LivePort],
    options: &LiveOptions,
    mut channel: Option<&mut Channel>,
    control: Option<&mut ControlSocket>,
    stop: &'static AtomicBool,
) -> Result<LiveReport, SwitchError> {
    let start = Instant::now();
    let (cache, duration) = (options.cache, options.duration);
    let mut refs = Vec::new();
    for p in ports {
        let iface =
            Interface::by_name(&p.dev).map_err(|e| SwitchError::Interface(e.to_string()))?;
        core.add_port(crate::link::interface_port(&p.dev, p.port_no, &p.name));
        refs.push(PortRef {
            ifindex: iface.index,
            port_no: p.port_no,
        });
    }
    let offload = match (&options.backend, options.offload) {
        (Backend::AfXdp(_), true) => Some(XdpOffload::load(&refs)?),
        (Backend::AfPacket, true) => {
            return Err(SwitchError::OffloadNeedsAfXdp);
        }
        (_, false) => None,
    };
    let lower = offload.as_ref().map(XdpOffload::flows);
    let mut control_tx = Senders::open(ports)?;
    let finished = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let workers: Vec<_> = match &options.backend {
            Backend::AfPacket => {
                // Sockets opened here, before any thread runs: a frame sent
                // once this returns is received.
                let mut threads = Vec::new();
                for (i, r) in refs.iter().enumerate() {
                    let live =
                        Live::open_index(r.ifindex, Some(stop)).map_err(SwitchError::Receive)?;
                    let tx = Senders::open(ports)?;
                    let pmd = Pmd::new(core, i, refs.clone(), cache, None);
                    let (port_no, finished) = (r.port_no, &finished);
                    threads.push(s.spawn(move || {
                        let r = afpacket_loop(pmd, port_no, live, tx, stop);
                        finished.store(true, Ordering::Relaxed);
                        r.map(|()| None)
                    }));
                }
                threads
            }
            Backend::AfXdp(opts) => {
                let opts = ProgramOptions {
                    ports: ports.iter().map(|p| p.dev.clone()).collect(),
                    duration,
                    own_program: offload.as_ref().map(XdpOffload::own_program),
                    ..opts.clone()
                };
                let mut pmd =
                    Pmd::new(core, 0, refs.clone(), cache, lower.clone()).spinning(opts.pmd);
                let finished = &finished;
                vec![s.spawn(move || {
                    let r = program::run(&mut pmd, &opts, stop, |e| {
                        if let program::Event::PortGone(g) = e {
                            eprintln!("sluice switch: {g}");
                        }
                    });
                    finished.store(true, Ordering::Relaxed);
                    r.map(Some).map_err(SwitchError::Datapath)
                })]
            }
        };
        let services = Services {
            ports,
            channel: channel.as_deref_mut(),
            control,
            tx: &mut control_tx,
            offload: offload.as_ref(),
        };
        control_loop(core, services, duration, stop, &finished);
        // The packet threads end with the run.
        stop.store(true, Ordering::Relaxed);
        let mut xdp = None;
        for w in workers {
            match w.join() {
                Ok(Ok(summary)) => xdp = xdp.or(summary),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(SwitchError::PacketThreadPanicked),
            }
        }
        Ok(xdp)
    })?;
    // What the threads counted last, in the tables and flow-removed.
    if let Some(o) = &offload {
        o.pull_ports(core);
    }
    let removed = core.shared.with(|of| of.expire(core.now()));
    core.flows_removed(&removed);
    if let Some(ch) = channel {
        ch.poll(core, &mut control_tx);
    }
    Ok(LiveReport {
        seconds: start.elapsed().as_secs_f64(),
        pmds: core.pmd_stats(),
        xdp: result,
        offload: offload.as_ref().map(XdpOffload::report),
    })
}

/// What the control thread serves.
struct Services<'a> {
    /// Their links' state read every second.
    ports: &'a [LivePort],
    channel: Option<&'a mut Channel>,
    control: Option<&'a mut ControlSocket>,
    /// Sends the controllers' packet-outs.
    tx: &'a mut Senders,
    /// Its port counters pulled every second.
    offload: Option<&'a XdpOffload>,
}

/// The OpenFlow channel, the control socket and the flow timeouts, until
/// the run ends.
fn control_loop(
    core: &Core,
    mut s: Services<'_>,
    duration: Option<Duration>,
    stop: &AtomicBool,
    finished: &AtomicBool,
) {
    let start = Instant::now();
    let mut last_expire = Instant::now();
    while !stop.load(Ordering::Relaxed) && !finished.load(Ordering::Relaxed) {
        if duration.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
        let mut busy = match s.channel.as_deref_mut() {
            Some(ch) => ch.poll(core, s.tx),
            None => false,
        };
        s.tx.flush();
        if let Some(c) = s.control.as_deref_mut() {
            busy |= c.poll(core);
        }
        if last_expire.elapsed() >= Duration::from_secs(1) {
            last_expire = Instant::now();
            if let Some(o) = s.offload {
                o.pull_ports(core);
            }
            let removed = core.shared.with(|of| of.expire(core.now()));
            core.flows_removed(&removed);
            for p in s.ports {
                if let Some((_, state)) = crate::link::interface_state(&p.dev) {
                    core.set_link(p.port_no, state & port_bits::STATE_LINK_DOWN == 0);
                }
            }
        }
        if !busy {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// One port's AF_PACKET thread: batches in, the switch, frames out; its
/// housekeeping also while the port is idle.
fn afpacket_loop(
    mut pmd: Pmd<'_>,
    port_no: u32,
    mut live: Live,
    mut tx: Senders,
    stop: &AtomicBool,
) -> Result<(), SwitchError> {
    let mut batch = Batch::new();
    loop {
        batch.clear();
        live.fill_or_idle(&mut batch)
            .map_err(SwitchError::Receive)?;
        if batch.is_empty() && stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        for i in 0..batch.len() {
            pmd.receive(port_no, batch.data(i), &mut tx);
        }
        tx.flush();
        pmd.housekeeping();
    }
}

/// AF_PACKET sockets sending out of every port.
struct Senders {
    ports: Vec<(u32, pipeline::Port)>,
    pending: bool,
}

impl Senders {
    fn open(ports: &[LivePort]) -> Result<Senders, SwitchError> {
        let ports = ports
            .iter()
            .map(|p| {
                pipeline::Port::open(&p.dev)
                    .map(|s| (p.port_no, s))
                    .map_err(SwitchError::Send)
            })
            .collect::<Result<_, _>>()?;
        Ok(Senders {
            ports,
            pending: false,
        })
    }

    fn flush(&mut self) {
        if std::mem::take(&mut self.pending) {
            for (_, p) in &mut self.ports {
                // A failed send is counted by the socket; the switch goes on.
                let _ = p.flush();
            }
        }
    }
}

impl Transmit for Senders {
    fn transmit(&mut self, port: u32, frame: &[u8]) -> bool {
        let Some((_, p)) = self.ports.iter_mut().find(|(n, _)| *n == port) else {
            return false;
        };
        self.pending = true;
        p.write(frame, &[], 0).is_ok()
    }
}
