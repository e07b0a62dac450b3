//! Any bytes as an ELF object: reading its sections and loading it (maps,
//! BTF, relocations, linking) never panic.
#![no_main]

#[path = "../checks/elf.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
