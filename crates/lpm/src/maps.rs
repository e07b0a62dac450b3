//! What the layouts produce: entries of the forwarding programs' array
//! maps (names and sizes as in `programs/include/fwd.h`), the next-hop
//! map shared by the forwarding programs, and a view of the entries by index for
//! the Rust models of the programs' walks.

use std::collections::HashMap;

use crate::RouteTable;

/// Entries of maps: (map name, key bytes, value bytes), little-endian as
/// the programs read them, for our VM's maps and for kernel maps alike.
/// Keys of array maps are `u32` indexes.
pub type MapEntries = Vec<(String, Vec<u8>, Vec<u8>)>;

/// The next hops: `struct nexthop { u32 ifindex; u8 smac[6]; u8 dmac[6]; }`
/// at the next hop's number (entry 0, "no route", unused).
pub const NEXTHOPS: &str = "nexthops";
pub const NEXTHOPS_MAX: usize = 4096;
/// The radix tree's nodes: `struct radix_node` (24 bytes), the root at 0.
pub const RADIX_NODES: &str = "radix_nodes";
pub const RADIX_NODES_MAX: usize = 1 << 19;
/// The LC-trie's node words (`u32`), the root at 0.
pub const LC_NODES: &str = "lc_nodes";
pub const LC_NODES_MAX: usize = 1 << 20;
/// The LC-trie's base vector: `struct lc_entry` (16 bytes).
pub const LC_BASE: &str = "lc_base";
pub const LC_BASE_MAX: usize = 1 << 18;
/// The LC-trie's prefix vector: `struct lc_entry`, entry 0 unused.
pub const LC_PRE: &str = "lc_pre";
pub const LC_PRE_MAX: usize = 1 << 17;

/// A table too large for a map of the programs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("map {map} would need {needed} entries; the programs declare {max}")]
pub struct LayoutError {
    pub map: &'static str,
    pub needed: usize,
    pub max: usize,
}

pub(crate) fn check(map: &'static str, needed: usize, max: usize) -> Result<(), LayoutError> {
    if needed > max {
        Err(LayoutError { map, needed, max })
    } else {
        Ok(())
    }
}

/// Pushes array entry `index` of `map`.
pub(crate) fn push(out: &mut MapEntries, map: &str, index: usize, value: Vec<u8>) {
    out.push((
        map.to_string(),
        (index as u32).to_le_bytes().to_vec(),
        value,
    ));
}

/// Concatenates little-endian `u32`s.
pub(crate) fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The entries of the next-hop map.
pub fn nexthop_entries(table: &RouteTable) -> Result<MapEntries, LayoutError> {
    check(NEXTHOPS, table.nexthops().len() + 1, NEXTHOPS_MAX)?;
    let mut out = Vec::new();
    for (i, h) in table.nexthops().iter().enumerate() {
        let v = [&h.ifindex.to_le_bytes()[..], &h.smac, &h.dmac].concat();
        push(&mut out, NEXTHOPS, i + 1, v);
    }
    Ok(out)
}

/// Array maps by name, entries by index (absent ones are zeros, as in an
/// array map): what the models of the programs' walks read.
#[derive(Debug, Default)]
pub struct ArrayMaps {
    maps: HashMap<String, HashMap<u32, Vec<u8>>>,
}

impl ArrayMaps {
    pub fn from_entries(entries: &MapEntries) -> ArrayMaps {
        let mut maps: HashMap<String, HashMap<u32, Vec<u8>>> = HashMap::new();
        for (name, k, v) in entries {
            let k = u32::from_le_bytes(k[..4].try_into().expect("array keys are u32"));
            maps.entry(name.clone()).or_default().insert(k, v.clone());
        }
        ArrayMaps { maps }
    }

    /// Word `word` (`u32`) of entry `index` of `map`; 0 when absent.
    pub fn word(&self, map: &str, index: u32, word: usize) -> u32 {
        self.maps
            .get(map)
            .and_then(|m| m.get(&index))
            .and_then(|v| v.get(word * 4..word * 4 + 4))
            .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()))
    }

    /// How many entries `map` has.
    pub fn len(&self, map: &str) -> usize {
        self.maps.get(map).map_or(0, HashMap::len)
    }

    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }
}
