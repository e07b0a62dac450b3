//! The LC-trie of Nilsson and Karlsson ("IP-address lookup using
//! LC-tries", IEEE JSAC 17(6), 1999): a binary trie with path compression
//! (a node skips bits all its strings share) and level compression (a node
//! of branching `b` replaces `b` levels with `2^b` children), over the
//! routes that are not prefixes of other routes; those others sit in a
//! prefix vector the leaves point into.
//!
//! As in the paper:
//! - a node is one `u32` word: branch (5 bits, 0 for a leaf), skip (7 bits)
//!   and adr (20 bits): the first child (children are contiguous) or, for
//!   a leaf, the base vector entry;
//! - the base vector holds the routes that are not a prefix of another
//!   route (a prefix-free set), sorted; each points to its longest proper
//!   prefix among the routes, in the prefix vector, whose entries point on
//!   to theirs (nested prefixes, longest first);
//! - the walk extracts `branch` bits at `pos`, adds the child's skip, down
//!   to a leaf; only there is the address compared with the string (the
//!   skipped bits are never checked on the way), and on a mismatch the
//!   prefix chain is tried;
//! - a node's branching is the largest `b` whose `2^b` children are at
//!   least a fill factor full ([`LcParams`]), the root's at least the root
//!   branching factor. The paper's measurements use a fill factor of 0.5
//!   and a root branching factor of 16, the defaults here.
//!
//! Our choices where the paper leaves room: a route shorter than the bits
//! a node extracts fills every child it covers (a leaf pointing to it, as
//! many times as needed); a child no route falls in (the fill factor lets
//! up to half be empty) becomes a leaf of a route of the same node chosen
//! so that its prefix chain holds every route that can match there: below
//! the longest route covering that child, when one is longer than the
//! node's path, else any.
//!
//! `struct lc_entry { u32 str, mask, nexthop, pre; }` for both vectors
//! (`pre` 0: none; the prefix vector's entry 0 is unused). An empty table
//! is one leaf and a base entry that matches everything with next hop 0.

use std::collections::HashSet;

use crate::maps::{
    ArrayMaps, LC_BASE, LC_BASE_MAX, LC_NODES, LC_NODES_MAX, LC_PRE, LC_PRE_MAX, LayoutError,
    MapEntries, check, nexthop_entries, push, words,
};
use crate::prefix::mask;
use crate::radix::common;
use crate::{NextHopId, Prefix, RouteTable};

/// The construction's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LcParams {
    /// How full (non-empty children / children) a node's level
    /// compression must keep it, in (0, 1].
    pub fill_factor: f64,
    /// The root branches at least this many bits (when it has two routes).
    pub root_branch: u8,
}

impl Default for LcParams {
    fn default() -> LcParams {
        LcParams {
            fill_factor: 0.5,
            root_branch: 16,
        }
    }
}

/// The most nodes below the root a walk reads (each takes a bit or more).
pub const LC_MAX_DEPTH: u32 = 32;
/// The most prefix-vector entries a walk reads (each is shorter).
pub const LC_MAX_CHAIN: u32 = 32;

const BRANCH_SHIFT: u32 = 27;
const SKIP_SHIFT: u32 = 20;
const ADR_MASK: u32 = (1 << SKIP_SHIFT) - 1;

fn node(branch: u32, skip: u32, adr: u32) -> u32 {
    branch << BRANCH_SHIFT | skip << SKIP_SHIFT | adr
}

fn fields(w: u32) -> (u32, u32, u32) {
    (w >> BRANCH_SHIFT, (w >> SKIP_SHIFT) & 0x7f, w & ADR_MASK)
}

/// `bits` bits of `addr` from bit `pos` (`pos + bits <= 32`, `bits >= 1`).
fn extract(addr: u32, pos: u32, bits: u32) -> u32 {
    ((u64::from(addr) << pos) as u32) >> (32 - bits)
}

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    str: u32,
    mask: u32,
    nexthop: u32,
    pre: u32,
}

struct Builder<'a> {
    base: &'a [(Prefix, Entry)],
    routes: HashSet<Prefix>,
    nodes: Vec<u32>,
    params: LcParams,
}

/// The LC-trie of `table` and its next hops, as map entries.
pub fn lctrie_entries(table: &RouteTable, params: &LcParams) -> Result<MapEntries, LayoutError> {
    let sorted = table.sorted();
    // Split into the base and prefix vectors; a stack of the open prefixes
    // (those covering the current route) gives each its `pre`.
    let mut pre = vec![Entry::default()];
    let mut base = Vec::new();
    let mut open: Vec<(Prefix, u32)> = Vec::new();
    for (i, &(p, nh)) in sorted.iter().enumerate() {
        while open.last().is_some_and(|o| !o.0.covers(p)) {
            open.pop();
        }
        let e = Entry {
            str: p.addr(),
            mask: p.mask(),
            nexthop: nh,
            pre: open.last().map_or(0, |o| o.1),
        };
        // Sorted: a prefix of any later route is a prefix of the next one.
        if sorted.get(i + 1).is_some_and(|n| p.covers(n.0)) {
            pre.push(e);
            open.push((p, pre.len() as u32 - 1));
        } else {
            base.push((p, e));
        }
    }
    let mut b = Builder {
        base: &base,
        routes: sorted.iter().map(|r| r.0).collect(),
        nodes: vec![0],
        params: *params,
    };
    let base_entries: Vec<Entry> = if base.is_empty() {
        vec![Entry::default()]
    } else {
        b.build(0, 0, base.len(), 0)?;
        base.iter().map(|x| x.1).collect()
    };
    check(LC_BASE, base_entries.len(), LC_BASE_MAX)?;
    check(LC_PRE, pre.len(), LC_PRE_MAX)?;
    let mut out = nexthop_entries(table)?;
    for (i, &w) in b.nodes.iter().enumerate() {
        push(&mut out, LC_NODES, i, w.to_le_bytes().to_vec());
    }
    for (map, v) in [(LC_BASE, &base_entries), (LC_PRE, &pre)] {
        for (i, e) in v.iter().enumerate() {
            if map == LC_PRE && i == 0 {
                continue;
            }
            push(&mut out, map, i, words(&[e.str, e.mask, e.nexthop, e.pre]));
        }
    }
    Ok(out)
}

impl Builder<'_> {
    /// The children `[lo, hi]` a base string covers at bits `pos..pos+b`.
    fn slots(&self, i: usize, pos: u32, b: u32) -> (u32, u32) {
        let p = self.base[i].0;
        let lo = extract(p.addr(), pos, b);
        let len = u32::from(p.len());
        if len >= pos + b {
            (lo, lo)
        } else {
            (lo, lo | ((1 << (pos + b - len)) - 1))
        }
    }

    /// How many of the `2^b` children of strings `lo..hi` at `pos` hold a
    /// string's first address. (A short string filling several children
    /// counts once: it is one string, and counting its copies would let a
    /// /8 among /24s make a node of 2^16 children.)
    fn filled(&self, lo: usize, hi: usize, pos: u32, b: u32) -> u64 {
        let (mut n, mut last) = (0u64, None);
        for i in lo..hi {
            let a = self.slots(i, pos, b).0;
            if last != Some(a) {
                n += 1;
                last = Some(a);
            }
        }
        n
    }

    /// Builds the node at `at` for base strings `lo..hi` (at least one),
    /// whose parent's bits end at `start`.
    fn build(&mut self, at: usize, lo: usize, hi: usize, start: u32) -> Result<(), LayoutError> {
        if hi - lo == 1 {
            self.nodes[at] = node(0, 0, lo as u32);
            return Ok(());
        }
        // Prefix-free and sorted: the common prefix of the ends is that of
        // all, and shorter than every string.
        let pos = u32::from(common(self.base[lo].0, self.base[hi - 1].0));
        let room = 32 - pos;
        let mut b = 1;
        while b < room
            && self.filled(lo, hi, pos, b + 1) as f64
                >= self.params.fill_factor * (1u64 << (b + 1)) as f64
        {
            b += 1;
        }
        if at == 0 {
            b = b.max(u32::from(self.params.root_branch).min(room));
        }
        let first = self.nodes.len();
        check(LC_NODES, first + (1 << b), LC_NODES_MAX)?;
        self.nodes.resize(first + (1 << b), 0);
        self.nodes[at] = node(b, pos - start, first as u32);
        // The strings of each child: runs of one child, or one short string
        // over several.
        let mut groups: Vec<Option<(usize, usize)>> = vec![None; 1 << b];
        let mut i = lo;
        while i < hi {
            let (a, z) = self.slots(i, pos, b);
            let mut j = i + 1;
            if a == z {
                while j < hi && self.slots(j, pos, b) == (a, a) {
                    j += 1;
                }
            }
            for g in &mut groups[a as usize..=z as usize] {
                *g = Some((i, j));
            }
            i = j;
        }
        let path = self.base[lo].0.addr() & mask(pos as u8);
        for (s, g) in groups.into_iter().enumerate() {
            let child = first + s;
            match g {
                Some((i, j)) if j - i == 1 => self.nodes[child] = node(0, 0, i as u32),
                Some((i, j)) => self.build(child, i, j, pos + b)?,
                None => {
                    let slot = path | (s as u32) << (32 - pos - b);
                    let leaf = self.empty_child_leaf(lo, hi, slot, pos, b);
                    self.nodes[child] = node(0, 0, leaf as u32);
                }
            }
        }
        Ok(())
    }

    /// The leaf of an empty child (bits `slot` up to `pos + b`) of the node
    /// of strings `lo..hi` at `pos`: a string below the longest route
    /// covering the child if one is longer than `pos` (it is in the prefix
    /// vector: a base string covering the child would be in it), so that
    /// the route is on the leaf's chain; else any string of the node (every
    /// route that can match is a prefix of the node's path, on every
    /// string's chain).
    fn empty_child_leaf(&self, lo: usize, hi: usize, slot: u32, pos: u32, b: u32) -> usize {
        for len in (pos + 1..=pos + b).rev() {
            let p = Prefix::truncating(slot, len as u8);
            if self.routes.contains(&p) {
                let i = lo + self.base[lo..hi].partition_point(|x| x.0.addr() < p.addr());
                debug_assert!(i < hi && p.covers(self.base[i].0));
                return i;
            }
        }
        lo
    }
}

/// The program's walk over the maps: the next hop of `addr`, and how many
/// entries it read (nodes, base and prefix vector).
pub fn lctrie_walk(maps: &ArrayMaps, addr: u32) -> (Option<NextHopId>, u32) {
    let (mut branch, mut skip, mut adr) = fields(maps.word(LC_NODES, 0, 0));
    let mut pos = skip;
    let mut read = 1;
    for _ in 0..LC_MAX_DEPTH {
        if branch == 0 {
            break;
        }
        let w = maps.word(LC_NODES, adr + extract(addr, pos, branch), 0);
        read += 1;
        let b = branch;
        (branch, skip, adr) = fields(w);
        pos += b + skip;
    }
    if branch != 0 {
        return (None, read);
    }
    let entry = |map, i| {
        let w = |k| maps.word(map, i, k);
        ((addr ^ w(0)) & w(1) == 0, w(2), w(3))
    };
    read += 1;
    let (hit, nh, mut pre) = entry(LC_BASE, adr);
    if hit {
        return ((nh != 0).then_some(nh), read);
    }
    for _ in 0..LC_MAX_CHAIN {
        if pre == 0 {
            break;
        }
        read += 1;
        let (hit, nh, next) = entry(LC_PRE, pre);
        if hit {
            return (Some(nh), read);
        }
        pre = next;
    }
    (None, read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Reference, Synth, test_addresses};

    fn agree(t: &RouteTable, params: &LcParams, n: usize) {
        let maps = ArrayMaps::from_entries(&lctrie_entries(t, params).unwrap());
        let r = Reference::new(t);
        for a in test_addresses(t, n, 9) {
            assert_eq!(
                lctrie_walk(&maps, a).0,
                r.lookup(a),
                "{} {params:?}",
                std::net::Ipv4Addr::from(a)
            );
        }
    }

    const SMALL: LcParams = LcParams {
        fill_factor: 0.5,
        root_branch: 1,
    };

    #[test]
    fn small_tables() {
        let mut t = RouteTable::new();
        agree(&t, &SMALL, 100);
        let h = t.nexthop(None, Some("x"));
        let g = t.nexthop(None, Some("y"));
        for (p, nh) in [
            ("10.0.0.0/8", h),
            ("10.1.0.0/16", g),
            ("10.1.2.3/32", h),
            ("10.1.128.0/17", h),
            ("0.0.0.0/1", g),
            ("255.255.255.255/32", h),
            ("0.0.0.0/32", g),
            ("10.0.0.0/9", g),
        ] {
            t.insert(p.parse().unwrap(), nh);
            agree(&t, &SMALL, 3000);
            agree(&t, &LcParams::default(), 3000);
        }
        t.insert(Prefix::DEFAULT, g);
        agree(&t, &SMALL, 3000);
        let mut only_default = RouteTable::new();
        let h = only_default.nexthop(None, Some("x"));
        only_default.insert(Prefix::DEFAULT, h);
        agree(&only_default, &SMALL, 100);
    }

    #[test]
    fn synthetic_tables() {
        for (prefixes, default_route) in [(3000, true), (3000, false), (20_000, true)] {
            let t = RouteTable::synthetic(&Synth {
                prefixes,
                default_route,
                ..Synth::default()
            });
            for fill_factor in [0.25, 0.5, 1.0] {
                for root_branch in [1, 8, 16] {
                    let p = LcParams {
                        fill_factor,
                        root_branch,
                    };
                    agree(&t, &p, 20_000);
                }
            }
        }
    }
}
