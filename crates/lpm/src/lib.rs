//! IPv4 longest-prefix match for the forwarding programs
//! (`programs/fwd_radix.c`, `programs/fwd_lctrie.c`,
//! `programs/fwd_lpm_trie.c`): route tables, a reference lookup, and the
//! contents of the programs' maps.
//!
//! A [`RouteTable`] maps unique [`Prefix`]es to next hops ([`NextHop`]:
//! egress ifindex, gateway, the MACs of the rewrite), parsed from `ip -4
//! route` output ([`RouteTable::parse_ip_route`]), from a RIB dump
//! ([`RouteTable::parse_rib`]: `prefix nexthop` lines or `bgpdump -m`
//! lines), or generated with the prefix-length mix of a BGP table
//! ([`RouteTable::synthetic`], [`LENGTH_MIX`]). [`Reference`] is the
//! lookup the others are checked against: a hash map per prefix length.
//!
//! The layouts turn a table into map entries ([`MapEntries`]: map name,
//! key, value), for our VM's maps and the kernel's alike:
//! [`radix_entries`] a path-compressed binary trie, [`lctrie_entries`]
//! Nilsson and Karlsson's LC-trie, [`lpm_trie_entries`] the routes as they
//! are for the kernel's `BPF_MAP_TYPE_LPM_TRIE` (the baseline, which does
//! the matching itself). [`radix_walk`] and [`lctrie_walk`] model the
//! programs' walks over the array layouts ([`ArrayMaps`]).
//!
//! ```
//! use lpm::{ArrayMaps, LcParams, Reference, RouteTable, lctrie_entries, lctrie_walk};
//!
//! let t = RouteTable::parse_ip_route(
//!     "default via 10.0.0.1 dev eth0\n10.1.0.0/16 via 192.0.2.1 dev eth1 proto static\n",
//! )
//! .unwrap();
//! let maps = ArrayMaps::from_entries(&lctrie_entries(&t, &LcParams::default()).unwrap());
//! let addr = u32::from(std::net::Ipv4Addr::new(10, 1, 2, 3));
//! assert_eq!(lctrie_walk(&maps, addr).0, Reference::new(&t).lookup(addr));
//! assert_eq!(t.hop(Reference::new(&t).lookup(addr).unwrap()).unwrap().ifindex, 2);
//! ```

mod layout;
mod lctrie;
mod maps;
mod parse;
mod prefix;
mod radix;
mod reference;
mod rng;
mod synth;
mod table;
mod trie;

pub use layout::Layout;
pub use lctrie::{LC_MAX_CHAIN, LC_MAX_DEPTH, LcParams, lctrie_entries, lctrie_walk};
pub use maps::{
    ArrayMaps, LC_BASE, LC_BASE_MAX, LC_NODES, LC_NODES_MAX, LC_PRE, LC_PRE_MAX, LayoutError,
    MapEntries, NEXTHOPS, NEXTHOPS_MAX, RADIX_NODES, RADIX_NODES_MAX, nexthop_entries,
};
pub use parse::ParseError;
pub use prefix::{Prefix, mask};
pub use radix::{RADIX_MAX_DEPTH, radix_entries, radix_walk};
pub use reference::Reference;
pub use synth::{LENGTH_MIX, Synth, test_addresses};
pub use table::{NextHop, NextHopId, RouteTable};
pub use trie::{LPM_ROUTES, LPM_ROUTES_MAX, lpm_trie_entries, lpm_trie_key};
