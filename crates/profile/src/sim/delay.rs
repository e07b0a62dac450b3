//! What the router spends on a packet: nothing, a constant, or a fitted
//! model `t(l) = cpu.delay_ns(l, alpha + beta * l, gamma + delta * l,
//! helpers + helpers_per_byte * l)`,
//! from a [`CostModel`] or from the JSON file [`crate::model_json`] writes.
//!
//! A model's delay is rounded to the nearest nanosecond and is never
//! negative (a line fitted over 64 to 1500 bytes and read at a 40-byte
//! ACK may fall below zero; it is then 0).

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::cpu::Cpu;
use crate::model::CostModel;

/// The router's time for one packet, by its length.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProcessingDelay {
    /// The packet goes straight to its output queue.
    None,
    /// The same time for every packet.
    Constant { ns: u64 },
    /// A program's cost model on a processor.
    Model(ModelDelay),
}

impl ProcessingDelay {
    /// The delay of a packet of `len` bytes, in ns.
    pub fn ns(&self, len: u32) -> u64 {
        match self {
            ProcessingDelay::None => 0,
            ProcessingDelay::Constant { ns } => *ns,
            ProcessingDelay::Model(m) => m.ns(len),
        }
    }

    /// A short name: `none`, `constant 1.5 ms`, `xdp_router on ixp1200,tmem=4ns`.
    pub fn label(&self) -> String {
        match self {
            ProcessingDelay::None => "none".into(),
            ProcessingDelay::Constant { ns } => format!("constant {}", time(*ns)),
            ProcessingDelay::Model(m) => format!("{} on {}", m.program, m.cpu.name),
        }
    }
}

/// `ns` in the largest unit that leaves it at least 1: `500 ns`, `1.5 ms`.
fn time(ns: u64) -> String {
    let (x, unit) = match ns {
        0..1_000 => return format!("{ns} ns"),
        1_000..1_000_000 => (ns as f64 / 1e3, "us"),
        1_000_000..1_000_000_000 => (ns as f64 / 1e6, "ms"),
        _ => (ns as f64 / 1e9, "s"),
    };
    format!("{} {unit}", (x * 1e3).round() / 1e3)
}

/// `t(l) = cpu.delay_ns(l, alpha + beta * l, gamma + delta * l, helpers +
/// helpers_per_byte * l)`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelDelay {
    pub program: String,
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
    pub delta: f64,
    /// Helper calls per packet (for a processor with a helper term).
    pub helpers: f64,
    pub helpers_per_byte: f64,
    pub cpu: Cpu,
}

impl ModelDelay {
    pub fn from_cost_model(m: &CostModel, cpu: Cpu) -> ModelDelay {
        ModelDelay {
            program: m.program.clone(),
            alpha: m.alpha(),
            beta: m.beta(),
            gamma: m.gamma(),
            delta: m.delta(),
            helpers: m.helpers.line.intercept,
            helpers_per_byte: m.helpers.line.slope,
            cpu,
        }
    }

    /// The delay of a packet of `len` bytes, in whole ns.
    pub fn ns(&self, len: u32) -> u64 {
        let l = f64::from(len);
        let t = self.cpu.delay_ns(
            l,
            self.alpha + self.beta * l,
            self.gamma + self.delta * l,
            self.helpers + self.helpers_per_byte * l,
        );
        if t.is_finite() && t > 0.0 {
            t.round() as u64
        } else {
            0
        }
    }

    /// Reads a model file written by `sluice profile --model`. `cpu`
    /// picks a processor by its name in the file's `cpus` (the first when
    /// `None`); a name not in the file may be a processor spec of its own
    /// (`f=1GHz,tmem=10ns`, see [`Cpu::parse`]).
    pub fn read(path: &Path, cpu: Option<&str>) -> Result<ModelDelay, ModelFileError> {
        let file = path.display().to_string();
        let text = capture::read_whole_text(path, capture::Limit::TEXT, None).map_err(|e| {
            ModelFileError {
                file: file.clone(),
                what: e.reason.to_string(),
            }
        })?;
        ModelDelay::from_json(&text, &file, cpu)
    }

    /// [`ModelDelay::read`] on text; `file` names it in errors.
    pub fn from_json(
        text: &str,
        file: &str,
        cpu: Option<&str>,
    ) -> Result<ModelDelay, ModelFileError> {
        let err = |what: String| ModelFileError {
            file: file.to_string(),
            what,
        };
        let v: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON ({e})")))?;
        if !v.is_object() {
            return Err(err(format!(
                "expected an object with fields program, alpha, beta, gamma, delta and cpus, found {}",
                kind(&v)
            )));
        }
        let program = match field(&v, "program", "program").map_err(err)? {
            Value::String(s) => s.clone(),
            other => {
                return Err(err(format!(
                    "field `program`: expected a string, found {}",
                    kind(other)
                )));
            }
        };
        let coef = |name: &str| number(&v, name, name, |x| x.is_finite(), "a number").map_err(err);
        let (alpha, beta, gamma, delta) = (
            coef("alpha")?,
            coef("beta")?,
            coef("gamma")?,
            coef("delta")?,
        );
        // Files from before the helper term have none: 0 calls.
        let optional = |name: &str| match v.get(name) {
            None => Ok(0.0),
            Some(_) => coef(name),
        };
        let (helpers, helpers_per_byte) = (optional("helpers")?, optional("helpers_per_byte")?);
        let cpus = match field(&v, "cpus", "cpus").map_err(err)? {
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, c)| processor(c, i))
                .collect::<Result<Vec<Cpu>, String>>()
                .map_err(err)?,
            other => {
                return Err(err(format!(
                    "field `cpus`: expected an array of processors, found {}",
                    kind(other)
                )));
            }
        };
        let cpu = match cpu {
            None => cpus
                .first()
                .cloned()
                .ok_or_else(|| err("field `cpus` is empty: profile with --cpu".into()))?,
            Some(name) => match cpus.iter().find(|c| c.name == name) {
                Some(c) => c.clone(),
                None => match Cpu::parse(name) {
                    Ok(mut one) if one.len() == 1 => one.remove(0),
                    _ => {
                        let names: Vec<&str> = cpus.iter().map(|c| c.name.as_str()).collect();
                        return Err(err(format!(
                            "no processor `{name}` in field `cpus` (it has: {}), and `{name}` is not a processor spec of one latency",
                            names.join("; ")
                        )));
                    }
                },
            },
        };
        Ok(ModelDelay {
            program,
            alpha,
            beta,
            gamma,
            delta,
            helpers,
            helpers_per_byte,
            cpu,
        })
    }
}

/// A model file that cannot be used: the file, and what is wrong in it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {what}")]
pub struct ModelFileError {
    pub file: String,
    pub what: String,
}

fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("a string ({s:?})"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// `obj[key]`, or an error naming `path` (`cpus[1].f_mhz`).
fn field<'v>(obj: &'v Value, key: &str, path: &str) -> Result<&'v Value, String> {
    obj.get(key)
        .ok_or_else(|| format!("field `{path}` is missing"))
}

fn number(
    obj: &Value,
    key: &str,
    path: &str,
    ok: impl Fn(&f64) -> bool,
    want: &str,
) -> Result<f64, String> {
    let v = field(obj, key, path)?;
    v.as_f64()
        .filter(ok)
        .ok_or_else(|| format!("field `{path}`: expected {want}, found {}", kind(v)))
}

/// `cpus[i]`: the fields of [`Cpu`]; `t0_ns`, `tbyte_ns` and `thelper_ns`
/// may be left out.
fn processor(c: &Value, i: usize) -> Result<Cpu, String> {
    let at = |k: &str| format!("cpus[{i}].{k}");
    if !c.is_object() {
        return Err(format!(
            "field `cpus[{i}]`: expected a processor object, found {}",
            kind(c)
        ));
    }
    let name = match field(c, "name", &at("name"))? {
        Value::String(s) => s.clone(),
        other => {
            return Err(format!(
                "field `{}`: expected a string, found {}",
                at("name"),
                kind(other)
            ));
        }
    };
    let positive = |x: &f64| x.is_finite() && *x > 0.0;
    let non_negative = |x: &f64| x.is_finite() && *x >= 0.0;
    let optional = |k: &str| match c.get(k) {
        None => Ok(0.0),
        Some(_) => number(c, k, &at(k), non_negative, "a number >= 0"),
    };
    Ok(Cpu {
        name,
        f_mhz: number(c, "f_mhz", &at("f_mhz"), positive, "a positive number")?,
        cpi: number(c, "cpi", &at("cpi"), positive, "a positive number")?,
        tmem_ns: number(c, "tmem_ns", &at("tmem_ns"), non_negative, "a number >= 0")?,
        t0_ns: optional("t0_ns")?,
        tbyte_ns: optional("tbyte_ns")?,
        thelper_ns: optional("thelper_ns")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{"program": "p", "alpha": 233, "beta": 0.5, "gamma": 10, "delta": 0,
        "cpus": [{"name": "a", "f_mhz": 233, "cpi": 1, "tmem_ns": 4},
                 {"name": "b", "f_mhz": 466, "cpi": 1, "tmem_ns": 0, "t0_ns": 100, "tbyte_ns": 0}]}"#;

    #[test]
    fn a_model_file_gives_the_delay_per_length() {
        let m = ModelDelay::from_json(FILE, "m.json", None).unwrap();
        assert_eq!(m.cpu.name, "a");
        // 233 + 0.5 * 466 = 466 instructions at 233 MHz: 2000 ns; 40 ns of memory.
        assert_eq!(m.ns(466), 2040);
        let b = ModelDelay::from_json(FILE, "m.json", Some("b")).unwrap();
        assert_eq!(b.ns(466), 1100);
        // Two helper calls of 50 ns each on a processor with a helper term.
        let with_helpers = FILE
            .replacen(r#""delta": 0,"#, r#""delta": 0, "helpers": 2,"#, 1)
            .replacen(
                r#""tbyte_ns": 0}"#,
                r#""tbyte_ns": 0, "thelper_ns": 50}"#,
                1,
            );
        let h = ModelDelay::from_json(&with_helpers, "m.json", Some("b")).unwrap();
        assert_eq!(h.ns(466), 1200);
        // Not in the file, but a processor spec: 1 instruction per ns.
        let c = ModelDelay::from_json(FILE, "m.json", Some("f=1GHz,tmem=1ns")).unwrap();
        assert_eq!(c.ns(0), 233 + 10);
        let d = ProcessingDelay::Model(m);
        assert_eq!(d.label(), "p on a");
        assert_eq!(ProcessingDelay::Constant { ns: 7 }.ns(1500), 7);
        let label = |ns| ProcessingDelay::Constant { ns }.label();
        assert_eq!(label(999), "constant 999 ns");
        assert_eq!(label(1_500_000), "constant 1.5 ms");
        assert_eq!(label(1_234_567), "constant 1.235 ms");
        assert_eq!(label(2_000_000_000), "constant 2 s");
        assert_eq!(ProcessingDelay::None.ns(1500), 0);
    }

    #[test]
    fn a_negative_line_is_no_delay() {
        let mut m = ModelDelay::from_json(FILE, "m.json", None).unwrap();
        m.alpha = -1e6;
        assert_eq!(m.ns(40), 0);
    }

    #[test]
    fn bad_files_name_the_field() {
        let with = |from: &str, to: &str| FILE.replacen(from, to, 1);
        for (text, want) in [
            ("{".to_string(), "m.json: not JSON"),
            ("[1]".to_string(), "expected an object"),
            (
                with(r#""beta": 0.5"#, r#""beta": "x""#),
                "field `beta`: expected a number, found a string",
            ),
            (with(r#""alpha": 233, "#, ""), "field `alpha` is missing"),
            (
                with(r#""gamma": 10"#, r#""gamma": null"#),
                "field `gamma`: expected a number, found null",
            ),
            (
                with(r#""program": "p""#, r#""program": 3"#),
                "field `program`: expected a string",
            ),
            (
                with(r#""f_mhz": 466"#, r#""f_mhz": -1"#),
                "field `cpus[1].f_mhz`: expected a positive number",
            ),
            (
                with(r#""cpi": 1, "tmem_ns": 4"#, r#""tmem_ns": 4"#),
                "field `cpus[0].cpi` is missing",
            ),
            (
                with(r#""t0_ns": 100"#, r#""t0_ns": true"#),
                "field `cpus[1].t0_ns`: expected a number >= 0",
            ),
            (
                with(r#""name": "a""#, r#""name": 1"#),
                "field `cpus[0].name`: expected a string",
            ),
        ] {
            let e = ModelDelay::from_json(&text, "m.json", None)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("m.json: "), "{e}");
            assert!(e.contains(want), "{want}: {e}");
        }
        let e = ModelDelay::from_json(FILE, "m.json", Some("zzz"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no processor `zzz` in field `cpus` (it has: a; b)"),
            "{e}"
        );
        let empty =
            r#"{"program": "p", "alpha": 1, "beta": 0, "gamma": 0, "delta": 0, "cpus": []}"#;
        let e = ModelDelay::from_json(empty, "m.json", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("field `cpus` is empty"), "{e}");
        let e = ModelDelay::read(Path::new("/nonexistent/m.json"), None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/nonexistent/m.json: "), "{e}");
    }
}
