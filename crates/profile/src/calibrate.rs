//! This host as a [`Cpu`]: time the JIT on the same packets the model
//! counts, and fit `t = t0 + i * cpi / f + m * tmem` to the times.
//!
//! Per packet: a few warm-up runs, one counting run (its instructions and
//! accesses), then rounds of repeated runs whose median time per run is
//! the packet's measured delay. The fit is least squares over the packets;
//! when instructions and accesses move together (one program, both linear
//! in length) they cannot be told apart, and the time is put on
//! instructions alone (`cycles_per_access` is then `None`).

use std::collections::BTreeMap;
use std::time::Instant;

use pipeline::{Source, for_each_packet};
use runtime::{Hook, PacketMeta};
use serde::Serialize;

use crate::cpu::Cpu;
use crate::fit::{fit_line, fit_plane};

/// One packet length: what was counted, measured and predicted.
#[derive(Clone, Debug, Serialize)]
pub struct CalPoint {
    pub len: u32,
    pub packets: u64,
    pub insns: f64,
    pub accesses: f64,
    pub measured_ns: f64,
    pub predicted_ns: f64,
    /// `(predicted - measured) / measured`, in percent.
    pub error_pct: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// The host as a processor (`host`), for [`Cpu::delay_ns`].
    pub cpu: Cpu,
    pub cycles_per_insn: f64,
    pub cycles_per_access: Option<f64>,
    pub points: Vec<CalPoint>,
    /// Mean and largest absolute error over the lengths, in percent.
    pub mean_error_pct: f64,
    pub max_error_pct: f64,
    pub note: Option<String>,
}

/// Calibrates on up to `per_length` packets of each length of `source`
/// (at most `limit` packets read), each timed over `repeats` runs in 5
/// rounds. `hook` should be the JIT on the verified program (what a
/// replay runs).
pub fn calibrate(
    hook: &mut Hook,
    source: &mut dyn Source,
    limit: Option<u64>,
    per_length: usize,
    repeats: u32,
) -> Result<Calibration, String> {
    let mut chosen: BTreeMap<u32, Vec<(u64, Vec<u8>)>> = BTreeMap::new();
    for_each_packet(source, limit, |info, bytes| {
        let group = chosen.entry(bytes.len() as u32).or_default();
        if group.len() < per_length {
            group.push((info.timestamp_ns, bytes.to_vec()));
        }
    })
    .map_err(|e| e.to_string())?;
    let mut samples = Vec::new(); // (len, insns, accesses, ns)
    for (&len, group) in &chosen {
        for (ts, bytes) in group {
            let meta = meta(*ts);
            hook.set_counting(false);
            for _ in 0..3 {
                hook.run(bytes, &meta).map_err(|e| e.to_string())?;
            }
            hook.set_counting(true);
            let s = *hook.run(bytes, &meta).map_err(|e| e.to_string())?.stats;
            hook.set_counting(false);
            let accesses = s.accesses() + s.helper_mem.reads + s.helper_mem.writes;
            let mut rounds = Vec::new();
            for _ in 0..5 {
                let start = Instant::now();
                for _ in 0..repeats {
                    hook.run(bytes, &meta).map_err(|e| e.to_string())?;
                }
                rounds.push(start.elapsed().as_nanos() as f64 / f64::from(repeats.max(1)));
            }
            rounds.sort_by(f64::total_cmp);
            samples.push((len, s.insns as f64, accesses as f64, rounds[2]));
        }
    }
    if samples.is_empty() {
        return Err("no packets to calibrate on".into());
    }
    let f_mhz = host_mhz().unwrap_or(1000.0);
    let plane: Vec<(f64, f64, f64)> = samples.iter().map(|s| (s.1, s.2, s.3)).collect();
    let (t0, per_insn, per_access, note) = match fit_plane(&plane) {
        Some([t0, pi, pa]) if pi > 0.0 && pa >= 0.0 => (t0, pi, Some(pa), None),
        _ => {
            let l = fit_line(&samples.iter().map(|s| (s.1, s.3)).collect::<Vec<_>>());
            (
                l.intercept,
                l.slope.max(0.0),
                None,
                Some(
                    "instructions and memory accesses grow together on these packets: the time is fitted on instructions alone (profile programs with other ratios to separate them)"
                        .to_string(),
                ),
            )
        }
    };
    let cpu = Cpu {
        name: "host".into(),
        f_mhz,
        cpi: per_insn * f_mhz / 1e3,
        tmem_ns: per_access.unwrap_or(0.0),
        t0_ns: t0,
    };
    let mut points = Vec::new();
    for &len in chosen.keys() {
        let of: Vec<_> = samples.iter().filter(|s| s.0 == len).collect();
        let n = of.len() as f64;
        let mean = |k: fn(&(u32, f64, f64, f64)) -> f64| of.iter().map(|s| k(s)).sum::<f64>() / n;
        let (insns, accesses, measured) = (mean(|s| s.1), mean(|s| s.2), mean(|s| s.3));
        let predicted = cpu.delay_ns(insns, accesses);
        points.push(CalPoint {
            len,
            packets: of.len() as u64,
            insns,
            accesses,
            measured_ns: measured,
            predicted_ns: predicted,
            error_pct: 100.0 * (predicted - measured) / measured,
        });
    }
    let errors: Vec<f64> = points.iter().map(|p| p.error_pct.abs()).collect();
    Ok(Calibration {
        cycles_per_insn: cpu.cpi,
        cycles_per_access: per_access.map(|t| t * f_mhz / 1e3),
        mean_error_pct: errors.iter().sum::<f64>() / errors.len() as f64,
        max_error_pct: errors.iter().copied().fold(0.0, f64::max),
        cpu,
        points,
        note,
    })
}

fn meta(ts: u64) -> PacketMeta {
    PacketMeta {
        ifindex: 1,
        rx_queue: 0,
        timestamp_ns: ts,
        egress_ifindex: 0,
        dev_addr: [0; 6],
        dev_broadcast: [0; 6],
    }
}

/// The host's clock from `/proc/cpuinfo` (`cpu MHz`).
fn host_mhz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()
}
