//! Which layout a forwarding program wants, told by the maps it declares:
//! `radix_nodes` -> the radix tree, `lc_nodes` -> the LC-trie,
//! `lpm_routes` -> the kernel's LPM trie map. Front ends
//! (`sluice run|profile|diff --routes`) fill any forwarding program's maps
//! this way without knowing the program.

use crate::{
    LC_NODES, LPM_ROUTES, LayoutError, LcParams, MapEntries, RADIX_NODES, RouteTable,
    lctrie_entries, lpm_trie_entries, radix_entries,
};

/// A route-table layout: a tree in array maps, or one LPM-trie map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Layout {
    Radix,
    LcTrie(LcParams),
    LpmTrie,
}

impl Layout {
    /// The layout of a program with maps named `maps`, if it has one.
    pub fn of_maps<'a>(maps: impl IntoIterator<Item = &'a str>) -> Option<Layout> {
        maps.into_iter().find_map(|m| match m {
            RADIX_NODES => Some(Layout::Radix),
            LC_NODES => Some(Layout::LcTrie(LcParams::default())),
            LPM_ROUTES => Some(Layout::LpmTrie),
            _ => None,
        })
    }

    /// The map entries of `table` in this layout, next hops included.
    pub fn entries(&self, table: &RouteTable) -> Result<MapEntries, LayoutError> {
        match self {
            Layout::Radix => radix_entries(table),
            Layout::LcTrie(p) => lctrie_entries(table, p),
            Layout::LpmTrie => lpm_trie_entries(table),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chosen_by_the_maps() {
        assert_eq!(
            Layout::of_maps(["nexthops", "radix_nodes", "fwd_stats"]),
            Some(Layout::Radix)
        );
        assert!(matches!(
            Layout::of_maps(["lc_base", "lc_nodes"]),
            Some(Layout::LcTrie(_))
        ));
        assert_eq!(
            Layout::of_maps(["nexthops", "lpm_routes"]),
            Some(Layout::LpmTrie)
        );
        assert_eq!(Layout::of_maps(["flows"]), None);
        let t = RouteTable::parse_rib("10.0.0.0/8 192.0.2.1\n").unwrap();
        let e = Layout::Radix.entries(&t).unwrap();
        assert!(e.iter().any(|(m, _, _)| m == "nexthops"));
        assert!(e.iter().any(|(m, _, _)| m == RADIX_NODES));
    }
}
