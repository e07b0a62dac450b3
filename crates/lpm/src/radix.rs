//! The radix tree: a path-compressed binary trie (Patricia tree) of the
//! routes in one array map, and a model of the program's walk.
//!
//! A node stands for a bit string `key/len`: a route, or a branch where
//! the routes below differ at bit `len`. Chains of one-child nodes that
//! are not routes are compressed away, so a node's `len` can exceed its
//! parent's by more than one and the walk checks the skipped bits with
//! the node's mask. The walk goes from the root (index 0) while the node's
//! key matches the address, remembering the last route seen, to the child
//! of the address's bit `len`: at most 33 nodes (lengths 0 to 32 strictly
//! increase).
//!
//! `struct radix_node { u32 key, mask, len, nexthop, child[2]; }`, host
//! byte order; `nexthop` 0 for a branch, `child` 0 for none (the root is
//! nobody's child).

use crate::maps::{
    ArrayMaps, LayoutError, MapEntries, RADIX_NODES, RADIX_NODES_MAX, check, nexthop_entries, push,
    words,
};
use crate::prefix::mask;
use crate::{NextHopId, Prefix, RouteTable};

#[derive(Clone, Copy, Debug, Default)]
struct Node {
    key: u32,
    mask: u32,
    len: u32,
    nexthop: u32,
    child: [u32; 2],
}

/// The most nodes a walk visits: one per prefix length 0..=32.
pub const RADIX_MAX_DEPTH: u32 = 33;

/// The radix tree of `table` and its next hops, as map entries.
pub fn radix_entries(table: &RouteTable) -> Result<MapEntries, LayoutError> {
    let routes = table.sorted();
    let mut nodes = Vec::with_capacity(2 * routes.len() + 1);
    if routes.is_empty() {
        nodes.push(Node::default());
    } else {
        build(&routes, &mut nodes);
    }
    check(RADIX_NODES, nodes.len(), RADIX_NODES_MAX)?;
    let mut out = nexthop_entries(table)?;
    for (i, n) in nodes.iter().enumerate() {
        let v = words(&[n.key, n.mask, n.len, n.nexthop, n.child[0], n.child[1]]);
        push(&mut out, RADIX_NODES, i, v);
    }
    Ok(out)
}

/// The length of the longest common prefix of two prefixes as bit strings.
pub(crate) fn common(a: Prefix, b: Prefix) -> u8 {
    let same = (a.addr() ^ b.addr()).leading_zeros() as u8;
    same.min(a.len()).min(b.len())
}

/// Builds the subtree of `items` (sorted, unique, non-empty) at the end of
/// `nodes`; returns its index.
fn build(items: &[(Prefix, NextHopId)], nodes: &mut Vec<Node>) -> u32 {
    let at = nodes.len();
    nodes.push(Node::default());
    // Sorted bit strings: the common prefix of all is that of the ends.
    let len = common(items[0].0, items[items.len() - 1].0);
    let key = items[0].0.addr() & mask(len);
    // Only the node's own prefix can be as short as the common prefix, and
    // it sorts first.
    let (nexthop, rest) = if items[0].0.len() == len {
        (items[0].1, &items[1..])
    } else {
        (0, items)
    };
    let mut child = [0; 2];
    if !rest.is_empty() {
        // Every item left is longer than `len` (< 32): split on bit `len`.
        let bit = |p: Prefix| (p.addr() >> (31 - len)) & 1;
        let split = rest.partition_point(|r| bit(r.0) == 0);
        for (side, part) in [&rest[..split], &rest[split..]].into_iter().enumerate() {
            if !part.is_empty() {
                child[side] = build(part, nodes);
            }
        }
    }
    nodes[at] = Node {
        key,
        mask: mask(len),
        len: u32::from(len),
        nexthop,
        child,
    };
    at as u32
}

/// The program's walk over the maps: the next hop of `addr`, and how many
/// nodes it read.
pub fn radix_walk(maps: &ArrayMaps, addr: u32) -> (Option<NextHopId>, u32) {
    let (mut at, mut best, mut read) = (0u32, 0u32, 0u32);
    for _ in 0..RADIX_MAX_DEPTH {
        let w = |i| maps.word(RADIX_NODES, at, i);
        read += 1;
        if (addr ^ w(0)) & w(1) != 0 {
            break;
        }
        if w(3) != 0 {
            best = w(3);
        }
        let len = w(2);
        if len >= 32 {
            break;
        }
        at = w(4 + ((addr >> (31 - len)) & 1) as usize);
        if at == 0 {
            break;
        }
    }
    ((best != 0).then_some(best), read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Reference, Synth, test_addresses};

    fn agree(t: &RouteTable, n: usize) {
        let maps = ArrayMaps::from_entries(&radix_entries(t).unwrap());
        let r = Reference::new(t);
        for a in test_addresses(t, n, 7) {
            assert_eq!(
                radix_walk(&maps, a).0,
                r.lookup(a),
                "{}",
                std::net::Ipv4Addr::from(a)
            );
        }
    }

    #[test]
    fn small_tables() {
        let mut t = RouteTable::new();
        agree(&t, 100);
        let h = t.nexthop(None, Some("x"));
        let g = t.nexthop(None, Some("y"));
        for (p, nh) in [
            ("10.0.0.0/8", h),
            ("10.1.0.0/16", g),
            ("10.1.2.3/32", h),
            ("0.0.0.0/1", g),
            ("255.255.255.255/32", h),
        ] {
            t.insert(p.parse().unwrap(), nh);
            agree(&t, 2000);
        }
        t.insert(Prefix::DEFAULT, g);
        agree(&t, 2000);
        let maps = ArrayMaps::from_entries(&radix_entries(&t).unwrap());
        assert_eq!(radix_walk(&maps, 0x0a01_0203), (Some(h), 5));
    }

    #[test]
    fn synthetic_tables() {
        for (prefixes, default_route) in [(3000, true), (3000, false), (20_000, true)] {
            let t = RouteTable::synthetic(&Synth {
                prefixes,
                default_route,
                ..Synth::default()
            });
            agree(&t, 50_000);
        }
    }
}
