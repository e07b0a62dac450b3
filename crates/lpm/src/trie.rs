//! The kernel's longest-prefix-match map (`BPF_MAP_TYPE_LPM_TRIE`) for
//! `programs/fwd_lpm_trie.c`: one entry per route, the map doing the
//! matching. Keys are `struct bpf_lpm_trie_key` with four bytes of data:
//! `u32 prefixlen` (little-endian, as the host writes it) then the prefix
//! in network order; values the next hop's number (`u32`).

use crate::maps::{LayoutError, MapEntries, check, nexthop_entries};
use crate::{Prefix, RouteTable};

/// The routes: `struct lpm_route_key { u32 prefixlen; __be32 addr; }` ->
/// `u32` next hop.
pub const LPM_ROUTES: &str = "lpm_routes";
pub const LPM_ROUTES_MAX: usize = 1 << 18;

/// The key of `prefix` in [`LPM_ROUTES`].
pub fn lpm_trie_key(prefix: Prefix) -> Vec<u8> {
    [
        u32::from(prefix.len()).to_le_bytes(),
        prefix.addr().to_be_bytes(),
    ]
    .concat()
}

/// The routes of `table` and its next hops, as map entries.
pub fn lpm_trie_entries(table: &RouteTable) -> Result<MapEntries, LayoutError> {
    check(LPM_ROUTES, table.len(), LPM_ROUTES_MAX)?;
    let mut out = nexthop_entries(table)?;
    for &(prefix, nh) in table.routes() {
        out.push((
            LPM_ROUTES.to_string(),
            lpm_trie_key(prefix),
            nh.to_le_bytes().to_vec(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NEXTHOPS, Reference, Synth, test_addresses};

    #[test]
    fn keys_are_the_kernels_layout() {
        let p: Prefix = "10.1.128.0/17".parse().unwrap();
        assert_eq!(lpm_trie_key(p), [17, 0, 0, 0, 10, 1, 128, 0]);
        assert_eq!(lpm_trie_key(Prefix::DEFAULT), [0; 8]);
    }

    #[test]
    fn one_entry_per_route_and_next_hop() {
        let mut t = RouteTable::new();
        let a = t.nexthop(None, Some("a"));
        let b = t.nexthop(None, Some("b"));
        t.insert("10.0.0.0/8".parse().unwrap(), a);
        t.insert("10.1.0.0/16".parse().unwrap(), b);
        t.insert(Prefix::DEFAULT, b);
        let e = lpm_trie_entries(&t).unwrap();
        let routes: Vec<_> = e.iter().filter(|(m, ..)| m == LPM_ROUTES).collect();
        assert_eq!(routes.len(), 3);
        assert!(routes.contains(&&(
            LPM_ROUTES.to_string(),
            vec![16, 0, 0, 0, 10, 1, 0, 0],
            b.to_le_bytes().to_vec()
        )));
        assert_eq!(e.iter().filter(|(m, ..)| m == NEXTHOPS).count(), 2);
    }

    /// A longest match over the entries' keys, read back as the kernel
    /// would match them, agrees with the reference.
    #[test]
    fn a_longest_match_over_the_keys_agrees_with_the_reference() {
        let t = RouteTable::synthetic(&Synth {
            prefixes: 3000,
            ..Synth::default()
        });
        let mut by_len: Vec<std::collections::HashMap<u32, u32>> = vec![Default::default(); 33];
        for (m, k, v) in lpm_trie_entries(&t).unwrap() {
            if m == LPM_ROUTES {
                let len = u32::from_le_bytes(k[..4].try_into().unwrap());
                let addr = u32::from_be_bytes(k[4..].try_into().unwrap());
                let nh = u32::from_le_bytes(v[..].try_into().unwrap());
                by_len[len as usize].insert(addr, nh);
            }
        }
        let r = Reference::new(&t);
        for a in test_addresses(&t, 20_000, 7) {
            let got = (0..=32u8)
                .rev()
                .find_map(|l| by_len[usize::from(l)].get(&(a & crate::mask(l))).copied());
            assert_eq!(got, r.lookup(a), "{}", std::net::Ipv4Addr::from(a));
        }
    }

    #[test]
    fn too_many_routes_is_an_error() {
        let t = RouteTable::synthetic(&Synth {
            prefixes: LPM_ROUTES_MAX + 1,
            ..Synth::default()
        });
        let e = lpm_trie_entries(&t).unwrap_err();
        assert_eq!(e.map, LPM_ROUTES);
    }
}
