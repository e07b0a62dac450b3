//! What decides packets when a capture is filtered ([`crate::filter_capture`]):
//! a [`FilterEngine`] turns each link type's classic program into a [`Decider`],
//! a function from a packet and its [`Meta`] to the filter's return value.
//! The classic interpreter ([`Interp`]) is here; engines that run the
//! program's eBPF translation (sluice's JIT, the kernel) live in the
//! crates that have those machines (`xpf::classic`), so this crate
//! stays light.
//!
//! An engine may refuse a packet it cannot run as the interpreter would
//! ([`Decision::Refused`], e.g. a frame the kernel's test run does not
//! take): the interpreter then decides it, and the summary counts it with
//! the reason.

use crate::insn::Insn;
use crate::interp::{Filter, Meta, RunError};

/// Why an engine cannot run a program, or stopped on a packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The classic interpreter stopped on the packet.
    #[error("{0}")]
    Run(#[from] RunError),
    /// The engine's own reason (its translation, its machine, the kernel),
    /// in a few words to print.
    #[error("{0}")]
    Engine(String),
}

/// What an engine made of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The filter's return value: the bytes to keep, 0 to drop.
    Ret(u32),
    /// The engine cannot run this packet as classic BPF would (the reason
    /// says why, in a few words); the interpreter decides it instead, and
    /// the summary counts it.
    Refused(&'static str),
}

/// Decides packets with one link type's program.
pub type Decider = Box<dyn FnMut(&[u8], &Meta) -> Result<Decision, EngineError>>;

/// A way to run classic programs over packets.
pub trait FilterEngine {
    /// The engine's name, as `sluice filter --engine` takes it.
    fn name(&self) -> &'static str;
    /// A decider for `prog`, the program of link type `linktype` (checked
    /// by the kernel's checker, as [`crate::compile_expr`] returns it).
    /// Fails (with a reason to print) if the engine cannot run it.
    fn decider(&mut self, linktype: u32, prog: &[Insn]) -> Result<Decider, EngineError>;
}

/// The classic interpreter ([`crate::run`]): decides every packet.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interp;

impl FilterEngine for Interp {
    fn name(&self) -> &'static str {
        "interp"
    }

    fn decider(&mut self, _linktype: u32, prog: &[Insn]) -> Result<Decider, EngineError> {
        let filter = Filter::new(prog);
        Ok(Box::new(move |data, meta| {
            Ok(Decision::Ret(filter.run(data, meta)?.ret))
        }))
    }
}

/// Whether a program reads the packet's length (`ld #pktlen`, `ldx
/// #pktlen`): an engine that cannot give it the wire length must refuse
/// the packets whose wire length differs from what was captured.
pub fn reads_len(prog: &[Insn]) -> bool {
    use crate::insn::{class, mode};
    prog.iter()
        .any(|i| matches!(i.code & 0x07, class::LD | class::LDX) && i.code & 0xe0 == mode::LEN)
}

/// The filter's return value for one packet: `decide`'s, or where it
/// refused the packet the interpreter's (`classic`, the same program), the
/// refusal counted by reason in `interpreted` (in order met).
pub fn decide_or_interpret(
    decide: &mut Decider,
    classic: &Filter,
    data: &[u8],
    meta: &Meta,
    interpreted: &mut Vec<(&'static str, u64)>,
) -> Result<u32, EngineError> {
    match decide(data, meta)? {
        Decision::Ret(r) => Ok(r),
        Decision::Refused(reason) => {
            match interpreted.iter_mut().find(|r| r.0 == reason) {
                Some(r) => r.1 += 1,
                None => interpreted.push((reason, 1)),
            }
            Ok(classic.run(data, meta)?.ret)
        }
    }
}
