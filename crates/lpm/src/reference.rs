//! The reference longest-prefix match: one hash map per prefix length,
//! probed from /32 down. Nothing shared with the tries.

use std::collections::HashMap;

use crate::{NextHopId, Prefix, RouteTable, prefix::mask};

/// Longest-prefix match by brute force over the prefix lengths present.
#[derive(Clone, Debug)]
pub struct Reference {
    /// Per length, masked address -> next hop.
    by_len: Vec<HashMap<u32, NextHopId>>,
    /// The lengths with routes, longest first.
    lens: Vec<u8>,
}

impl Reference {
    pub fn new(table: &RouteTable) -> Reference {
        let mut by_len = vec![HashMap::new(); 33];
        for &(p, nh) in table.routes() {
            by_len[usize::from(p.len())].insert(p.addr(), nh);
        }
        let lens = (0..=32u8)
            .rev()
            .filter(|&l| !by_len[usize::from(l)].is_empty())
            .collect();
        Reference { by_len, lens }
    }

    /// The longest route containing `addr`: its prefix and next hop.
    pub fn route(&self, addr: u32) -> Option<(Prefix, NextHopId)> {
        self.lens.iter().find_map(|&l| {
            let a = addr & mask(l);
            self.by_len[usize::from(l)]
                .get(&a)
                .map(|&nh| (Prefix::truncating(a, l), nh))
        })
    }

    /// The next hop of the longest route containing `addr`.
    pub fn lookup(&self, addr: u32) -> Option<NextHopId> {
        self.route(addr).map(|r| r.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_wins() {
        let mut t = RouteTable::new();
        let (a, b, c) = (
            t.nexthop(None, Some("a")),
            t.nexthop(None, Some("b")),
            t.nexthop(None, Some("c")),
        );
        t.insert("10.0.0.0/8".parse().unwrap(), a);
        t.insert("10.1.0.0/16".parse().unwrap(), b);
        t.insert("10.1.2.3/32".parse().unwrap(), c);
        let r = Reference::new(&t);
        assert_eq!(r.lookup(0x0a01_0203), Some(c));
        assert_eq!(r.lookup(0x0a01_0204), Some(b));
        assert_eq!(r.lookup(0x0a02_0000), Some(a));
        assert_eq!(r.lookup(0x0b00_0000), None);
        t.insert(Prefix::DEFAULT, a);
        assert_eq!(
            Reference::new(&t).route(0x0b00_0000),
            Some((Prefix::DEFAULT, a))
        );
    }
}
