//! The x86-64 JIT (docs/jit.md).
//!
//! `codegen.rs` turns a program's pre-decoded slots into machine code
//! (through the instruction forms of `x64.rs`); the driver here runs it.
//! Native code covers arithmetic, jumps, `lddw`, loads, stores, atomics
//! and helper calls; at an instruction that needs the VM's state machine
//! (callbacks, local calls and their exits, tail calls, legacy packet
//! loads), or when a check or the
//! budget refuses, the code leaves with `pc` set and the interpreter runs
//! that one instruction on the same state ([`Machine`]). So both engines
//! share one implementation of everything but the straight-line code, and
//! agree on results, errors and counts by construction there.

mod codegen;
mod x64;

use crate::helpers::HelperTable;
use crate::interp::{Machine, call_helper};
use crate::memory::{Access, Memory};
use crate::{RunResult, Vm, VmError, VmErrorKind};

pub use codegen::Code;

/// Called by checked code before every load and store: 0 if the access is
/// allowed (and then counted per region when counting), 1 if not.
extern "sysv64" fn check_access(m: *mut Machine, addr: u64, spec: u64) -> u64 {
    // SAFETY: native code passes the machine the driver entered it with,
    // whose `mem` the driver set to the run's memory just before; no Rust
    // reference to either is live while native code runs.
    let m = unsafe { &mut *m };
    // SAFETY: as above.
    let mem = unsafe { &*m.mem };
    let access = if spec & 0x100 != 0 {
        Access::Write
    } else {
        Access::Read
    };
    match mem.find(addr, spec & 0xff, access) {
        Some(kind) => {
            if m.count {
                let s = &mut m.stats;
                match access {
                    Access::Read => s.loads[kind as usize] += 1,
                    Access::Write => s.stores[kind as usize] += 1,
                }
                // An atomic reads as it writes.
                if spec & 0x200 != 0 {
                    s.loads[kind as usize] += 1;
                }
            }
            0
        }
        None => 1,
    }
}

/// What a native helper call needs, for one run.
struct Host<E> {
    helpers: *const HelperTable<E>,
    env: *mut E,
    mem: *mut Memory<'static>,
}

/// A helper call from native code (`call_native::<E>(machine, id)`):
/// arguments in `m.r[1..6]`, the result in `m.r[0]`. Returns 0, or 1 with
/// `m.error` set when the helper failed (the run ends there).
extern "sysv64" fn call_native<E>(m: *mut Machine, id: u64) -> u64 {
    // SAFETY: native code passes the machine the driver entered it with;
    // its `host` was set by the driver to a `Host<E>` of this run whose
    // pointers come from the driver's exclusive borrows, unused while
    // native code runs.
    let m = unsafe { &mut *m };
    // SAFETY: as above.
    let host = unsafe { &mut *m.host.cast::<Host<E>>() };
    m.stats.helper_calls += 1;
    let args = [m.r[1], m.r[2], m.r[3], m.r[4], m.r[5]];
    // SAFETY: as above.
    let (helpers, env, mem) = unsafe { (&*host.helpers, &mut *host.env, &mut *host.mem) };
    match call_helper(helpers, id, args, None, &mut m.r, env, mem) {
        Ok(None) => 0,
        Ok(Some(_)) => {
            // Helpers that call back are left to the interpreter
            // (`isa::calls_back`); another one would be a table error.
            m.error = Some(VmErrorKind::Helper {
                name: isa::helper_name(id as i64).unwrap_or_else(|| "?".into()),
                message: "asked for a callback from native code".into(),
            });
            1
        }
        Err(kind) => {
            m.error = Some(kind);
            1
        }
    }
}

/// Machine code for a VM's programs: with checks (used for counting too)
/// and, for verified programs, without.
pub(crate) struct Jit {
    checked: Vec<Code>,
    fast: Option<Vec<Code>>,
}

/// Why the JIT is not available.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    #[error("mapping memory for JIT code: {0}")]
    Memory(#[from] std::io::Error),
}

impl Jit {
    pub fn compile<E>(programs: &[crate::Program]) -> Result<Jit, JitError> {
        let checked = programs
            .iter()
            .map(|p| codegen::compile(p.slots(), true, call_native::<E> as *const ()))
            .collect::<Result<_, _>>()?;
        Ok(Jit {
            checked,
            fast: None,
        })
    }

    /// Bytes of machine code of the checked variant.
    pub fn code_bytes(&self) -> usize {
        self.checked.iter().map(Code::len).sum()
    }
}

impl<E> Vm<E> {
    /// Runs the programs in native code from now on, with the checked
    /// variant unless the VM is trusted (then the unchecked one).
    pub fn enable_jit(&mut self) -> Result<(), JitError> {
        if self.jit.is_none() {
            self.jit = Some(Jit::compile::<E>(&self.programs)?);
        }
        Ok(())
    }

    /// Back to the interpreter.
    pub fn disable_jit(&mut self) {
        self.jit = None;
    }

    pub fn jit_enabled(&self) -> bool {
        self.jit.is_some()
    }

    /// Bytes of machine code the JIT made (checked variant), if enabled.
    pub fn jit_code_bytes(&self) -> Option<usize> {
        self.jit.as_ref().map(Jit::code_bytes)
    }

    pub(crate) fn execute_jit<const COUNT: bool, const CHECK: bool>(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Result<RunResult, VmError> {
        let mut jit = self.jit.take().expect("the JIT is enabled");
        if !(CHECK || COUNT) && jit.fast.is_none() {
            // If no memory is left for more code, the checked variant runs.
            jit.fast = (self.programs.iter())
                .map(|p| codegen::compile(p.slots(), false, call_native::<E> as *const ()))
                .collect::<Result<Vec<_>, _>>()
                .ok();
        }
        let result = match &jit.fast {
            Some(fast) if !(CHECK || COUNT) => self.drive::<false, false>(fast, env, mem, args),
            _ => self.drive::<COUNT, true>(&jit.checked, env, mem, args),
        };
        self.jit = Some(jit);
        result
    }

    /// Native code until it leaves, one interpreted instruction, and again.
    fn drive<const COUNT: bool, const CHECK: bool>(
        &mut self,
        codes: &[Code],
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Result<RunResult, VmError> {
        let mut m = self.start(mem, args);
        m.count = COUNT;
        let result = self.drive_from::<COUNT, CHECK>(codes, env, mem, &mut m);
        self.machine = Some(m);
        result
    }

    fn drive_from<const COUNT: bool, const CHECK: bool>(
        &mut self,
        codes: &[Code],
        env: &mut E,
        mem: &mut Memory<'_>,
        m: &mut Machine,
    ) -> Result<RunResult, VmError> {
        loop {
            if let Some((enter, at)) = codes[m.cur].entry(m.pc) {
                let mut host = Host {
                    helpers: &self.helpers,
                    env,
                    mem: (mem as *mut Memory<'_>).cast::<Memory<'static>>(),
                };
                m.host = (&mut host as *mut Host<E>).cast::<()>();
                m.mem = (mem as *const Memory<'_>).cast::<Memory<'static>>();
                // SAFETY: `at` is a block of `codes[cur]`, compiled from the
                // running program; checked code checks every access against
                // `mem`, unchecked code runs only for verified programs
                // (`Vm::trust_verified`).
                unsafe { enter(m, at) };
                m.host = std::ptr::null_mut();
                if let Some(kind) = m.error.take() {
                    return Err(self.fail(m.cur, m.pc, kind));
                }
                if m.done != 0 {
                    m.stats.insns = self.budget - m.left;
                    return Ok(RunResult {
                        r0: m.r[0],
                        stats: m.stats,
                    });
                }
            }
            if let Some(r0) = self.resume::<COUNT, CHECK, true>(env, mem, m)? {
                return Ok(RunResult { r0, stats: m.stats });
            }
        }
    }
}
