use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use vm::{HelperTable, Memory, Program, RegionKind, SimEnv, Vm, register_basic};

use crate::input;
use crate::report::{CostReport, accesses_line, print_json};

/// Run a program once: r1 points to the given memory (the context), r2
/// holds its length. Prints r0 and what the run cost.
#[derive(clap::Args)]
pub struct Args {
    /// Program: assembly (.s), raw bytecode, or an ELF object
    file: PathBuf,
    /// ELF section to run
    #[arg(long)]
    section: Option<String>,
    /// Memory for r1 as hex bytes, e.g. "00 01 02"
    #[arg(long, conflicts_with = "mem_file")]
    mem: Option<String>,
    /// Memory for r1 from a file
    #[arg(long)]
    mem_file: Option<PathBuf>,
    /// Instruction budget
    #[arg(long, default_value_t = vm::DEFAULT_BUDGET)]
    budget: u64,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct JsonRun {
    r0: u64,
    #[serde(flatten)]
    cost: CostReport,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let code = input::load_one(&a.file, a.section.as_deref())?;
    let mut memory = match (&a.mem, &a.mem_file) {
        (Some(hex), _) => conformance::parse_hex_bytes(hex).map_err(|e| format!("--mem: {e}"))?,
        (_, Some(path)) => input::read(path)?,
        _ => Vec::new(),
    };
    let program = Program::new(code.insns).map_err(|e| e.to_string())?;
    let mut helpers = HelperTable::new();
    register_basic(&mut helpers);
    let mut machine = Vm::new(program, &helpers).map_err(|e| e.to_string())?;
    machine.set_budget(a.budget);

    let len = memory.len() as u64;
    let mut mem = Memory::new();
    let addr = mem.add(RegionKind::Context, &mut memory);
    let out = machine
        .run_counting(&mut SimEnv::default(), &mut mem, [addr, len, 0, 0, 0])
        .map_err(|e| e.to_string());
    let out = match out {
        Ok(out) => out,
        Err(e) if a.json => {
            print_json(&serde_json::json!({ "error": e }))?;
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e),
    };
    if a.json {
        print_json(&JsonRun {
            r0: out.r0,
            cost: CostReport::new(&out.stats),
        })?;
    } else {
        out!("r0 = {:#x} ({})", out.r0, out.r0 as i64);
        out!("instructions: {}", out.stats.insns);
        out!("helper calls: {}", out.stats.helper_calls);
        out!("memory: {}", accesses_line(&out.stats));
    }
    Ok(ExitCode::SUCCESS)
}
