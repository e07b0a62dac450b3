//! Any text as a `tc -batch` file (`qdisc ...`, `filter ...`, `actions
//! ...` lines), run line by line against one configuration, as `sluice tc`
//! keeps it: no line panics; a line that fails changes nothing (what `tc
//! -s filter show` and `tc actions list` print, and how packets classify,
//! stay as they were); and a few frames classify through every device's
//! hooks without panicking. Lines naming files (`bpf obj FILE`) are left
//! out: objects have their own target (`elf`), and reading a file the
//! input names would make the run depend on the machine.
#![no_main]

#[path = "../checks/tc.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
