//! The eBPF flow accounting live in the kernel: `programs/flows.c` loaded
//! and attached (XDP) to an interface; the flows it ends read from its
//! ring buffer; every second user space ends, from the map, the flows idle
//! or running past the active timeout (the program notices those only at
//! their next packet); when told to stop, it detaches the program and ends
//! what is left (idle or forced). The kernel's monotonic clock
//! (`bpf_ktime_get_ns`) is turned into wall-clock time for the records.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kernel::attach::XdpMode;
use kernel::ringbuf::RingReader;
use kernel::{KernelObject, MapInfo};

use crate::attach::clock;
use crate::ebpf::{entry, image, per_cpu_sum, record};
use crate::error::MonitorError;
use crate::metrics::Metrics;
use crate::table::{EndReason, Ended, TableOptions};

/// How a live run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveSummary {
    /// Flows ended, per flowEndReason code (1 to 5).
    pub by_reason: [u64; 6],
    /// Packets a full map could not account (each sent as a record).
    pub lacked: u64,
    /// Records lost to a full ring buffer.
    pub lost: u64,
}

/// Runs flow accounting on `dev` until `stop` is set or `duration`
/// passed; `each` gets the ended flows (times as wall-clock nanoseconds);
/// `metrics`' flows held and drops are brought up to date every second.
pub fn live_flows(
    opts: &TableOptions,
    dev: &str,
    mode: XdpMode,
    stop: &AtomicBool,
    duration: Option<Duration>,
    metrics: Option<&Metrics>,
    mut each: impl FnMut(&[Ended]),
) -> Result<LiveSummary, MonitorError> {
    let image = image(opts)?;
    let mut kopts = kernel::load_options(&image.object, &image.maps);
    let cap = u32::try_from(opts.capacity).unwrap_or(u32::MAX);
    kopts.max_entries.retain(|(n, _)| n != "flows");
    kopts.max_entries.push(("flows".into(), cap));
    let bytes = programs::object("flows").ok_or(MonitorError::NotBuilt("flows"))?;
    let object = KernelObject::load(bytes, "flows", &kopts)?;
    let prog = object.program("xdp_flows")?;
    let maps = object.maps()?;
    let map = |name: &str| -> Result<&MapInfo, MonitorError> {
        maps.iter()
            .find(|m| kernel::same_map(&m.name, name))
            .ok_or_else(|| MonitorError::NoMap {
                program: "loaded flows".into(),
                map: name.into(),
            })
    };
    let (flows, ended, stats) = (map("flows")?, map("ended")?, map("flow_stats")?);
    let mut ring = RingReader::new(ended.fd)?;
    // Wall-clock time of the kernel's monotonic clock's zero.
    let offset = clock(libc::CLOCK_REALTIME).saturating_sub(clock(libc::CLOCK_MONOTONIC));
    let wall = |mut e: Ended| {
        e.flow.first_ns += offset;
        e.flow.last_ns += offset;
        e
    };
    let mut summary = LiveSummary::default();
    let mut hand_out = |ended: Vec<Ended>, s: &mut LiveSummary| {
        let ended: Vec<Ended> = ended.into_iter().map(wall).collect();
        for e in &ended {
            s.by_reason[usize::from(e.reason.code())] += 1;
        }
        each(&ended);
    };
    let records = |ring: &mut RingReader, timeout: i32| -> Result<Vec<Ended>, MonitorError> {
        let mut out = Vec::new();
        for r in ring.poll(timeout)? {
            out.push(record(&r)?);
        }
        Ok(out)
    };
    // Ends the flows in the map that are idle or past the active timeout
    // (`all`: every flow, forced unless idle).
    let stat = |i: u32| -> u64 {
        stats
            .lookup(&i.to_ne_bytes())
            .ok()
            .flatten()
            .map_or(0, |v| per_cpu_sum(&v))
    };
    let sweep = |all: bool| -> Result<Vec<Ended>, MonitorError> {
        let now = clock(libc::CLOCK_MONOTONIC);
        let mut out = Vec::new();
        let entries = flows.entries()?;
        let held = entries.len();
        for (k, v) in entries {
            let flow = entry(&k, &v)?;
            let reason = if now.saturating_sub(flow.last_ns) >= opts.idle_timeout_ns {
                EndReason::IdleTimeout
            } else if now.saturating_sub(flow.first_ns) >= opts.active_timeout_ns {
                EndReason::ActiveTimeout
            } else if all {
                EndReason::ForcedEnd
            } else {
                continue;
            };
            flows.delete(&k)?;
            out.push(Ended { flow, reason });
        }
        if let Some(m) = metrics {
            m.flows_active
                .store((held - out.len()) as u64, Ordering::Relaxed);
            m.drops("flows", "table_full", stat(0));
            m.drops("flows", "records_lost", stat(1));
        }
        Ok(out)
    };
    {
        // A bpf link of this process: detached when it is dropped or the
        // process ends (even by SIGKILL).
        let _attached = kernel::xdp_link::xdp_attach_owned(dev, prog.fd, mode)?;
        let started = Instant::now();
        let mut swept = Instant::now();
        while !stop.load(Ordering::Relaxed) && duration.is_none_or(|d| started.elapsed() < d) {
            let got = records(&mut ring, 100)?;
            hand_out(got, &mut summary);
            if swept.elapsed() >= Duration::from_secs(1) {
                hand_out(sweep(false)?, &mut summary);
                swept = Instant::now();
            }
        }
    }
    // Detached: nothing more arrives.
    let got = records(&mut ring, 0)?;
    hand_out(got, &mut summary);
    hand_out(sweep(true)?, &mut summary);
    summary.lacked = stat(0);
    summary.lost = stat(1);
    Ok(summary)
}
