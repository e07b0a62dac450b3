//! Synthetic route tables with the prefix-length mix of a real BGP table,
//! and the addresses the tests look up in them.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use crate::rng::Rng;
use crate::{Prefix, RouteTable};

/// Routes per 10,000 of each prefix length. The figures are rounded from
/// the IPv4 default-free table as public BGP table reports describe it in
/// the 2020s (the CIDR Report and Huston's yearly BGP analyses): about 60%
/// /24, /22 and /23 about 10% each, /21 ... /17 about 10% together, /16
/// about 1.4%, shorter ones rare and longer than /24 (which most networks
/// filter) a fraction of a percent. From memory of those reports, not
/// measured from a dump here; a dump can be loaded with
/// [`RouteTable::parse_rib`] instead.
pub const LENGTH_MIX: [(u8, u32); 24] = [
    (8, 2),
    (9, 2),
    (10, 5),
    (11, 10),
    (12, 25),
    (13, 45),
    (14, 80),
    (15, 100),
    (16, 140),
    (17, 90),
    (18, 150),
    (19, 300),
    (20, 400),
    (21, 450),
    (22, 1050),
    (23, 1000),
    (24, 6025),
    (25, 30),
    (26, 30),
    (27, 25),
    (28, 20),
    (29, 10),
    (30, 6),
    (32, 5),
];

/// The share of prefixes placed inside a shorter prefix already in the
/// table (more specifics), the rest anywhere: real tables nest, and the
/// tries' handling of nested prefixes needs exercising.
const NESTED_PERCENT: u64 = 30;

/// What to generate.
#[derive(Clone, Debug)]
pub struct Synth {
    /// Routes in all, the default route included.
    pub prefixes: usize,
    pub seed: u64,
    /// Distinct next hops (gateways 172.16.0.1, 172.16.0.2, ... over
    /// devices `eth0` .. `eth3`).
    pub nexthops: u32,
    pub default_route: bool,
}

impl Default for Synth {
    fn default() -> Synth {
        Synth {
            prefixes: 100_000,
            seed: 1,
            nexthops: 64,
            default_route: true,
        }
    }
}

impl RouteTable {
    /// A table of `spec.prefixes` unique prefixes with the lengths of
    /// [`LENGTH_MIX`], the same for the same spec.
    pub fn synthetic(spec: &Synth) -> RouteTable {
        let mut rng = Rng::new(spec.seed);
        let mut t = RouteTable::new();
        let hops: Vec<_> = (0..spec.nexthops.max(1))
            .map(|i| {
                let gw = Ipv4Addr::from(0xac10_0001u32 + i);
                t.nexthop(Some(gw), Some(&format!("eth{}", i % 4)))
            })
            .collect();
        let hop = |rng: &mut Rng| hops[rng.below(hops.len() as u64) as usize];
        let mut n = spec.prefixes;
        if spec.default_route && n > 0 {
            let h = hop(&mut rng);
            t.insert(Prefix::DEFAULT, h);
            n -= 1;
        }
        // Counts per length; what a short length cannot hold (at most a
        // quarter of its space) goes to /24.
        let total: u32 = LENGTH_MIX.iter().map(|m| m.1).sum();
        let mut counts: Vec<(u8, usize)> = LENGTH_MIX
            .iter()
            .map(|&(l, w)| {
                let c = (n as u64 * u64::from(w) / u64::from(total)) as usize;
                (l, c.min((1usize << l) / 4))
            })
            .collect();
        let placed: usize = counts.iter().map(|c| c.1).sum();
        counts.iter_mut().find(|c| c.0 == 24).unwrap().1 += n - placed;
        let mut all: Vec<Prefix> = Vec::with_capacity(n);
        let mut seen = HashSet::with_capacity(n);
        for (len, count) in counts {
            let shorter = all.len();
            let mut made = 0;
            while made < count {
                let addr = if shorter > 0 && rng.below(100) < NESTED_PERCENT {
                    let outer = all[rng.below(shorter as u64) as usize];
                    outer.addr() | (rng.next_u32() & !outer.mask())
                } else {
                    rng.next_u32()
                };
                let p = Prefix::truncating(addr, len);
                if seen.insert(p) {
                    all.push(p);
                    let h = hop(&mut rng);
                    t.insert(p, h);
                    made += 1;
                }
            }
        }
        t
    }
}

/// `n` addresses to look up in `table`: 0.0.0.0 and 255.255.255.255,
/// then a quarter edges of random routes (first and last address, and the
/// addresses just outside), a third inside random routes, the rest
/// uniformly random.
pub fn test_addresses(table: &RouteTable, n: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed ^ 0x5eed);
    let mut v = vec![0, u32::MAX];
    let routes = table.routes();
    let route = |rng: &mut Rng| routes[rng.below(routes.len() as u64) as usize].0;
    while v.len() < n {
        let k = v.len() * 12 / n.max(1);
        let a = if routes.is_empty() || k >= 7 {
            rng.next_u32()
        } else if k < 3 {
            let p = route(&mut rng);
            match rng.below(4) {
                0 => p.first(),
                1 => p.last(),
                2 => p.first().wrapping_sub(1),
                _ => p.last().wrapping_add(1),
            }
        } else {
            let p = route(&mut rng);
            p.addr() | (rng.next_u32() & !p.mask())
        };
        v.push(a);
    }
    v.truncate(n);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_and_determinism() {
        let spec = Synth {
            prefixes: 20_000,
            ..Synth::default()
        };
        let t = RouteTable::synthetic(&spec);
        assert_eq!(t.len(), 20_000);
        assert!(t.get(Prefix::DEFAULT).is_some());
        let share =
            |l: u8| t.routes().iter().filter(|r| r.0.len() == l).count() as f64 / t.len() as f64;
        assert!((share(24) - 0.60).abs() < 0.01, "{}", share(24));
        assert!((share(22) - 0.105).abs() < 0.01);
        assert!((share(16) - 0.014).abs() < 0.003);
        assert_eq!(t.routes(), RouteTable::synthetic(&spec).routes());
        let other = RouteTable::synthetic(&Synth {
            seed: 2,
            ..spec.clone()
        });
        assert_ne!(t.routes(), other.routes());
        let none = RouteTable::synthetic(&Synth {
            default_route: false,
            ..spec
        });
        assert_eq!(none.len(), 20_000);
        assert!(none.get(Prefix::DEFAULT).is_none());
        let a = test_addresses(&t, 1000, 3);
        assert_eq!(a.len(), 1000);
        assert_eq!(&a[..2], &[0, u32::MAX]);
    }
}
