//! The eBPF instruction set of RFC 9669 (all of v1 to v4): the typed
//! instruction model, exact decoding and encoding, a text assembler and a
//! disassembler whose output re-assembles to the same bytes.
//!
//! ```
//! let insns = isa::assemble("mov32 %r0, 1\nexit").unwrap();
//! let bytes = isa::encode(&insns);
//! assert_eq!(isa::decode(&bytes).unwrap(), insns);
//! assert_eq!(insns[0].to_string(), "mov32 %r0, 1");
//! ```

#[cfg(feature = "proptest")]
pub mod arbitrary;
pub mod asm;
pub mod decode;
pub mod disasm;
pub mod encode;
pub mod helpers;
pub mod insn;
pub mod opcode;
mod reg;

pub use asm::{AsmError, assemble};
pub use decode::{DecodeError, DecodeErrorKind, decode, decode_one, decode_raw};
pub use disasm::{ListingOptions, listing};
pub use encode::encode;
pub use helpers::{calls_back, helper_id, helper_name};
pub use insn::*;
pub use reg::Reg;
