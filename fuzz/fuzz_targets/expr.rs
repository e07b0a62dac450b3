//! Any text as a tcpdump expression, compiled by libpcap for one of a few
//! link types and a snap length (the first two bytes choose): compiling
//! never panics (libpcap's errors come back as errors). What compiles
//! reads back from its decimal form (`-ddd`) and, if the kernel's checker
//! takes it (libpcap may read scratch memory on a path that never wrote
//! it, which the kernel refuses), runs over a packet to a verdict no
//! larger than the snap length; a refused program runs or fails without
//! panicking.
#![no_main]

#[path = "../checks/expr.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
