//! The x86-64 JIT (docs/jit.md).
//!
//! `codegen.rs` turns a program's pre-decoded slots into machine code
//! (through the instruction forms of `x64.rs`); the driver here runs it.
//! Native code covers arithmetic, jumps, `lddw`, loads, stores, atomics,
//! helper calls, bpf-to-bpf calls and exits, and tail calls (the last three
//! through the Rust functions below, on the interpreter's own frames). At
//! an instruction that needs the interpreter's state machine (helpers with
//! callbacks, legacy packet loads), or when a check or the budget refuses,
//! the code leaves with `pc` set and the interpreter runs that one
//! instruction on the same state ([`Machine`]). So both engines share one
//! implementation of everything but the straight-line code, and agree on
//! results, errors and counts by construction there.

mod batch_code;
mod batch_run;
mod codegen;
mod frame;
mod x64;

use crate::helpers::HelperTable;
use crate::interp::{Machine, call_helper};
use crate::memory::{Access, Memory};
use crate::{TailCallFn, Vm, VmError, VmErrorKind};

pub use codegen::Code;
use codegen::Natives;

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
    if !m.count {
        return u64::from(mem.find(addr, spec & 0xff, access).is_none());
    }
    match mem.find_at(addr, spec & 0xff, access) {
        Some((kind, at)) => {
            let (s, place) = (&mut m.stats, &mut m.regions[at]);
            match access {
                Access::Read => {
                    s.loads[kind as usize] += 1;
                    place[0] += 1;
                }
                Access::Write => {
                    s.stores[kind as usize] += 1;
                    place[1] += 1;
                }
            }
            // An atomic reads as it writes.
            if spec & 0x200 != 0 {
                s.loads[kind as usize] += 1;
                place[0] += 1;
            }
            0
        }
        None => 1,
    }
}

/// What the Rust functions native code calls need, for one run.
struct Host<E> {
    helpers: *const HelperTable<E>,
    env: *mut E,
    mem: *mut Memory<'static>,
    /// The code of every program (calls and tail calls jump into it).
    codes: *const [Code],
    tail_calls: Option<TailCallFn<E>>,
}

impl<E> Host<E> {
    /// Where native code continues for `pc` of program `cur`: its address,
    /// or 1 when that slot has no native code (the interpreter runs it).
    fn continue_at(&self, cur: usize, pc: usize) -> u64 {
        // SAFETY: `codes` is the driver's borrow, live for the run.
        let codes = unsafe { &*self.codes };
        match codes[cur].entry(pc) {
            Some((_, at)) => at as u64,
            None => 1,
        }
    }
}

/// The machine and its host as native code passes them.
///
/// # Safety
/// `m` must be the machine the driver entered native code with; its
/// `host` is then a `Host<E>` of this run whose pointers come from the
/// driver's exclusive borrows, unused while native code runs.
unsafe fn parts<'a, E>(m: *mut Machine) -> (&'a mut Machine, &'a mut Host<E>) {
    // SAFETY: as the caller promises.
    unsafe {
        let m = &mut *m;
        let host = &mut *m.host.cast::<Host<E>>();
        (m, host)
    }
}

/// A helper call from native code (`call_native::<E>(machine, id)`):
/// arguments in `m.r[1..6]`, the result in `m.r[0]`. Returns 0, or 1 with
/// `m.error` set when the helper failed (the run ends there).
extern "sysv64" fn call_native<E>(m: *mut Machine, id: u64) -> u64 {
    // SAFETY: native code passes the machine it was entered with.
    let (m, host) = unsafe { parts::<E>(m) };
    if isa::calls_back(id as i64) {
        // (callx to bpf_loop and the like) The interpreter runs it.
        return 1;
    }
    m.stats.helper_calls += 1;
    let args = [m.r[1], m.r[2], m.r[3], m.r[4], m.r[5]];
    // SAFETY: as above.
    let (helpers, env, mem) = unsafe { (&*host.helpers, &mut *host.env, &mut *host.mem) };
    if !m.batch.is_null() {
        // SAFETY: `Vm::run_batch` set it to its state for this run.
        let b = unsafe { &mut *m.batch };
        // SAFETY: `run_batch` set `sync` for this `E` and the packets.
        unsafe { b.sync_now(env, mem) };
        if !b.quiet.contains(id) {
            b.loud = 1;
        }
    }
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

/// A bpf-to-bpf call from native code, returning to `return_pc`: 0, or 1
/// when it cannot be made (too deep; the interpreter repeats it and fails).
extern "sysv64" fn call_local<E>(m: *mut Machine, return_pc: u64) -> u64 {
    // SAFETY: native code passes the machine it was entered with.
    let (m, host) = unsafe { parts::<E>(m) };
    // SAFETY: as above.
    let mem = unsafe { &mut *host.mem };
    u64::from(m.call_local(return_pc as usize, mem).is_err())
}

/// A function's exit from native code: where to continue (see
/// `Natives::return_local`).
extern "sysv64" fn return_local<E>(m: *mut Machine) -> u64 {
    // SAFETY: native code passes the machine it was entered with.
    let (m, host) = unsafe { parts::<E>(m) };
    // SAFETY: as above.
    let mem = unsafe { &mut *host.mem };
    if !m.return_local(mem) {
        return 0;
    }
    host.continue_at(m.cur, m.pc)
}

/// A tail call from native code (see `Natives::tail_call`). Falls through
/// when there is no target or the run has used up its tail calls, as the
/// interpreter and the kernel do.
extern "sysv64" fn tail_call<E>(m: *mut Machine) -> u64 {
    // SAFETY: native code passes the machine it was entered with.
    let (m, host) = unsafe { parts::<E>(m) };
    let resolve = host.tail_calls.expect("checked at load");
    // SAFETY: as above.
    let codes = unsafe { &*host.codes };
    if m.tail_calls_left == 0 {
        return 0;
    }
    // SAFETY: as above.
    let env = unsafe { &mut *host.env };
    match resolve(env, m.r[2], m.r[3]).filter(|&t| t < codes.len()) {
        None => 0,
        Some(target) => {
            m.tail_calls_left -= 1;
            m.stats.tail_calls += 1;
            m.cur = target;
            m.pc = 0;
            host.continue_at(target, 0)
        }
    }
}

/// A legacy packet load from native code (see `Natives::legacy_load`).
extern "sysv64" fn legacy_load<E>(m: *mut Machine, packed: u64) -> u64 {
    // SAFETY: native code passes the machine it was entered with.
    let (m, host) = unsafe { parts::<E>(m) };
    if !m.batch.is_null() {
        // SAFETY: as in `call_native`.
        unsafe { (*m.batch).sync_now(&mut *host.env, &mut *host.mem) };
    }
    // SAFETY: as above.
    let mem = unsafe { &*host.mem };
    let slot = codegen::unpack_legacy(packed).expect("packed by codegen");
    match m.legacy_load(&slot, mem) {
        Ok(Some(v)) => {
            m.r[0] = v;
            0
        }
        Ok(None) => {
            m.r[0] = 0;
            m.done = 1;
            1
        }
        Err(kind) => {
            m.error = Some(kind);
            2
        }
    }
}

fn natives<E>() -> Natives {
    Natives {
        helper: call_native::<E> as *const (),
        call_local: call_local::<E> as *const (),
        return_local: return_local::<E> as *const (),
        tail_call: tail_call::<E> as *const (),
        legacy_load: legacy_load::<E> as *const (),
    }
}

/// Machine code for a VM's programs: with checks (used for counting too)
/// and, for verified programs, without.
pub(crate) struct Jit {
    checked: Vec<Code>,
    fast: Option<Vec<Code>>,
    /// The batch variant of `fast` (`vm::batch`), for the stack bytes it
    /// zeroes per packet.
    batch: Option<(usize, Vec<Code>)>,
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
            .map(|p| codegen::compile(p.slots(), true, natives::<E>(), &[], None))
            .collect::<Result<_, _>>()?;
        Ok(Jit {
            checked,
            fast: None,
            batch: None,
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

    /// Drops the unchecked code, compiled again before the next trusted
    /// run (what it inlines changed).
    pub(crate) fn forget_fast_code(&mut self) {
        if let Some(jit) = &mut self.jit {
            jit.fast = None;
            jit.batch = None;
        }
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
    ) -> Result<u64, VmError> {
        if !(CHECK || COUNT) {
            self.compile_fast();
        }
        // Native code until it leaves, one interpreted instruction, and
        // again; the code is borrowed for the run, never moved.
        let mut m = self.start::<COUNT>(mem, args);
        m.count = COUNT;
        let jit = self.jit.as_ref().expect("the JIT is enabled");
        let result = match &jit.fast {
            Some(fast) if !(CHECK || COUNT) => {
                self.drive_from::<false, false>(fast, env, mem, &mut m)
            }
            _ => self.drive_from::<COUNT, true>(&jit.checked, env, mem, &mut m),
        };
        if !COUNT {
            // Checked code counts branches always; only counting runs report them.
            m.stats.branches = 0;
            m.stats.taken = 0;
        }
        self.machine = Some(m);
        result
    }

    /// Compiles the unchecked code if it is not there (if no memory is
    /// left for more code, the checked variant runs).
    fn compile_fast(&mut self) {
        if self.jit.as_ref().is_some_and(|j| j.fast.is_none()) {
            let fast = (self.programs.iter().enumerate())
                .map(|(i, p)| {
                    let lookups = self.lookups_of(i);
                    codegen::compile(p.slots(), false, natives::<E>(), lookups, None)
                })
                .collect::<Result<Vec<_>, _>>()
                .ok();
            self.jit.as_mut().expect("the JIT is enabled").fast = fast;
        }
    }

    fn drive_from<const COUNT: bool, const CHECK: bool>(
        &self,
        codes: &[Code],
        env: &mut E,
        mem: &mut Memory<'_>,
        m: &mut Machine,
    ) -> Result<u64, VmError> {
        loop {
            if let Some((enter, at)) = codes[m.cur].entry(m.pc) {
                let mut host = Host {
                    helpers: &self.helpers,
                    env,
                    mem: (mem as *mut Memory<'_>).cast::<Memory<'static>>(),
                    codes,
                    tail_calls: self.tail_calls,
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
                    return Ok(m.r[0]);
                }
            }
            if let Some(r0) = self.resume::<COUNT, CHECK, true>(env, mem, m)? {
                return Ok(r0);
            }
        }
    }
}
