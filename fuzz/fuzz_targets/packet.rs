//! Any bytes as a frame, through every reader of frames outside the VM:
//! flow accounting's `monitor::observe`, the switch's flow-key extraction
//! (`switch::flow::extract`), tc's skb and flower dissector, and the
//! link-type conversions of `capture::to_ethernet` before them. None panics; the
//! layer offsets extraction reports lie inside the frame (the transport
//! one after the network one); an observed datagram's ports are zero for
//! protocols without ports; a frame's key does not depend on the port it
//! came in on except for `in_port`; tc's dissector gives the same key for
//! the same bytes.
#![no_main]

#[path = "../checks/packet.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
