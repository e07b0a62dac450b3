//! A run of u32 filters as one lookup: a filter is eligible when every
//! rule of its root table (but `skip_sw` ones, which the walk passes over
//! unread) links nowhere, names no `indev` and no mark (unless marks are
//! not matched), and keys only words at fixed offsets within the first
//! [`BYTES`] of the network header. A rule's key is its keys' values and
//! masks at their words and the filter's protocol; its priority its place
//! in the walk's order (filters in order, root rules in order). A rule
//! without `classid` or actions (not terminal) is left out: the walk reads
//! its words and goes on. The walk ends a filter unmatched at a read past
//! the packet: a packet shorter than the run's furthest read takes the
//! reference walk.

use tss::{Rule, Tss};

use super::{Found, protocol_mask};
use crate::classifier::Filter;
use crate::skb::Skb;
use crate::u32::{SKIP_SW, TERMINAL, U32};

/// How much of the network header a fast rule may read.
pub const BYTES: usize = 64;

/// The protocol and the header's words, two 32-bit words to a key word.
const W: usize = 1 + BYTES / 8;

pub(super) struct U32Run {
    tss: Tss<W, (u32, u32)>,
    end: usize,
    /// The furthest byte any rule reads, plus one.
    extent: usize,
}

fn root_rules(u: &U32) -> &[crate::u32::Knode] {
    u.table(u.root()).map_or(&[], |t| t.buckets[0].as_slice())
}

/// Whether every rule of the filter can be looked up exactly.
pub(super) fn eligible(u: &U32) -> bool {
    root_rules(u).iter().all(|n| {
        n.flags & SKIP_SW != 0
            || (n.link.is_none()
                && n.ifindex == 0
                && (!u.matches_mark() || n.mark == (0, 0))
                && n.sel.keys.iter().all(|k| {
                    k.offmask == 0 && k.off >= 0 && k.off % 4 == 0 && k.off as usize + 4 <= BYTES
                }))
    })
}

/// Puts the 32-bit word at byte `off` into a key.
fn put(key: &mut [u64; W], off: usize, word: u32) {
    let w = off / 4;
    let shift = if w.is_multiple_of(2) { 32 } else { 0 };
    key[1 + w / 2] |= u64::from(word) << shift;
}

impl U32Run {
    pub fn new(filters: &[Filter], start: usize, end: usize) -> U32Run {
        let mut tss = Tss::new();
        let mut priority = 0u32;
        let mut extent = 0;
        for (i, f) in filters.iter().enumerate().take(end).skip(start) {
            let u = f
                .classifier
                .as_any()
                .downcast_ref::<U32>()
                .expect("a u32 run");
            for (at, n) in root_rules(u).iter().enumerate() {
                if n.flags & SKIP_SW != 0 {
                    continue;
                }
                let (mut mask, mut value) = ([0u64; W], [0u64; W]);
                for k in &n.sel.keys {
                    let off = k.off as usize;
                    extent = extent.max(off + 4);
                    put(&mut mask, off, k.mask);
                    put(&mut value, off, k.val & k.mask);
                }
                if n.sel.flags & TERMINAL == 0 {
                    continue;
                }
                mask[0] = protocol_mask(f.protocol);
                value[0] = u64::from(f.protocol);
                tss.insert(Rule::new(mask, value, priority), (i as u32, at as u32));
                priority += 1;
            }
        }
        U32Run { tss, end, extent }
    }

    /// The run's first rule matching `skb`, and the subtables probed.
    #[inline]
    pub fn lookup(&self, skb: &Skb, protocol: u16) -> (Found, usize) {
        let len = skb.len();
        if len < self.extent {
            return (Found::Fallback, 0);
        }
        let mut key = [0u64; W];
        key[0] = u64::from(protocol);
        // Only the words some rule reads (the others are masked out).
        let data = &skb.data[skb.network..skb.network + self.extent];
        for (w, chunk) in data.chunks_exact(4).enumerate() {
            put(
                &mut key,
                4 * w,
                u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]),
            );
        }
        let (m, stats) = self.tss.lookup_stats(&key);
        let found = match m {
            Some(m) => Found::Hit {
                filter: m.payload.0 as usize,
                rule: m.payload.1,
            },
            None => Found::Miss { end: self.end },
        };
        (found, stats.probed)
    }
}
