//! This host as a [`Cpu`]: time the JIT on the same packets the model
//! counts, and fit `t = t0 + tbyte * l + i * cpi / f + m * tmem`.
//!
//! Two parts are measured apart. The host's cost around any program (the
//! frame copied in, the context, the call) is timed with a program that
//! does nothing (the `baseline` hook) on the same packets, and fitted as
//! `t0 + tbyte * l`. The program's own time (its time less that) is fitted
//! through the origin as `i * cpi / f + m * tmem` by least squares over
//! the packets. When instructions and accesses move together they cannot
//! be told apart, and the time is put on instructions alone
//! (`cycles_per_access` is then `None`).
//!
//! With four lengths or more, every other length (the 2nd, 4th, ...) is
//! held out: the fit sees the others only, and the error on the held-out
//! lengths says how well the model predicts packets it was not fitted on.
//!
//! Per packet: a few warm-up runs, one counting run (its instructions and
//! accesses), then 5 rounds of repeated runs; the median round's time per
//! run is the packet's measured time.

use std::collections::BTreeMap;
use std::time::Instant;

use pipeline::{Source, for_each_packet};
use runtime::{Hook, PacketMeta};
use serde::Serialize;

use crate::cpu::Cpu;
use crate::fit::fit_line;

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
    /// Not used in the fit.
    pub held_out: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// The host as a processor (`host`), for [`Cpu::delay_ns`].
    pub cpu: Cpu,
    pub cycles_per_insn: f64,
    pub cycles_per_access: Option<f64>,
    pub points: Vec<CalPoint>,
    /// Mean and largest absolute error over the lengths fitted on, in
    /// percent.
    pub mean_error_pct: f64,
    pub max_error_pct: f64,
    /// The same over the held-out lengths (none with fewer than four).
    pub held_out_mean_error_pct: Option<f64>,
    pub held_out_max_error_pct: Option<f64>,
    /// R^2 of the host's cost around the program, `t0 + tbyte * l`.
    pub harness_r2: f64,
    pub note: Option<String>,
}

/// Calibrates on up to `per_length` packets of each length of `source`
/// (at most `limit` packets read), each timed over `repeats` runs.
/// `hook` should be the JIT on the verified program (what a replay runs),
/// `baseline` a program of the same kind that only returns.
pub fn calibrate(
    hook: &mut Hook,
    baseline: &mut Hook,
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
    let mut samples = Vec::new();
    for (&len, group) in &chosen {
        for (ts, bytes) in group {
            let meta = meta(*ts);
            let (s, total) = measure(hook, bytes, &meta, repeats)?;
            let (_, around) = measure(baseline, bytes, &meta, repeats)?;
            let accesses = s.accesses() + s.helper_mem.reads + s.helper_mem.writes;
            samples.push(Sample {
                len,
                insns: s.insns as f64,
                accesses: accesses as f64,
                total,
                around,
            });
        }
    }
    if samples.is_empty() {
        return Err("no packets to calibrate on".into());
    }
    let f_mhz = host_mhz().unwrap_or(1000.0);
    let held_out = |len: u32| {
        chosen.len() >= 4
            && chosen
                .keys()
                .position(|&l| l == len)
                .is_some_and(|i| i % 2 == 1)
    };
    let fitted: Vec<&Sample> = samples.iter().filter(|s| !held_out(s.len)).collect();
    let harness = fit_line(
        &fitted
            .iter()
            .map(|s| (f64::from(s.len), s.around))
            .collect::<Vec<_>>(),
    );
    let own: Vec<(f64, f64, f64)> = fitted
        .iter()
        .map(|s| (s.insns, s.accesses, s.total - harness.at(f64::from(s.len))))
        .collect();
    let (per_insn, per_access, note) = match fit_origin2(&own) {
        Some([pi, pa]) if pi > 0.0 && pa >= 0.0 => (pi, Some(pa), None),
        _ => {
            let (sxy, sxx) = own
                .iter()
                .fold((0.0, 0.0), |(a, b), p| (a + p.0 * p.2, b + p.0 * p.0));
            (
                if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 },
                None,
                Some(
                    "instructions and memory accesses move together on these packets: the program's time is put on instructions alone"
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
        t0_ns: harness.intercept,
        tbyte_ns: harness.slope,
    };
    let mut points = Vec::new();
    for &len in chosen.keys() {
        let of: Vec<&Sample> = samples.iter().filter(|s| s.len == len).collect();
        let n = of.len() as f64;
        let mean = |k: fn(&Sample) -> f64| of.iter().map(|s| k(s)).sum::<f64>() / n;
        let (insns, accesses, measured) =
            (mean(|s| s.insns), mean(|s| s.accesses), mean(|s| s.total));
        let predicted = cpu.delay_ns(f64::from(len), insns, accesses);
        points.push(CalPoint {
            len,
            packets: of.len() as u64,
            insns,
            accesses,
            measured_ns: measured,
            predicted_ns: predicted,
            error_pct: 100.0 * (predicted - measured) / measured,
            held_out: held_out(len),
        });
    }
    let errors = |out: bool| {
        let e: Vec<f64> = (points.iter().filter(|p| p.held_out == out))
            .map(|p| p.error_pct.abs())
            .collect();
        (!e.is_empty()).then(|| {
            (
                e.iter().sum::<f64>() / e.len() as f64,
                e.iter().copied().fold(0.0, f64::max),
            )
        })
    };
    let (mean_error_pct, max_error_pct) = errors(false).unwrap_or_default();
    let held = errors(true);
    Ok(Calibration {
        cycles_per_insn: cpu.cpi,
        cycles_per_access: per_access.map(|t| t * f_mhz / 1e3),
        mean_error_pct,
        max_error_pct,
        held_out_mean_error_pct: held.map(|h| h.0),
        held_out_max_error_pct: held.map(|h| h.1),
        harness_r2: harness.r2,
        cpu,
        points,
        note,
    })
}

struct Sample {
    len: u32,
    insns: f64,
    accesses: f64,
    /// Measured time per run, ns: the program's, and the empty program's.
    total: f64,
    around: f64,
}

/// The counted cost of one run of `bytes` and the median time per run.
fn measure(
    hook: &mut Hook,
    bytes: &[u8],
    meta: &PacketMeta,
    repeats: u32,
) -> Result<(vm::Stats, f64), String> {
    hook.set_counting(false);
    for _ in 0..3 {
        hook.run(bytes, meta).map_err(|e| e.to_string())?;
    }
    hook.set_counting(true);
    let stats = *hook.run(bytes, meta).map_err(|e| e.to_string())?.stats;
    hook.set_counting(false);
    let mut rounds = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..repeats {
            hook.run(bytes, meta).map_err(|e| e.to_string())?;
        }
        rounds.push(start.elapsed().as_nanos() as f64 / f64::from(repeats.max(1)));
    }
    rounds.sort_by(f64::total_cmp);
    Ok((stats, rounds[2]))
}

/// Least squares `y = b x1 + c x2` (no intercept) over `(x1, x2, y)`.
fn fit_origin2(points: &[(f64, f64, f64)]) -> Option<[f64; 2]> {
    let (mut a11, mut a12, mut a22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x1, x2, y) in points {
        a11 += x1 * x1;
        a12 += x1 * x2;
        a22 += x2 * x2;
        b1 += x1 * y;
        b2 += x2 * y;
    }
    let det = a11 * a22 - a12 * a12;
    if det.abs() <= 1e-9 * (a11 * a22).max(1.0) {
        return None;
    }
    Some([(b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det])
}

/// What a profiled packet arrives with: interface 1, queue 0, its time.
pub(crate) fn meta(ts: u64) -> PacketMeta {
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
