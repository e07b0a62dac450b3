//! The switch over captures, no root needed: each port may replay a
//! capture as the frames arriving on it (all ports' frames merged in time
//! order) and write the frames sent out of it to another capture. The
//! OpenFlow channel, when there is one, is served between batches, and the
//! switch's timers (flow timeouts, megaflow expiry) run on the packets'
//! own clock.

use std::path::PathBuf;

use openflow::Port;
use pipeline::{Batch, Capture, PcapWriter, Sink, Source};

use crate::channel::Channel;
use crate::core::{Core, Transmit};
use crate::dpif::{CacheOptions, Datapath, TierStats};
use crate::error::SwitchError;

/// A port of a switch over captures.
#[derive(Clone, Debug)]
pub struct PcapPort {
    pub port_no: u32,
    pub name: String,
    /// Frames arriving on the port.
    pub input: Option<PathBuf>,
    /// Where frames sent out of the port are written.
    pub output: Option<PathBuf>,
}

impl std::str::FromStr for PcapPort {
    type Err = SwitchError;

    /// `pcap:IN[:OUT]`, either side may be empty (`pcap::out.pcap`).
    fn from_str(s: &str) -> Result<PcapPort, SwitchError> {
        let rest = s
            .strip_prefix("pcap:")
            .ok_or_else(|| SwitchError::NotACapturePort(s.to_string()))?;
        let (i, o) = rest.split_once(':').unwrap_or((rest, ""));
        let path = |p: &str| (!p.is_empty()).then(|| PathBuf::from(p));
        if i.is_empty() && o.is_empty() {
            return Err(SwitchError::NoCaptureFile(s.to_string()));
        }
        Ok(PcapPort {
            port_no: 0,
            name: String::new(),
            input: path(i),
            output: path(o),
        })
    }
}

/// What a replay did.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    pub packets: u64,
    pub tiers: TierStats,
    /// The datapath's megaflows at the end, as dump-flows lines.
    pub megaflows: Vec<String>,
    pub subtables: usize,
    pub seconds: f64,
}

/// Frames out of ports, into their captures.
struct Writers {
    out: Vec<(u32, Option<Box<dyn Sink>>)>,
    now: u64,
    error: Option<SwitchError>,
}

impl Transmit for Writers {
    fn transmit(&mut self, port: u32, frame: &[u8]) -> bool {
        let Some((_, w)) = self.out.iter_mut().find(|(p, _)| *p == port) else {
            return false;
        };
        match w {
            Some(w) => match w.write(frame, &[], self.now) {
                Ok(()) => true,
                Err(e) => {
                    self.error
                        .get_or_insert(SwitchError::WritePort { port, source: e });
                    false
                }
            },
            // A port with no output file takes the frame (and loses it).
            None => true,
        }
    }
}

/// Replays the ports' captures through the switch.
pub fn replay(
    core: &Core,
    ports: &[PcapPort],
    mut channel: Option<&mut Channel>,
    options: CacheOptions,
) -> Result<ReplayReport, SwitchError> {
    let start = std::time::Instant::now();
    let mut writers = Writers {
        out: Vec::new(),
        now: 0,
        error: None,
    };
    let mut inputs = Vec::new();
    for p in ports {
        core.add_port(Port {
            port_no: p.port_no,
            hw_addr: [0x02, 0, 0, 0, 0, p.port_no as u8],
            name: p.name.clone(),
            // Up, with no link features: a capture has no speed.
            state: openflow::port_bits::STATE_LIVE,
            ..Port::default()
        });
        let sink = match &p.output {
            Some(path) => Some(Box::new(PcapWriter::create(path).map_err(|source| {
                SwitchError::CreateCapture {
                    path: path.clone(),
                    source,
                }
            })?) as Box<dyn Sink>),
            None => None,
        };
        writers.out.push((p.port_no, sink));
        if let Some(path) = &p.input {
            let c = Capture::open(path).map_err(|source| SwitchError::OpenCapture {
                path: path.clone(),
                source,
            })?;
            inputs.push(Input {
                port: p.port_no,
                source: c,
                batch: Batch::new(),
                next: 0,
                done: false,
            });
        }
    }
    let mut dp = Datapath::new(options);
    let table = core.port_table();
    let mut packets = 0u64;
    // Capture time, shifted to go on from the switch clock.
    let start_ns = core.now();
    let mut first_ts = None;
    let mut last_tick = start_ns;
    // A loop of its own over the pipeline's sources and sinks, not
    // `pipeline::replay`: that drives one source through one hook, where
    // here every port's capture is a source of its own, merged frame by
    // frame in time order with the arriving port kept (a batch does not
    // carry it); the switch's clock and timers follow the merged frames,
    // the OpenFlow channel is served every 256 of them, and a frame goes
    // out of any port's sink, not by a route.
    loop {
        for i in &mut inputs {
            i.refill()?;
        }
        // The earliest next frame of all inputs.
        let Some(at) = inputs
            .iter()
            .enumerate()
            .filter(|(_, i)| !i.done)
            .min_by_key(|(_, i)| i.batch.info(i.next).timestamp_ns)
            .map(|(n, _)| n)
        else {
            break;
        };
        let i = &mut inputs[at];
        let stamp = i.batch.info(i.next).timestamp_ns;
        let first = *first_ts.get_or_insert(stamp);
        // (A capture whose time goes back stays where it was.)
        let ts = (start_ns + stamp.saturating_sub(first)).max(writers.now);
        core.set_clock(ts);
        writers.now = ts;
        core.receive(&mut dp, &table, i.port, i.batch.data(i.next), &mut writers);
        i.next += 1;
        packets += 1;
        if let Some(e) = writers.error.take() {
            return Err(e);
        }
        if packets.is_multiple_of(256)
            && let Some(ch) = channel.as_deref_mut()
        {
            ch.poll(core, &mut writers);
        }
        // Timers once a second of capture time.
        if ts >= last_tick + 1_000_000_000 {
            last_tick = ts;
            dp.push_stats(&core.shared);
            let removed = core.shared.with(|of| of.expire(ts));
            core.flows_removed(&removed);
            dp.expire(ts, crate::MEGAFLOW_IDLE_NS, &core.shared);
        }
    }
    dp.push_stats(&core.shared);
    let now = writers.now;
    for (port, w) in writers.out {
        if let Some(w) = w {
            w.finish()
                .map_err(|source| SwitchError::WritePort { port, source })?;
        }
    }
    Ok(ReplayReport {
        packets,
        tiers: dp.stats,
        megaflows: dp
            .megaflows()
            .map(|m| crate::dpif::format_megaflow(m, now))
            .collect(),
        subtables: dp.subtables(),
        seconds: start.elapsed().as_secs_f64(),
    })
}

struct Input {
    port: u32,
    source: Capture,
    batch: Batch,
    next: usize,
    done: bool,
}

impl Input {
    fn refill(&mut self) -> Result<(), SwitchError> {
        if self.done || self.next < self.batch.len() {
            return Ok(());
        }
        self.batch.clear();
        self.next = 0;
        self.source
            .fill(&mut self.batch)
            .map_err(SwitchError::ReadCapture)?;
        self.done = self.batch.is_empty();
        Ok(())
    }
}
