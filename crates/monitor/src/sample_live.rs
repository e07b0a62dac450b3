//! Trajectory sampling live in the kernel: `programs/sample.c` loaded and
//! attached (XDP) to an interface; its records read from its ring buffer
//! as they come; when told to stop, it detaches the program and reads what
//! is left. The kernel's monotonic clock (`bpf_ktime_get_ns`) is turned
//! into wall-clock time for the samples.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kernel::attach::XdpMode;
use kernel::ringbuf::RingReader;
use kernel::{KernelObject, MapInfo};

use crate::attach::clock;
use crate::ebpf::per_cpu_sum;
use crate::error::MonitorError;
use crate::sample::{SampleCounts, SampleRecord};
use crate::sample_ebpf::{counts, image, map_size, record};

/// Samples the frames arriving on `dev` (`b` of `a`, a label table of
/// `table` slots) until `stop` is set or `duration` passed; `each` gets
/// the records (times as wall-clock nanoseconds); returns the program's
/// counters.
#[allow(clippy::too_many_arguments)]
pub fn live_sample(
    a: u32,
    b: u32,
    table: usize,
    dev: &str,
    mode: XdpMode,
    stop: &AtomicBool,
    duration: Option<Duration>,
    mut each: impl FnMut(&[SampleRecord]),
) -> Result<SampleCounts, MonitorError> {
    if a == 0 {
        return Err(MonitorError::Options("A must be at least 1".into()));
    }
    let image = image(a, b, table)?;
    let mut kopts = kernel::load_options(&image.object, &image.maps);
    kopts.max_entries.retain(|(n, _)| n != "labels");
    kopts.max_entries.push(("labels".into(), map_size(table)?));
    let bytes = programs::object("sample").ok_or(MonitorError::NotBuilt("sample"))?;
    let object = KernelObject::load(bytes, "sample", &kopts)?;
    let prog = object.program("xdp_sample")?;
    let maps = object.maps()?;
    let map = |name: &str| -> Result<&MapInfo, MonitorError> {
        maps.iter()
            .find(|m| kernel::same_map(&m.name, name))
            .ok_or_else(|| MonitorError::NoMap {
                program: "loaded sample".into(),
                map: name.into(),
            })
    };
    let (samples, stats) = (map("samples")?, map("sample_stats")?);
    let mut ring = RingReader::new(samples.fd)?;
    let offset = clock(libc::CLOCK_REALTIME).saturating_sub(clock(libc::CLOCK_MONOTONIC));
    let mut read = |ring: &mut RingReader, timeout: i32| -> Result<(), MonitorError> {
        let mut out = Vec::new();
        for r in ring.poll(timeout)? {
            out.push(match record(&r)? {
                SampleRecord::Sample(mut s) => {
                    s.time_ns += offset;
                    SampleRecord::Sample(s)
                }
                f => f,
            });
        }
        if !out.is_empty() {
            each(&out);
        }
        Ok(())
    };
    {
        // A bpf link of this process: detached when it is dropped or the
        // process ends (even by SIGKILL).
        let _attached = kernel::xdp_link::xdp_attach_owned(dev, prog.fd, mode)?;
        let started = Instant::now();
        while !stop.load(Ordering::Relaxed) && duration.is_none_or(|d| started.elapsed() < d) {
            read(&mut ring, 100)?;
        }
    }
    // Detached: nothing more arrives.
    read(&mut ring, 0)?;
    Ok(counts(|i| {
        stats
            .lookup(&i.to_ne_bytes())
            .ok()
            .flatten()
            .map_or(0, |v| per_cpu_sum(&v))
    }))
}
