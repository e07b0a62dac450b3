//! The fitted model as a small file a simulator reads: JSON (the four
//! coefficients, their fits, and the delay per length for each processor)
//! and a CSV table (one row per packet length).

use serde_json::{Value, json};

use crate::cpu::Cpu;
use crate::model::CostModel;

/// `{program, alpha, beta, gamma, delta, r2_insns, r2_accesses (per packet),
/// r2_insns_means, r2_accesses_means (per length), linear,
/// cpus: [...], lengths: [{len, packets, insns, accesses, insns_model,
/// accesses_model, delay_ns: {cpu: ns}}]}`.
pub fn model_json(m: &CostModel, cpus: &[Cpu]) -> Value {
    let lengths: Vec<Value> = m
        .rows
        .iter()
        .map(|r| {
            let (i, a) = m.predict(f64::from(r.len));
            let delays: serde_json::Map<String, Value> = cpus
                .iter()
                .map(|c| (c.name.clone(), json!(m.delay_ns(c, f64::from(r.len)))))
                .collect();
            json!({
                "len": r.len,
                "packets": r.packets,
                "insns": r.insns_mean,
                "accesses": r.accesses_mean,
                "insns_model": i,
                "accesses_model": a,
                "delay_ns": delays,
            })
        })
        .collect();
    json!({
        "program": m.program,
        "alpha": m.alpha(),
        "beta": m.beta(),
        "gamma": m.gamma(),
        "delta": m.delta(),
        "helpers": m.helpers.line.intercept,
        "helpers_per_byte": m.helpers.line.slope,
        "r2_insns": m.insns.line.r2,
        "r2_accesses": m.accesses.line.r2,
        "r2_insns_means": m.insns.means.r2,
        "r2_accesses_means": m.accesses.means.r2,
        "linear": m.linear,
        "cpus": cpus,
        "lengths": lengths,
    })
}

/// `len,packets,insns,accesses,insns_model,accesses_model,delay_ns[CPU]...`
pub fn model_csv(m: &CostModel, cpus: &[Cpu]) -> String {
    let mut out = String::from("len,packets,insns,accesses,insns_model,accesses_model");
    for c in cpus {
        out += &format!(",delay_ns[{}]", c.name.replace(',', ";"));
    }
    out.push('\n');
    for r in &m.rows {
        let (i, a) = m.predict(f64::from(r.len));
        out += &format!(
            "{},{},{:.3},{:.3},{:.3},{:.3}",
            r.len, r.packets, r.insns_mean, r.accesses_mean, i, a
        );
        for c in cpus {
            out += &format!(",{:.3}", m.delay_ns(c, f64::from(r.len)));
        }
        out.push('\n');
    }
    out
}
