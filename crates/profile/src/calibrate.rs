//! This host as a [`Cpu`]: time the JIT on the same packets the model
//! counts, and fit `t = t0 + tbyte * l + i * cpi / f + m * tmem`.
//!
//! Two parts are measured apart. The host's cost around any program (the
//! frame copied in, the context, the call) is timed with a program that
//! does nothing (the `baseline` hook) on the same packets, and fitted as
//! `t0 + tbyte * l`. The program's own time (its time less that) is fitted
//! through the origin as `i * cpi / f + m * tmem + h * thelper` (`h` the
//! helper calls) by least squares over the packets, weighted so that the
//! relative errors are minimised. Terms that move with
//! another on these packets cannot be told apart: the fit then drops the
//! helper term, then the access term, and puts their time on what is left
//! (`cycles_per_access`/`ns_per_helper` are then `None`).
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

/// How a calibration's note begins when the program's own time could not
/// be told from the harness's.
pub const NOT_MEASURED: &str = "cycles per instruction not measured";

#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// The host as a processor (`host`), for [`Cpu::delay_ns`].
    pub cpu: Cpu,
    pub cycles_per_insn: f64,
    pub cycles_per_access: Option<f64>,
    pub ns_per_helper: Option<f64>,
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
                helpers: s.helper_calls as f64,
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
    // The terms tried, most first: [insns, accesses, helper calls].
    let mut fit = None;
    for terms in [
        [true, true, true],
        [true, false, true],
        [true, true, false],
        [true, false, false],
    ] {
        let rows: Vec<(Vec<f64>, f64)> = fitted
            .iter()
            .map(|s| {
                // Each row weighted by 1 / its measured time: the fit
                // minimises relative errors, small packets count as much
                // as large ones.
                let w = 1.0 / s.total.max(1.0);
                let x = [s.insns, s.accesses, s.helpers];
                let x = (0..3).filter(|&k| terms[k]).map(|k| x[k] * w).collect();
                (x, (s.total - harness.at(f64::from(s.len))) * w)
            })
            .collect();
        if let Some(c) = fit_origin(&rows).filter(|c| c[0] > 0.0 && c.iter().all(|&v| v >= 0.0)) {
            let mut it = c.into_iter();
            let mut take = |on: bool| if on { it.next() } else { None };
            fit = Some((take(true).unwrap_or(0.0), take(terms[1]), take(terms[2])));
            break;
        }
    }
    let measured = fit.is_some();
    let (per_insn, per_access, per_helper) = fit.unwrap_or((0.0, None, None));
    let note = match (per_access, per_helper) {
        // No fit left a positive time per instruction: what the program
        // adds to the harness is lost in the timing's noise (a busy
        // machine, a program of a few instructions, too few packets).
        _ if !measured => Some(format!(
            "{NOT_MEASURED}: what the program adds to the harness's time is lost in the \
             timing's noise (a busy machine, or too few packets: more with \
             --calibrate-packets); taken as 0"
        )),
        (Some(_), Some(_)) => None,
        (None, Some(_)) => Some("instructions and memory accesses move together on these packets: the accesses' time is put on instructions".to_string()),
        (Some(_), None) => Some("helper calls are not told apart from instructions and accesses on these packets: their time is put on those".to_string()),
        (None, None) => Some("instructions, memory accesses and helper calls move together on these packets: the program's time is put on instructions alone".to_string()),
    };
    let cpu = Cpu {
        name: "host".into(),
        f_mhz,
        cpi: per_insn * f_mhz / 1e3,
        tmem_ns: per_access.unwrap_or(0.0),
        t0_ns: harness.intercept,
        tbyte_ns: harness.slope,
        thelper_ns: per_helper.unwrap_or(0.0),
    };
    let mut points = Vec::new();
    for &len in chosen.keys() {
        let of: Vec<&Sample> = samples.iter().filter(|s| s.len == len).collect();
        let n = of.len() as f64;
        let mean = |k: fn(&Sample) -> f64| of.iter().map(|s| k(s)).sum::<f64>() / n;
        let (insns, accesses, helpers, measured) = (
            mean(|s| s.insns),
            mean(|s| s.accesses),
            mean(|s| s.helpers),
            mean(|s| s.total),
        );
        let predicted = cpu.delay_ns(f64::from(len), insns, accesses, helpers);
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
        ns_per_helper: per_helper,
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
    helpers: f64,
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

/// Least squares `y = c . x` (no intercept) over `(x, y)` rows, by the
/// normal equations; `None` when they are singular (a term moves with the
/// others).
fn fit_origin(rows: &[(Vec<f64>, f64)]) -> Option<Vec<f64>> {
    let n = rows.first()?.0.len();
    // Each term scaled to norm 1, so that a pivot near 0 means a term the
    // others explain, whatever the terms' magnitudes.
    let norm: Vec<f64> = (0..n)
        .map(|i| rows.iter().map(|(x, _)| x[i] * x[i]).sum::<f64>().sqrt())
        .collect();
    if norm.contains(&0.0) {
        return None;
    }
    // [A | b] with A = X^T X, b = X^T y.
    let mut a = vec![vec![0.0; n + 1]; n];
    for (x, y) in rows {
        for i in 0..n {
            for j in 0..n {
                a[i][j] += x[i] / norm[i] * x[j] / norm[j];
            }
            a[i][n] += x[i] / norm[i] * y;
        }
    }
    for col in 0..n {
        let pivot = (col..n).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        if a[pivot][col].abs() <= 1e-6 {
            return None;
        }
        a.swap(col, pivot);
        for r in 0..n {
            if r != col {
                let f = a[r][col] / a[col][col];
                let pivot_row = a[col].clone();
                for (v, p) in a[r].iter_mut().zip(pivot_row).skip(col) {
                    *v -= f * p;
                }
            }
        }
    }
    Some((0..n).map(|i| a[i][n] / a[i][i] / norm[i]).collect())
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

#[cfg(test)]
mod tests {
    use super::fit_origin;

    #[test]
    fn fits_through_the_origin_or_says_a_term_is_redundant() {
        let rows: Vec<(Vec<f64>, f64)> = (1..20)
            .map(|k| {
                let x = [1000.0 * f64::from(k), f64::from(k * k % 7), 5.0];
                (x.to_vec(), 2.0 * x[0] + 3.0 * x[1] + 40.0 * x[2])
            })
            .collect();
        let c = fit_origin(&rows).unwrap();
        for (got, want) in c.iter().zip([2.0, 3.0, 40.0]) {
            assert!((got - want).abs() < 1e-6 * want, "{c:?}");
        }
        // The second term twice the first: not told apart.
        let twice: Vec<(Vec<f64>, f64)> = rows
            .iter()
            .map(|(x, y)| (vec![x[0], 2.0 * x[0]], *y))
            .collect();
        assert_eq!(fit_origin(&twice), None);
    }
}
