//! Any bytes as an object's `.BTF` (the corpus holds the sections of real
//! objects) and as its `.BTF.ext`: parsing never panics, and for a BTF that
//! parses, every type id walks (sizes, modifiers and typedefs skipped, its
//! C-like name) and formats a map value as `sluice run` prints maps
//! (crates/engine/src/mapfmt.rs; per-CPU values summed where BTF shows
//! counters), without panicking or
//! recursing without end; a type's printed name is the same each time.
#![no_main]

#[path = "../checks/btf.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
