//! Passive RTT live in the kernel: `programs/rtt.c` loaded and attached
//! (XDP) to an interface; its samples read from its ring buffer as they
//! come (times made wall-clock from the kernel's monotonic clock); every
//! second user space deletes the SYNs and TSvals past the maximum age (the
//! program treats them as absent already; this makes room); when told to
//! stop, it detaches the program and reads the per-flow statistics and the
//! counters from the maps.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kernel::attach::XdpMode;
use kernel::ringbuf::RingReader;
use kernel::{KernelObject, MapInfo};

use crate::attach::clock;
use crate::error::MonitorError;
use crate::rtt::{MeterOptions, RttCounters, RttSample};
use crate::rtt_ebpf::{
    COUNTERS, FLOWS, SAMPLES, SYNS, TSVALS, entry_time, image, per_cpu_sum, record, sizes, stats,
};
use crate::rtt_run::RttSummary;

/// Measures RTTs on `dev` until `stop` is set or `duration` passed; `each`
/// gets the samples (times as wall-clock nanoseconds). The summary has no
/// packet counts (the kernel's program does not count them).
pub fn live_rtt(
    opts: &MeterOptions,
    dev: &str,
    mode: XdpMode,
    stop: &AtomicBool,
    duration: Option<Duration>,
    mut each: impl FnMut(&[RttSample]),
) -> Result<RttSummary, MonitorError> {
    let image = image(opts)?;
    let mut kopts = kernel::load_options(&image.object, &image.maps);
    for (name, size) in sizes(opts) {
        kopts.max_entries.retain(|(n, _)| *n != name);
        kopts.max_entries.push((name, size));
    }
    let bytes = programs::object("rtt").ok_or(MonitorError::NotBuilt("rtt"))?;
    let object = KernelObject::load(bytes, "rtt", &kopts)?;
    let prog = object.program("xdp_rtt")?;
    let maps = object.maps()?;
    let map = |name: &str| -> Result<&MapInfo, MonitorError> {
        maps.iter()
            .find(|m| kernel::same_map(&m.name, name))
            .ok_or_else(|| MonitorError::NoMap {
                program: "loaded rtt".into(),
                map: name.into(),
            })
    };
    let (syns, tsvals, flows) = (map(SYNS)?, map(TSVALS)?, map(FLOWS)?);
    let counters = map(COUNTERS)?;
    let mut ring = RingReader::new(map(SAMPLES)?.fd)?;
    let offset = clock(libc::CLOCK_REALTIME).saturating_sub(clock(libc::CLOCK_MONOTONIC));
    let mut summary = RttSummary::default();
    let mut read =
        |ring: &mut RingReader, timeout: i32, s: &mut RttSummary| -> Result<(), MonitorError> {
            let mut out = Vec::new();
            for r in ring.poll(timeout)? {
                let mut x = record(&r)?;
                x.time_ns += offset;
                s.samples[usize::from(x.method.code())] += 1;
                out.push(x);
            }
            if !out.is_empty() {
                each(&out);
            }
            Ok(())
        };
    let sweep = || -> Result<(), MonitorError> {
        let now = clock(libc::CLOCK_MONOTONIC);
        for m in [syns, tsvals] {
            for (k, v) in m.entries()? {
                if now.wrapping_sub(entry_time(&v)) > opts.max_age_ns {
                    // Gone already (the program deleted it): fine.
                    let _ = m.delete(&k);
                }
            }
        }
        Ok(())
    };
    {
        // A bpf link of this process: detached when it is dropped or the
        // process ends (even by SIGKILL).
        let _attached = kernel::xdp_link::xdp_attach_owned(dev, prog.fd, mode)?;
        let started = Instant::now();
        let mut swept = Instant::now();
        while !stop.load(Ordering::Relaxed) && duration.is_none_or(|d| started.elapsed() < d) {
            read(&mut ring, 100, &mut summary)?;
            if swept.elapsed() >= Duration::from_secs(1) {
                sweep()?;
                swept = Instant::now();
            }
        }
    }
    read(&mut ring, 0, &mut summary)?;
    for (k, v) in flows.entries()? {
        let (key, st) = stats(&k, &v)?;
        summary.flows.insert(key, st);
    }
    let c = |i: u32| -> u64 {
        counters
            .lookup(&i.to_ne_bytes())
            .ok()
            .flatten()
            .map_or(0, |v| per_cpu_sum(&v))
    };
    summary.counters = RttCounters {
        syn_full: c(0),
        ts_full: c(1),
        flows_full: c(2),
        lost: c(3),
    };
    Ok(summary)
}
