//! Any text as `ovs-ofctl` flows and groups (`add-flow`, `del-flows`,
//! `add-group` arguments, `add-flows FILE` files): parsing never panics;
//! what parses prints (`dump-flows` style) and parses back to the same
//! flow-mod or group-mod; a parsed flow-mod's match meets its
//! prerequisites and goes onto the wire and back unchanged.
#![no_main]

#[path = "../checks/ofctl.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
