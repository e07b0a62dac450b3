//! The conformance plugin protocol: the program arrives as hex bytes on
//! stdin (or an ELF object with `--elf`), optional memory as hex bytes in
//! an argument; the plugin prints r0 in hex, or an error on stderr with a
//! non-zero exit status.

use vm::{HelperTable, Memory, Program, RegionKind, SimEnv, Vm, register_basic};

use crate::data::parse_hex_bytes;

/// A decoded plugin invocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PluginRequest {
    pub program: Vec<u8>,
    pub mem: Vec<u8>,
    pub elf: bool,
    /// Count memory accesses too (`--counting`); the result is the same.
    pub counting: bool,
    /// Which engine runs the program (`--jit`, `--jit-fast`).
    pub engine: Engine,
}

/// The engine of a plugin run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    #[default]
    Interpreter,
    /// The JIT with run-time checks.
    Jit,
    /// The JIT without checks. The suite's programs are not verified, so
    /// the plugin first runs the checked JIT: only a run that succeeded
    /// (every access in bounds for this input) is repeated unchecked on a
    /// fresh copy of the memory, and both must give the same r0.
    JitFast,
}

#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{0}")]
pub struct PluginError(pub String);

impl PluginRequest {
    /// Reads the runner's arguments and stdin. Arguments that start with
    /// `-` are options (the runner may pass several in one argument); any
    /// other argument is the memory, as hex.
    pub fn from_args(args: &[String], stdin: &[u8]) -> Result<PluginRequest, PluginError> {
        let mut req = PluginRequest::default();
        let mut mem_seen = false;
        for arg in args {
            if arg.trim_start().starts_with('-') {
                for opt in arg.split_whitespace() {
                    match opt {
                        "--elf" => req.elf = true,
                        "--counting" => req.counting = true,
                        "--jit" => req.engine = Engine::Jit,
                        "--jit-fast" => req.engine = Engine::JitFast,
                        other => {
                            return Err(PluginError(format!(
                                "unknown plugin option `{other}` (known: --elf, --counting, --jit, --jit-fast)"
                            )));
                        }
                    }
                }
            } else if !arg.trim().is_empty() {
                if mem_seen {
                    return Err(PluginError("more than one memory argument".into()));
                }
                mem_seen = true;
                req.mem = parse_hex_bytes(arg)
                    .map_err(|e| PluginError(format!("memory argument: {e}")))?;
            }
        }
        req.program = if req.elf && obj::is_elf(stdin) {
            stdin.to_vec()
        } else {
            let text = std::str::from_utf8(stdin)
                .map_err(|_| PluginError("stdin is not hex text".into()))?;
            parse_hex_bytes(text).map_err(|e| PluginError(format!("program on stdin: {e}")))?
        };
        Ok(req)
    }
}

/// Runs one request: r0 on success.
pub fn run_plugin(req: &PluginRequest) -> Result<u64, PluginError> {
    let err = |e: &dyn std::fmt::Display| PluginError(e.to_string());
    let code = if req.elf {
        let object = obj::ElfObject::parse(&req.program).map_err(|e| err(&e))?;
        let first = object
            .programs()
            .first()
            .ok_or_else(|| PluginError("the ELF object has no executable section".into()))?;
        first.bytes.clone()
    } else {
        req.program.clone()
    };
    if code.is_empty() {
        return Err(PluginError("no program on stdin".into()));
    }
    let program = Program::from_bytes(&code).map_err(|e| err(&e))?;
    let mut helpers = HelperTable::new();
    register_basic(&mut helpers);
    let mut machine = Vm::new(program, &helpers).map_err(|e| err(&e))?;
    if req.engine != Engine::Interpreter {
        enable_jit(&mut machine)?;
    }
    let run = |machine: &mut Vm<SimEnv>| {
        let mut mem_buf = req.mem.clone();
        let len = mem_buf.len() as u64;
        let mut mem = Memory::new();
        let addr = mem.add(RegionKind::Context, &mut mem_buf);
        let mut env = SimEnv::default();
        let args = [addr, len, 0, 0, 0];
        let out = if req.counting {
            machine.run_counting(&mut env, &mut mem, args)
        } else {
            machine.run(&mut env, &mut mem, args)
        };
        out.map(|o| o.r0).map_err(|e| err(&e))
    };
    let r0 = run(&mut machine)?;
    if req.engine == Engine::JitFast {
        // SAFETY: the checked run of this same program on this same input
        // succeeded, so the unchecked run takes the same path and makes
        // the same (in-bounds) accesses.
        unsafe { machine.trust_verified() };
        let fast = run(&mut machine)?;
        if fast != r0 {
            return Err(PluginError(format!(
                "the unchecked JIT gives r0 = {fast:#x}, the checked one {r0:#x}"
            )));
        }
    }
    Ok(r0)
}

#[cfg(target_arch = "x86_64")]
fn enable_jit(machine: &mut Vm<SimEnv>) -> Result<(), PluginError> {
    machine.enable_jit().map_err(|e| PluginError(e.to_string()))
}

#[cfg(not(target_arch = "x86_64"))]
fn enable_jit(_: &mut Vm<SimEnv>) -> Result<(), PluginError> {
    Err(PluginError("the JIT needs an x86-64 host".into()))
}
