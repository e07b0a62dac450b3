//! Any text as a `--map-update NAME KEY VALUE` key or value (the first
//! byte chooses the size and whether it is an LPM trie key): parsing never
//! panics, and what parses is exactly the map's size and reads back
//! from its hex form (`hex:...`).
#![no_main]

#[path = "../checks/mapupdate.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
