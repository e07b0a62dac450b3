//! Any bytes as a classic BPF program and a packet: decoding, the
//! printers, the checker, the interpreter (on checked and unchecked
//! programs) and the translation to eBPF never panic; a checked program
//! runs to a verdict and translates unless it reads an ancillary field
//! with no eBPF equivalent; the decimal form reads back; any text handed
//! to the assembler gives a program or an error naming a line.
#![no_main]

#[path = "../checks/cbpf.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
