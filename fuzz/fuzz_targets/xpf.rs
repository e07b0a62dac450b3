//! Any bytes as an xPF program, an instance and packets: the assembler,
//! the checker, the interpreter and the translation never panic; a checked
//! program runs every packet to a verdict within its budget (plus the
//! handler, which only goes forward), never touches memory outside its
//! blocks, and translates in both forms unless it reads an ancillary field
//! a form has no source for.
#![no_main]

#[path = "../checks/xpf.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
