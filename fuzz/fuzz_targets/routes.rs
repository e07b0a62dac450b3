//! Any text as a route table (`ip -4 route` output or a RIB dump, told
//! apart as `--routes` does): parsing never panics; a table that parses
//! prints (as `ip route` lines, and as `PREFIX NEXTHOP` lines when every
//! route has a gateway and no device) and parses back to the same routes
//! and next hops; and the radix-tree and LC-trie layouts built from it
//! (when they fit their maps) find the same route as the reference
//! longest-prefix match at every route's first and last address and their
//! neighbours.
#![no_main]

#[path = "../checks/routes.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
