//! Longest-prefix-match keys: `struct { u32 prefixlen; u8 data[]; }` with
//! the prefix in network order, as `BPF_MAP_TYPE_LPM_TRIE` takes them.

use std::collections::BTreeMap;

/// The table key of an entry: prefix length and the data masked to it.
pub fn normalize(key: &[u8], prefixlen: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len());
    out.extend_from_slice(&prefixlen.to_le_bytes());
    for (i, &b) in key[4..].iter().enumerate() {
        let bits = (prefixlen as usize).saturating_sub(i * 8).min(8);
        let mask = if bits == 0 { 0 } else { 0xffu8 << (8 - bits) };
        out.push(b & mask);
    }
    out
}

pub fn prefixlen(key: &[u8]) -> u32 {
    u32::from_le_bytes([key[0], key[1], key[2], key[3]])
}

/// Prefix lengths in use, longest first, with how many entries use each.
#[derive(Default)]
pub struct PrefixLens(BTreeMap<u32, usize>);

impl PrefixLens {
    pub fn add(&mut self, len: u32) {
        *self.0.entry(len).or_default() += 1;
    }

    pub fn remove(&mut self, len: u32) {
        if let Some(n) = self.0.get_mut(&len) {
            *n -= 1;
            if *n == 0 {
                self.0.remove(&len);
            }
        }
    }

    /// Lengths no longer than `max`, longest first.
    pub fn up_to(&self, max: u32) -> impl Iterator<Item = u32> + '_ {
        self.0.range(..=max).rev().map(|(&l, _)| l)
    }
}
