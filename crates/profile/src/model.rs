//! The paper's cost model: instructions `i(l) = alpha + beta * l` and
//! memory accesses `m(l) = gamma + delta * l`, fitted over every packet,
//! with the packets that do not follow it.
//!
//! A program is called linear in the packet length when the mean cost of
//! each length lies on a line, R^2 >= 0.99 for both quantities (the
//! paper's Figure 2 plots those means). Per packet the cost may vary for
//! other reasons (the route taken, per-flow state, the first packets of a
//! flow): the per-packet fit's R^2 says how much, and packets more than
//! 10% (and more than 2 counts) off the line are listed. With fewer than
//! three lengths the per-packet fit decides.

use serde::Serialize;

use crate::cost::{PacketCost, Profile};
use crate::fit::{Line, fit_line};

/// R^2 from which a fit is called linear.
pub const LINEAR_R2: f64 = 0.99;
/// Outliers listed per fit.
const LISTED: usize = 10;

/// One fitted quantity and the packets off its line.
#[derive(Clone, Debug, Serialize)]
pub struct Fitted {
    /// The fit over every packet: the coefficients reported.
    pub line: Line,
    /// The fit over the mean of each length (each length once).
    pub means: Line,
    /// Packets more than 10% (and 2 counts) off the line.
    pub outliers: u64,
    /// The first of them.
    pub first_outliers: Vec<Outlier>,
    /// The fit over the other packets, when there were outliers.
    pub without_outliers: Option<Line>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outlier {
    pub seq: u64,
    pub len: u32,
    pub value: u64,
    pub predicted: f64,
}

/// The cost of the packets of one length.
#[derive(Clone, Debug, Serialize)]
pub struct LengthRow {
    pub len: u32,
    pub packets: u64,
    pub insns_mean: f64,
    pub insns_min: u64,
    pub insns_max: u64,
    pub accesses_mean: f64,
    pub accesses_min: u64,
    pub accesses_max: u64,
    pub branches_mean: f64,
    pub taken_mean: f64,
    pub helper_calls_mean: f64,
    pub helper_accesses_mean: f64,
    /// Mean loads and stores per packet, by place (as [`Profile::places`]).
    pub places: Vec<PlaceMean>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PlaceMean {
    pub place: String,
    pub loads: f64,
    pub stores: f64,
}

/// A program's fitted model.
#[derive(Clone, Debug, Serialize)]
pub struct CostModel {
    pub program: String,
    pub engine: crate::VmEngine,
    pub packets: u64,
    pub failed: u64,
    /// alpha (intercept) and beta (slope) of instructions per byte.
    pub insns: Fitted,
    /// gamma and delta of memory accesses per byte.
    pub accesses: Fitted,
    /// Helper calls per byte (for a host's helper-call term).
    pub helpers: Fitted,
    pub linear: bool,
    /// What a reader should know about the fit, in words.
    pub notes: Vec<String>,
    pub rows: Vec<LengthRow>,
}

impl CostModel {
    pub fn alpha(&self) -> f64 {
        self.insns.line.intercept
    }
    pub fn beta(&self) -> f64 {
        self.insns.line.slope
    }
    pub fn gamma(&self) -> f64 {
        self.accesses.line.intercept
    }
    pub fn delta(&self) -> f64 {
        self.accesses.line.slope
    }

    /// Instructions and memory accesses the model predicts at `len` bytes.
    pub fn predict(&self, len: f64) -> (f64, f64) {
        (self.insns.line.at(len), self.accesses.line.at(len))
    }

    /// The delay the model predicts on `cpu` at `len` bytes, in ns.
    pub fn delay_ns(&self, cpu: &crate::Cpu, len: f64) -> f64 {
        let (i, m) = self.predict(len);
        cpu.delay_ns(len, i, m, self.helpers.line.at(len))
    }

    /// Fits the model to a profile.
    pub fn fit(p: &Profile) -> CostModel {
        let insns = fitted(&p.packets, |c| c.insns);
        let accesses = fitted(&p.packets, |c| c.accesses());
        let helpers = fitted(&p.packets, |c| c.helper_calls);
        let linear = insns.linear() && accesses.linear();
        let rows = rows(p);
        let notes = notes(&insns, &accesses, &rows, p);
        CostModel {
            program: p.program.clone(),
            engine: p.engine,
            packets: p.packets.len() as u64,
            failed: p.failed,
            insns,
            accesses,
            helpers,
            linear,
            notes,
            rows,
        }
    }
}

impl Fitted {
    /// Whether the quantity is linear in the length (see the module doc).
    pub fn linear(&self) -> bool {
        if self.means.points >= 3 {
            self.means.r2 >= LINEAR_R2
        } else {
            self.line.r2 >= LINEAR_R2
        }
    }
}

fn fitted(packets: &[PacketCost], value: impl Fn(&PacketCost) -> u64) -> Fitted {
    let mut sums: std::collections::BTreeMap<u32, (f64, f64)> = Default::default();
    for c in packets {
        let e = sums.entry(c.len).or_default();
        e.0 += value(c) as f64;
        e.1 += 1.0;
    }
    let means: Vec<(f64, f64)> = sums
        .iter()
        .map(|(&l, &(sum, n))| (f64::from(l), sum / n))
        .collect();
    let means = fit_line(&means);
    let points: Vec<(f64, f64)> = packets
        .iter()
        .map(|c| (f64::from(c.len), value(c) as f64))
        .collect();
    let line = fit_line(&points);
    let off = |c: &PacketCost| {
        let (v, want) = (value(c) as f64, line.at(f64::from(c.len)));
        (v - want).abs() > (0.1 * want.abs()).max(2.0)
    };
    let mut outliers = 0u64;
    let mut first_outliers = Vec::new();
    for c in packets.iter().filter(|c| off(c)) {
        outliers += 1;
        if first_outliers.len() < LISTED {
            first_outliers.push(Outlier {
                seq: c.seq,
                len: c.len,
                value: value(c),
                predicted: line.at(f64::from(c.len)),
            });
        }
    }
    let without_outliers = (outliers > 0 && outliers < packets.len() as u64).then(|| {
        let rest: Vec<(f64, f64)> = packets
            .iter()
            .filter(|c| !off(c))
            .map(|c| (f64::from(c.len), value(c) as f64))
            .collect();
        fit_line(&rest)
    });
    Fitted {
        line,
        means,
        outliers,
        first_outliers,
        without_outliers,
    }
}

fn rows(p: &Profile) -> Vec<LengthRow> {
    let mut rows: Vec<LengthRow> = Vec::new();
    let mut by_len: std::collections::BTreeMap<u32, Vec<&PacketCost>> = Default::default();
    for c in &p.packets {
        by_len.entry(c.len).or_default().push(c);
    }
    for (len, cs) in by_len {
        let n = cs.len() as f64;
        let mean = |f: &dyn Fn(&PacketCost) -> u64| cs.iter().map(|c| f(c) as f64).sum::<f64>() / n;
        let places = p
            .by_length
            .get(&len)
            .map(|s| {
                (p.places.iter().zip(&s.per_place))
                    .map(|(name, c)| PlaceMean {
                        place: name.clone(),
                        loads: c[0] as f64 / s.packets as f64,
                        stores: c[1] as f64 / s.packets as f64,
                    })
                    .collect()
            })
            .unwrap_or_default();
        rows.push(LengthRow {
            len,
            packets: cs.len() as u64,
            insns_mean: mean(&|c| c.insns),
            insns_min: cs.iter().map(|c| c.insns).min().unwrap_or(0),
            insns_max: cs.iter().map(|c| c.insns).max().unwrap_or(0),
            accesses_mean: mean(&|c| c.accesses()),
            accesses_min: cs.iter().map(|c| c.accesses()).min().unwrap_or(0),
            accesses_max: cs.iter().map(|c| c.accesses()).max().unwrap_or(0),
            branches_mean: mean(&|c| c.branches),
            taken_mean: mean(&|c| c.taken),
            helper_calls_mean: mean(&|c| c.helper_calls),
            helper_accesses_mean: mean(&|c| c.helper_reads + c.helper_writes),
            places,
        });
    }
    rows
}

fn notes(insns: &Fitted, accesses: &Fitted, rows: &[LengthRow], p: &Profile) -> Vec<String> {
    let mut notes = Vec::new();
    if rows.len() == 1 {
        notes.push(format!(
            "every packet is {} bytes: the per-byte terms (beta, delta) are unknown; profile several sizes (--sizes)",
            rows[0].len
        ));
    }
    for (what, f) in [("instructions", insns), ("memory accesses", accesses)] {
        if !f.line.slope_known {
            continue;
        }
        if !f.linear() {
            notes.push(format!(
                "{what} are not linear in the packet length: the means per length lie off the line (R^2 {:.3})",
                f.means.r2
            ));
        } else if f.line.r2 < LINEAR_R2 {
            notes.push(format!(
                "{what}: the means per length lie on the line (R^2 {:.3}), but single packets vary beyond their length (R^2 {:.3} over every packet)",
                f.means.r2, f.line.r2
            ));
        } else {
            continue;
        }
        if f.outliers > 0 {
            let first = &f.first_outliers[0];
            let mut s = format!(
                "  {} of {} packets lie more than 10% off the {what} line, the first packet {} ({} bytes, {} against {:.0})",
                f.outliers,
                p.packets.len(),
                first.seq,
                first.len,
                first.value,
                first.predicted
            );
            if let Some(rest) = &f.without_outliers {
                s += &format!(
                    "; without them R^2 is {:.3}: the cost depends on more than the length (per-flow state, first packets of flows, the route taken)",
                    rest.r2
                );
            }
            notes.push(s);
        }
    }
    let spread = rows
        .iter()
        .filter(|r| r.insns_max > r.insns_min)
        .max_by_key(|r| r.insns_max - r.insns_min);
    if let Some(r) = spread {
        notes.push(format!(
            "packets of the same length cost differently: {} bytes took {} to {} instructions",
            r.len, r.insns_min, r.insns_max
        ));
    }
    if let Some(n) = verdict_paths(p) {
        notes.push(n);
    }
    if p.failed > 0 {
        notes.push(format!(
            "{} packets failed to run and are not in the fit",
            p.failed
        ));
    }
    notes
}

/// When every length gets one verdict but the verdict changes with the
/// length (an ESP program that encrypts datagrams up to 1500 bytes and
/// passes larger ones untouched), the line runs through two paths of the
/// program: say which lengths took which.
fn verdict_paths(p: &Profile) -> Option<String> {
    let mut by_len: std::collections::BTreeMap<u32, &str> = Default::default();
    for c in &p.packets {
        match by_len.insert(c.len, c.verdict) {
            Some(v) if v != c.verdict => return None,
            _ => {}
        }
    }
    // Runs of lengths with one verdict, in length order.
    let mut runs: Vec<(&str, u32, u32)> = Vec::new();
    for (&len, &v) in &by_len {
        match runs.last_mut() {
            Some((rv, _, to)) if *rv == v => *to = len,
            _ => runs.push((v, len, len)),
        }
    }
    if runs.len() < 2 {
        return None;
    }
    let parts: Vec<String> = runs
        .iter()
        .map(|(v, from, to)| {
            if from == to {
                format!("{v} at {from} bytes")
            } else {
                format!("{v} for {from}..{to} bytes")
            }
        })
        .collect();
    Some(format!(
        "the verdict changes with the length ({}): the line fits more than one path through the program; profile each range apart (--sizes) for a model of each",
        parts.join(", ")
    ))
}
