//! Longest-prefix-match keys: `struct { u32 prefixlen; u8 data[]; }` with
//! the prefix in network order, as `BPF_MAP_TYPE_LPM_TRIE` takes them.

use std::collections::BTreeMap;

/// The table key of an entry: prefix length and the data masked to it.
pub fn normalize(key: &[u8], prefixlen: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len());
    normalize_into(key, prefixlen, &mut out);
    out
}

/// [`normalize`] into `out` (cleared first): lookups probe one length after
/// another with one buffer, no allocation per probe.
pub fn normalize_into(key: &[u8], prefixlen: u32, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&prefixlen.to_le_bytes());
    let whole = (prefixlen as usize / 8).min(key.len() - 4);
    out.extend_from_slice(&key[4..4 + whole]);
    let rest = &key[4 + whole..];
    if let Some((&b, zeros)) = rest.split_first() {
        let bits = prefixlen % 8;
        out.push(if bits == 0 {
            0
        } else {
            b & (0xffu8 << (8 - bits))
        });
        out.resize(out.len() + zeros.len(), 0);
    }
}

/// The slot of the longest prefix of `key` (`prefixlen` then data, at most
/// `max` bits) among `lens`, probing `table` from the longest length down.
pub(crate) fn longest_match(
    table: &crate::slots::SlotTable,
    lens: &PrefixLens,
    key: &[u8],
    max: u32,
) -> Option<u32> {
    let mut probe = Vec::with_capacity(key.len());
    lens.up_to(prefixlen(key).min(max)).find_map(|l| {
        normalize_into(key, l, &mut probe);
        table.peek(&probe)
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_masks_the_data_to_the_prefix() {
        let key = [0u8, 0, 0, 0, 0xab, 0xcd, 0xef, 0x12];
        for (len, want) in [
            (0, [0, 0, 0, 0]),
            (4, [0xa0, 0, 0, 0]),
            (8, [0xab, 0, 0, 0]),
            (13, [0xab, 0xc8, 0, 0]),
            (24, [0xab, 0xcd, 0xef, 0]),
            (32, [0xab, 0xcd, 0xef, 0x12]),
        ] {
            let n = normalize(&key, len);
            assert_eq!(n[..4], len.to_le_bytes());
            assert_eq!(n[4..], want, "/{len}");
        }
        // A length past the data keeps all of it.
        assert_eq!(normalize(&key, 40)[4..], key[4..]);
    }
}
