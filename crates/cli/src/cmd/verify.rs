//! `sluice verify`: sluice's verifier on every program of an object, with
//! the kernel's verdict and figures beside it when the kernel is at hand.

use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use verifier::{SafetyRule, VerifyOptions};

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
struct KernelReport {
    verdict: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    insns_processed: Option<u64>,
    micros: Option<u64>,
}

#[derive(Serialize)]
struct ProgramReport {
    name: String,
    section: String,
    verdict: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    insn: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<SafetyRule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    registers: Option<String>,
    insns_processed: usize,
    states: usize,
    stack_depth: usize,
    micros: u128,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel: Option<KernelReport>,
    #[serde(skip)]
    disasm: Option<String>,
    #[serde(skip)]
    source: Option<String>,
    #[serde(skip)]
    log: Vec<String>,
}

#[derive(Serialize)]
struct Report {
    object: String,
    programs: Vec<ProgramReport>,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let name = a.object.display().to_string();
    // The values programs will see: global data after --set, map sizes
    // after --map-size.
    let source = engine::ObjectSource::Path(a.object.clone());
    let v = engine::Verifiable::load(&source, &a.settings.spec()).map_err(|e| e.to_string())?;
    let (object, maps, defs) = (&v.object, &v.maps, &v.defs);
    let data_of = |i: usize| v.data_of(i);
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
    let ask_kernel = !a.no_kernel && kernel::privileged();
    let mut reports = Vec::new();
    for p in programs {
        let vopts = VerifyOptions {
            privileged: !a.unprivileged,
            log: a.log,
            helpers: runtime::helpers::ids_for(&p.kind),
            ..VerifyOptions::default()
        };
        let r = verifier::verify(p, maps, &vopts);
        let mut pr = ProgramReport {
            name: p.name.clone(),
            section: p.section.clone(),
            verdict: "accept",
            insn: None,
            line: None,
            rule: None,
            reason: None,
            kernel_message: None,
            registers: None,
            insns_processed: r.insns_processed,
            states: r.states,
            stack_depth: r.stack_depth,
            micros: r.micros,
            kernel: None,
            disasm: None,
            source: None,
            log: r.log,
        };
        if let Err(e) = &r.result {
            pr.verdict = if e.rule == SafetyRule::Unsupported {
                "unsupported"
            } else {
                "reject"
            };
            pr.insn = Some(e.insn);
            pr.rule = Some(e.rule);
            pr.kernel_message = Some(e.kernel.clone());
            pr.registers = (!e.state.is_empty()).then(|| e.state.clone());
            let mut reason = e.reason.clone();
            if let Some(origin) = e.origin
                && let Some(l) = p.line_at(origin)
            {
                reason.push_str(&format!(
                    " (the value comes from insn {origin}, {}:{})",
                    l.file, l.line
                ));
            }
            pr.reason = Some(reason);
            if let Some(l) = p.line_at(e.insn) {
                pr.line = Some(format!("{}:{}", l.file, l.line));
                pr.source = Some(l.source.trim().to_string());
            }
            pr.disasm = verifier::insn_at(&p.insns, e.insn);
        }
        if ask_kernel && p.kind.is_runnable() {
            pr.kernel = Some(
                match kernel::verify::verify_program(p, defs, object.btf.as_ref(), &data_of) {
                    Ok(v) => KernelReport {
                        verdict: if v.accepted { "accept" } else { "reject" },
                        message: (!v.accepted).then(|| v.reason().to_string()),
                        insns_processed: v.insns_processed,
                        micros: v.micros,
                    },
                    Err(e) => KernelReport {
                        verdict: "error",
                        message: Some(e.to_string()),
                        insns_processed: None,
                        micros: None,
                    },
                },
            );
        }
        reports.push(pr);
    }
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

fn print_text(name: &str, reports: &[ProgramReport], log: bool) {
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
            let agree = match (r.verdict, k.verdict) {
                ("accept", "accept") | ("reject", "reject") => " (agrees)",
                (_, "error") | ("unsupported", _) => "",
                _ => " (DISAGREES)",
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
