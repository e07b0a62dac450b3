//! The processor a delay is predicted for:
//! `t = t0 + tbyte * l + i * cpi / f + m * tmem + h * thelper`.
//!
//! The paper's model is `i / f + m * tmem` (one instruction per cycle,
//! each memory access waiting `tmem`); `cpi`, the fixed `t0`, the
//! per-byte `tbyte` (the host's cost around the program) and the time per
//! helper call `thelper` (a call into the runtime, whose instructions the
//! program's count does not see) let a calibrated host fit too
//! ([`crate::calibrate`]). Presets have no helper term: on the paper's
//! processor library code is counted as instructions.

use serde::{Deserialize, Serialize};

/// A processor field that cannot predict a delay ([`Cpu::check`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("`{field}` is {value}: expected {want}")]
pub struct BadCpu {
    pub field: &'static str,
    pub value: f64,
    pub want: &'static str,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    pub name: String,
    /// Clock in MHz.
    pub f_mhz: f64,
    /// Cycles per instruction.
    pub cpi: f64,
    /// Time per memory access, in ns.
    pub tmem_ns: f64,
    /// Fixed time per packet, in ns (the run's set-up on a host).
    #[serde(default)]
    pub t0_ns: f64,
    /// Time per byte of packet outside the program, in ns (a host copying
    /// the frame in).
    #[serde(default)]
    pub tbyte_ns: f64,
    /// Time per helper call, in ns.
    #[serde(default)]
    pub thelper_ns: f64,
}

/// The paper's processor: an IXP1200 microengine at 233 MHz, with memory
/// from on-chip scratch (4 ns) to SDRAM (170 ns).
const IXP1200: &str = "f=233MHz,tmem=4ns..170ns";

impl Cpu {
    /// The delay of a packet of `len` bytes that executes `insns`
    /// instructions, makes `accesses` memory accesses and `helpers` helper
    /// calls, in ns.
    pub fn delay_ns(&self, len: f64, insns: f64, accesses: f64, helpers: f64) -> f64 {
        self.t0_ns
            + self.tbyte_ns * len
            + insns * self.cpi * 1e3 / self.f_mhz
            + accesses * self.tmem_ns
            + helpers * self.thelper_ns
    }

    /// Whether the processor can predict a delay: a positive clock and
    /// cycles per instruction, times that are not negative, all finite (a
    /// processor file is edited by hand). The error names the field.
    pub fn check(&self) -> Result<(), BadCpu> {
        let fields = [
            ("f_mhz", self.f_mhz, true),
            ("cpi", self.cpi, true),
            ("tmem_ns", self.tmem_ns, false),
            ("t0_ns", self.t0_ns, false),
            ("tbyte_ns", self.tbyte_ns, false),
            ("thelper_ns", self.thelper_ns, false),
        ];
        for (name, v, positive) in fields {
            let ok = v.is_finite() && if positive { v > 0.0 } else { v >= 0.0 };
            if !ok {
                let want = if positive {
                    "a positive number"
                } else {
                    "a number of at least 0"
                };
                return Err(BadCpu {
                    field: name,
                    value: v,
                    want,
                });
            }
        }
        Ok(())
    }

    /// Parses `ixp1200` or `f=233MHz[,cpi=1][,tmem=4ns[..170ns]][,t0=0ns]`:
    /// one processor per memory latency (a range gives its two ends and
    /// three latencies spaced evenly on a log scale between).
    pub fn parse(spec: &str) -> Result<Vec<Cpu>, CpuSpecError> {
        Cpu::parse_text(spec).map_err(CpuSpecError)
    }

    fn parse_text(spec: &str) -> Result<Vec<Cpu>, String> {
        let (name, body) = match spec.trim() {
            "ixp1200" => (Some("ixp1200"), IXP1200),
            s => (None, s),
        };
        let (mut f, mut cpi, mut tmem, mut t0) = (None, 1.0, (0.0, 0.0), 0.0);
        for field in body.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            let (key, value) = field
                .split_once('=')
                .ok_or_else(|| format!("`{field}` in `{spec}`: expected KEY=VALUE"))?;
            match key {
                "f" => f = Some(frequency_mhz(value)?),
                "cpi" => {
                    cpi = value
                        .parse()
                        .ok()
                        .filter(|c: &f64| *c > 0.0)
                        .ok_or_else(|| format!("cpi `{value}`: expected a positive number"))?
                }
                "tmem" => {
                    tmem = match value.split_once("..") {
                        Some((a, b)) => (time_ns(a)?, time_ns(b)?),
                        None => (time_ns(value)?, time_ns(value)?),
                    };
                    if tmem.1 < tmem.0 {
                        return Err(format!("tmem `{value}`: the range runs backwards"));
                    }
                }
                "t0" => t0 = time_ns(value)?,
                _ => return Err(format!("`{key}` in `{spec}`: expected f, cpi, tmem or t0")),
            }
        }
        let f = f.ok_or_else(|| format!("`{spec}`: no clock (f=233MHz)"))?;
        let latencies: Vec<f64> = if tmem.0 == tmem.1 {
            vec![tmem.0]
        } else {
            let (lo, hi) = (tmem.0.max(1e-3).ln(), tmem.1.ln());
            (0..5)
                .map(|i| (lo + (hi - lo) * f64::from(i) / 4.0).exp())
                .map(|t| (t * 10.0).round() / 10.0)
                .collect()
        };
        Ok(latencies
            .into_iter()
            .map(|t| Cpu {
                name: format!(
                    "{}tmem={}ns",
                    name.map(|n| format!("{n},")).unwrap_or_else(|| format!(
                        "f={}MHz,{}",
                        f,
                        if cpi == 1.0 {
                            String::new()
                        } else {
                            format!("cpi={cpi},")
                        }
                    )),
                    t
                ),
                f_mhz: f,
                cpi,
                tmem_ns: t,
                t0_ns: t0,
                tbyte_ns: 0.0,
                thelper_ns: 0.0,
            })
            .collect())
    }
}

fn frequency_mhz(v: &str) -> Result<f64, String> {
    let v = v.trim();
    let lower = v.to_ascii_lowercase();
    let (num, scale) = if let Some(n) = lower.strip_suffix("ghz") {
        (n, 1e3)
    } else if let Some(n) = lower.strip_suffix("mhz") {
        (n, 1.0)
    } else if let Some(n) = lower.strip_suffix("khz") {
        (n, 1e-3)
    } else {
        return Err(format!("clock `{v}`: give a unit (233MHz, 2.6GHz)"));
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| *x > 0.0)
        .map(|x| x * scale)
        .ok_or_else(|| format!("clock `{v}`: expected a positive number"))
}

fn time_ns(v: &str) -> Result<f64, String> {
    let v = v.trim();
    let (num, scale) = if let Some(n) = v.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1e6)
    } else {
        return Err(format!("time `{v}`: give a unit (4ns, 1.5us)"));
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| *x >= 0.0)
        .map(|x| x * scale)
        .ok_or_else(|| format!("time `{v}`: expected a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_ranges() {
        let ixp = Cpu::parse("ixp1200").unwrap();
        assert_eq!(ixp.len(), 5);
        assert_eq!((ixp[0].tmem_ns, ixp[4].tmem_ns), (4.0, 170.0));
        assert_eq!(ixp[0].name, "ixp1200,tmem=4ns");
        // 233 instructions at 233 MHz: 1 us; plus 10 accesses of 4 ns.
        assert!((ixp[0].delay_ns(1500.0, 233.0, 10.0, 3.0) - 1040.0).abs() < 1e-9);
        let one = Cpu::parse("f=2.6GHz,cpi=0.5,tmem=1ns,t0=100ns").unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(
            (one[0].f_mhz, one[0].cpi, one[0].t0_ns),
            (2600.0, 0.5, 100.0)
        );
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (spec, want) in [
            ("tmem=4ns", "no clock"),
            ("f=233", "give a unit"),
            ("f=233MHz,tmem=9ns..4ns", "backwards"),
            ("f=233MHz,x=1", "expected f, cpi"),
            ("f=233MHz,cpi=-1", "positive"),
            ("f=233MHz,tmem", "KEY=VALUE"),
        ] {
            let e = Cpu::parse(spec).unwrap_err();
            assert!(e.to_string().contains(want), "{spec}: {e}");
        }
    }

    #[test]
    fn a_processor_that_cannot_predict_is_refused() {
        let good = Cpu::parse("f=233MHz,tmem=4ns").unwrap().remove(0);
        assert!(good.check().is_ok());
        for (edit, want) in [
            (
                Cpu {
                    f_mhz: 0.0,
                    ..good.clone()
                },
                "`f_mhz` is 0",
            ),
            (
                Cpu {
                    cpi: f64::NAN,
                    ..good.clone()
                },
                "`cpi` is NaN",
            ),
            (
                Cpu {
                    tmem_ns: -1.0,
                    ..good.clone()
                },
                "`tmem_ns` is -1",
            ),
            (
                Cpu {
                    thelper_ns: f64::INFINITY,
                    ..good.clone()
                },
                "`thelper_ns` is inf",
            ),
        ] {
            let e = edit.check().unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}

/// A processor description [`Cpu::parse`] does not take; the message
/// names the field and what it expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CpuSpecError(pub String);
