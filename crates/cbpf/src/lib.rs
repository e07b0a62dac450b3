//! Classic BPF, the packet filter of tcpdump, libpcap and Linux socket
//! filters: `struct sock_filter` instructions ([`Insn`]), their bytes
//! ([`decode`], [`encode`]) and the decimal forms tools exchange
//! ([`parse_decimal`]); the program as `tcpdump -d`, `-dd` and `-ddd` print
//! it ([`image`], [`image_c`], [`image_decimal`]); the Linux `bpf_asm`
//! syntax ([`assemble`]); the kernel's checker ([`check`]); an
//! interpreter with the kernel's semantics ([`run`]) and a compiler to
//! x86-64 code with the same ([`JitFilter`]); the kernel's
//! translation to eBPF ([`to_ebpf`]); tcpdump's filter language, compiled
//! by libpcap ([`compile_expr`]); and a capture filtered as `tcpdump -r`
//! filters it ([`filter_capture`]), each packet decided by an [`Engine`].
//!
//! ```
//! use cbpf::{Meta, assemble, check, run};
//! // IPv4 only.
//! let prog = assemble("ldh [12]\njneq #0x800, drop\nret #65535\ndrop: ret #0").unwrap();
//! check(&prog).unwrap();
//! let mut frame = vec![0u8; 60];
//! frame[12..14].copy_from_slice(&[0x08, 0x00]);
//! assert_eq!(run(&prog, &frame, &Meta::default()).unwrap().ret, 65535);
//! frame[12..14].copy_from_slice(&[0x86, 0xdd]);
//! assert_eq!(run(&prog, &frame, &Meta::default()).unwrap().ret, 0);
//! ```

mod asm;
mod capture_filter;
mod check;
mod engine;
mod expr;
mod image;
mod insn;
mod interp;
mod jit;
mod to_ebpf;
pub mod xpf;

pub use asm::{AsmError, assemble};
pub use capture_filter::{
    FilterError, FilterOptions, FilterSummary, Matched, filter_capture, filter_capture_each,
    filter_source_each,
};
pub use check::{CheckError, check, known_opcode};
pub use engine::{
    Decider, Decision, EngineError, FilterEngine, Interp, decide_or_interpret, reads_len,
};
pub use expr::{DEFAULT_SNAPLEN, ETHERNET, ExprError, compile_expr, compile_expr_until};
pub use image::{image, image_c, image_decimal, image_line};
pub use insn::{
    DecodeError, Insn, MAXINSNS, MEMWORDS, ancillary, class, decode, encode, misc, mode, op,
    parse_decimal, rval, size, src,
};
pub use interp::{Filter, FilterResult, LOOP_LIMIT, Meta, RunError, run};
pub use jit::{Jit, JitError, JitFilter};
pub use to_ebpf::{Form, TranslateError, to_ebpf, to_xdp};
