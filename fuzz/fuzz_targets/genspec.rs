//! Any text as a traffic specification (`--gen udp,flows=10,...`, also
//! `tcp-conv`) and as a sampling rate (`--rate 1/100`): parsing never
//! panics. A spec that parses generates its packets without panicking
//! (the first 64 of them), each of the spec's size (plain specs), with
//! timestamps that never go back, and each an IP datagram of the spec's
//! version and protocol as flow accounting reads it. A rate that parses is
//! B/A with B <= A and A >= 1.
#![no_main]

#[path = "../checks/genspec.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
