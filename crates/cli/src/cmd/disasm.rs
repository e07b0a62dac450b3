use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use crate::input;
use crate::report::print_json;

/// Disassemble raw bytecode (FILE.bin) or every program section of an ELF
/// object (FILE.o). The text re-assembles to the same bytes.
#[derive(clap::Args)]
pub struct Args {
    /// Raw bytecode, or an ELF object (every executable section)
    file: PathBuf,
    /// Only this ELF section
    #[arg(long)]
    section: Option<String>,
    /// Print jump targets as relative offsets instead of labels
    #[arg(long)]
    no_labels: bool,
    /// Append slot index, bytes and helper names as comments
    #[arg(short, long)]
    annotate: bool,
    /// Print JSON: sections with their instructions
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct JsonInsn {
    pc: usize,
    bytes: String,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    helper: Option<String>,
}

#[derive(Serialize)]
struct JsonSection {
    section: Option<String>,
    functions: Vec<(String, usize)>,
    insns: Vec<JsonInsn>,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let programs = match &a.section {
        Some(name) => vec![input::load_one(&a.file, Some(name))?],
        None => input::load_all(&a.file)?,
    };
    if a.json {
        let sections: Vec<JsonSection> = programs
            .iter()
            .map(|p| JsonSection {
                section: p.section.clone(),
                functions: p.functions.clone(),
                insns: isa::disasm::list(&p.insns)
                    .into_iter()
                    .map(|l| JsonInsn {
                        pc: l.pc,
                        bytes: l.bytes.iter().map(|b| format!("{b:02x}")).collect(),
                        text: l.text,
                        helper: l.helper,
                    })
                    .collect(),
            })
            .collect();
        print_json(&serde_json::json!({ "sections": sections }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = isa::ListingOptions {
        labels: !a.no_labels,
        annotate: a.annotate,
    };
    for (i, p) in programs.iter().enumerate() {
        if let Some(name) = &p.section {
            if i > 0 {
                out!();
            }
            out!("# section {name}: {} instructions", p.insns.len());
            for (f, at) in &p.functions {
                out!("#   function {f} at {at}");
            }
        }
        out_part!("{}", isa::listing(&p.insns, &opts));
    }
    Ok(ExitCode::SUCCESS)
}
