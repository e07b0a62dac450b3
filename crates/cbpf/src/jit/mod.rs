//! Classic programs compiled straight to x86-64 code, as the kernel's and
//! FreeBSD's classic JITs do (docs/cbpf.md, "The classic JIT"): A and X in
//! registers, `M[]` in the stack's red zone, every packet load inline
//! behind one bounds check. A [`JitFilter`] is a checked program
//! ([`crate::check`]) compiled once; [`JitFilter::run`] decides a packet
//! with one call into native code and nothing else per packet. [`Jit`] is
//! the [`FilterEngine`] of `sluice filter --engine jit`.
//!
//! The semantics are the interpreter's ([`crate::run`]), shared where they
//! are not a few instructions: a load the inline check refuses (past the
//! captured bytes, or at a negative offset, which may name the
//! `SKF_NET_OFF`/`SKF_LL_OFF` windows) calls the interpreter's own load
//! out of line, which either gives the value or ends the run with 0; an
//! ancillary load (`ld #proto`, ...) calls the interpreter's own field
//! reader with the run's [`Meta`]. A division or modulo by an X of zero
//! ends the run with 0, as in the kernel.
//!
//! Elsewhere than on x86-64 nothing is compiled: [`Jit`]'s deciders let the
//! interpreter decide every packet and say so
//! ([`crate::Decision::Refused`]).

#[cfg(target_arch = "x86_64")]
mod x64;

use crate::check::{CheckError, check};
use crate::engine::{Decider, Decision, EngineError, FilterEngine};
use crate::insn::Insn;
use crate::interp::{Filter, Meta};

/// Why a program was not compiled.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The kernel's checker refuses the program (the JIT compiles what
    /// the kernel would attach).
    #[error(transparent)]
    Check(#[from] CheckError),
    /// The host cannot run the code (another architecture).
    #[error("the classic JIT compiles for x86-64 only")]
    Arch,
    /// An operation the checker lets through that the JIT does not
    /// compile (none: a bug if seen).
    #[error("insn {insn}: {what} is not compiled by the classic JIT")]
    Unsupported { insn: usize, what: String },
    /// Executable memory could not be had.
    #[error("executable memory for the classic JIT: {0}")]
    Memory(#[from] std::io::Error),
}

/// The largest packet native code decides: its offsets are 32-bit signed
/// numbers, as the interpreter's are; a larger packet (none is) goes to
/// the interpreter.
const MAX_NATIVE_PACKET: usize = i32::MAX as usize;

/// A checked classic program compiled to native code.
pub struct JitFilter {
    #[cfg(target_arch = "x86_64")]
    code: x64::Code,
    /// For a packet over [`MAX_NATIVE_PACKET`] bytes.
    classic: Filter,
}

impl std::fmt::Debug for JitFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitFilter").finish_non_exhaustive()
    }
}

impl JitFilter {
    /// Compiles `prog`, which must pass [`crate::check`].
    pub fn compile(prog: &[Insn]) -> Result<JitFilter, JitError> {
        check(prog)?;
        let classic = Filter::new(prog);
        #[cfg(target_arch = "x86_64")]
        {
            let code = x64::compile(&classic.ops)?;
            Ok(JitFilter { code, classic })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = classic;
            Err(JitError::Arch)
        }
    }

    /// Bytes of native code.
    pub fn code_len(&self) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            self.code.len()
        }
        #[cfg(not(target_arch = "x86_64"))]
        0
    }

    /// The filter's return value for `packet` (as captured) with `meta`
    /// (its `len` the wire length; the packet's length if `None`): what
    /// [`crate::run`] returns for the same program.
    #[inline]
    pub fn run(&self, packet: &[u8], meta: &Meta) -> u32 {
        if packet.len() > MAX_NATIVE_PACKET {
            return self
                .classic
                .run(packet, meta)
                .expect("a checked program runs")
                .ret;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let wire = meta.len.unwrap_or(packet.len() as u32);
            self.code.run(packet, wire, meta)
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("no JitFilter is compiled elsewhere")
    }
}

/// `sluice filter --engine jit`: each link type's program compiled by
/// [`JitFilter::compile`] (a program the checker refuses is an error that
/// says so); every packet decided by native code.
#[derive(Clone, Copy, Debug, Default)]
pub struct Jit;

/// Why the interpreter decides every packet on another architecture.
const NOT_X86_64: &str = "the classic JIT compiles for x86-64 only";

impl FilterEngine for Jit {
    fn name(&self) -> &'static str {
        "jit"
    }

    fn decider(&mut self, _linktype: u32, prog: &[Insn]) -> Result<Decider, EngineError> {
        match JitFilter::compile(prog) {
            Ok(f) => Ok(Box::new(move |data, meta| {
                Ok(Decision::Ret(f.run(data, meta)))
            })),
            Err(JitError::Arch) => {
                check(prog).map_err(|e| EngineError::Engine(e.to_string()))?;
                Ok(Box::new(|_, _| Ok(Decision::Refused(NOT_X86_64))))
            }
            Err(e) => Err(EngineError::Engine(e.to_string())),
        }
    }
}
