//! `sluice verify`: sluice's verifier on every program of an object, with
//! the kernel's verdict and figures beside it when the kernel is at hand.

use std::path::PathBuf;
use std::process::ExitCode;

use engine::{CheckOptions, ProgramVerdict};
use serde::Serialize;

use crate::report::print_json;
use crate::settings::ObjectSettings;

/// Check that a program is safe, as the kernel's verifier would, and say why not.
#[derive(clap::Args)]
pub struct Args {
    /// Object file built by clang -target bpf
    pub object: PathBuf,
    /// Verify only this program (default: all)
    #[arg(long)]
    pub prog: Option<String>,
    /// Print the whole walk, kernel-style
    #[arg(long)]
    pub log: bool,
    /// Check as an unprivileged loader (no CAP_PERFMON): pointer leaks and
    /// uninitialised stack reads are refused
    #[arg(long)]
    pub unprivileged: bool,
    /// Do not ask the running kernel for its verdict (it is asked when root)
    #[arg(long)]
    pub no_kernel: bool,
    #[command(flatten)]
    pub settings: ObjectSettings,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Report {
    object: String,
    programs: Vec<ProgramVerdict>,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let name = a.object.display().to_string();
    // The values programs will see: global data after --set, map sizes
    // after --map-size.
    let source = engine::ObjectSource::Path(a.object.clone());
    let v = engine::Verifiable::load(&source, &a.settings.spec()).map_err(|e| e.to_string())?;
    let object = &v.object;
    let programs: Vec<&obj::Program> = match &a.prog {
        Some(p) => vec![
            object
                .programs
                .iter()
                .find(|q| &q.name == p)
                .ok_or_else(|| {
                    let names: Vec<&str> =
                        object.programs.iter().map(|q| q.name.as_str()).collect();
                    format!(
                        "{name}: no program `{p}`; the object has: {}",
                        names.join(", ")
                    )
                })?,
        ],
        None => object.programs.iter().collect(),
    };
    let opts = CheckOptions {
        unprivileged: a.unprivileged,
        log: a.log,
        kernel: !a.no_kernel && engine::Verifiable::kernel_at_hand(),
    };
    let reports: Vec<ProgramVerdict> = programs.into_iter().map(|p| v.check(p, &opts)).collect();
    let rejected = reports.iter().any(|r| r.verdict == "reject");
    if a.json {
        print_json(&Report {
            object: name,
            programs: reports,
        })?;
    } else {
        print_text(&name, &reports, a.log);
    }
    Ok(if rejected {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn ms(micros: u128) -> String {
    format!("{:.2} ms", micros as f64 / 1000.0)
}

fn print_text(name: &str, reports: &[ProgramVerdict], log: bool) {
    out!("{name}");
    for r in reports {
        if log && !r.log.is_empty() {
            out!("--- {} ({}): walk ---", r.name, r.section);
            for l in &r.log {
                out!("{l}");
            }
            out!("---");
        }
        let verdict = r.verdict.to_uppercase();
        out!(
            "  {} ({}): {verdict}  {} insns processed, {} states, stack {} B, {}",
            r.name,
            r.section,
            r.insns_processed,
            r.states,
            r.stack_depth,
            ms(r.micros)
        );
        if let Some(insn) = r.insn {
            if let Some(d) = &r.disasm {
                out!("    at insn {insn}: {d}");
            }
            if let (Some(line), Some(src)) = (&r.line, &r.source) {
                out!("    source {line}: {src}");
            }
            if let Some(reason) = &r.reason {
                out!("    why: {reason}");
            }
            if let Some(k) = &r.kernel_message {
                out!("    kernel-style message: {}", k.replace('\n', " / "));
            }
            if let Some(regs) = &r.registers {
                out!("    state: {regs}");
            }
        }
        if let Some(k) = &r.kernel {
            let agree = match r.agrees() {
                Some(true) => " (agrees)",
                Some(false) => " (DISAGREES)",
                None => "",
            };
            let figures = match (k.insns_processed, k.micros) {
                (Some(n), Some(us)) => format!(", {n} insns processed, {}", ms(us as u128)),
                (Some(n), None) => format!(", {n} insns processed"),
                _ => String::new(),
            };
            out!("    kernel: {}{figures}{agree}", k.verdict.to_uppercase());
            if let Some(m) = &k.message {
                out!("      {m}");
            }
        }
    }
}
