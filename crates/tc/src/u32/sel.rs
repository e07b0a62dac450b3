//! A u32 rule's selector (the kernel's `struct tc_u32_sel`): up to 128
//! 32-bit keys, each a value and mask compared with the big-endian word at
//! an offset, plus how to reach the next header (offset, eat) and which
//! bits pick the next table's bucket (hashkey). Keys are packed as
//! iproute2's `pack_key` packs them: a key at an offset (and offset mask)
//! already used merges into that key, and a value is always `value & mask`.
//! Words here are host-order numbers of the big-endian words on the wire.

use crate::error::TcError;

/// `TC_U32_TERMINAL`: the rule ends the walk (it has a class or actions).
pub const TERMINAL: u8 = 1;
/// `TC_U32_OFFSET`: the next header is at a fixed `plus`.
pub const OFFSET: u8 = 2;
/// `TC_U32_VAROFFSET`: ... or at a value read from the packet.
pub const VAROFFSET: u8 = 4;
/// `TC_U32_EAT`: move the base offset on to the next header.
pub const EAT: u8 = 8;

/// The most keys one rule holds.
pub const MAX_KEYS: usize = 128;

/// One key: `(word(off + (off2 & offmask)) ^ val) & mask == 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub val: u32,
    pub mask: u32,
    pub off: i32,
    /// -1 (`nexthdr+`): relative to the next header; 0: to the base.
    pub offmask: i32,
}

/// A selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sel {
    pub flags: u8,
    pub offshift: u8,
    pub offmask: u16,
    /// `offset plus` (the kernel keeps 16 bits).
    pub off: u16,
    /// `offset at`: where the 16-bit variable offset is read.
    pub offoff: i16,
    /// `hashkey at`.
    pub hoff: i16,
    /// `hashkey mask`.
    pub hmask: u32,
    pub keys: Vec<Key>,
}

impl Sel {
    /// iproute2's `pack_key`: merges into a key at the same offset and
    /// offset mask (refusing contradicting bits) or appends a new one.
    pub fn pack(&mut self, val: u32, mask: u32, off: i32, offmask: i32) -> Result<(), TcError> {
        let val = val & mask;
        if let Some(k) = self
            .keys
            .iter_mut()
            .find(|k| k.off == off && k.offmask == offmask)
        {
            if (val ^ k.val) & (mask & k.mask) != 0 {
                return Err(format!(
                    "contradicts an earlier key at {off} ({:08x}/{:08x})",
                    k.val, k.mask
                )
                .into());
            }
            k.val |= val;
            k.mask |= mask;
            return Ok(());
        }
        if self.keys.len() >= MAX_KEYS {
            return Err(format!("more than {MAX_KEYS} keys").into());
        }
        if off % 4 != 0 {
            return Err(format!("offset {off} is not a multiple of 4").into());
        }
        self.keys.push(Key {
            val,
            mask,
            off,
            offmask,
        });
        Ok(())
    }

    /// `pack_key16`: a 16-bit field at `off` (its half of the word).
    pub fn pack16(&mut self, val: u32, mask: u32, off: i32, offmask: i32) -> Result<(), TcError> {
        if val > 0xffff || mask > 0xffff {
            return Err(format!("value {val:#x} or mask {mask:#x} is wider than 16 bits").into());
        }
        let shift = if off & 3 == 0 { 16 } else { 0 };
        self.pack(val << shift, mask << shift, off & !3, offmask)
    }

    /// `pack_key8`: an 8-bit field at `off` (its byte of the word).
    pub fn pack8(&mut self, val: u32, mask: u32, off: i32, offmask: i32) -> Result<(), TcError> {
        if val > 0xff || mask > 0xff {
            return Err(format!("value {val:#x} or mask {mask:#x} is wider than 8 bits").into());
        }
        let shift = 8 * (3 - (off & 3)) as u32;
        self.pack(val << shift, mask << shift, off & !3, offmask)
    }

    /// The kernel's `fshift`: how far the hash fold shifts (the lowest set
    /// bit of `hmask`).
    pub fn fshift(&self) -> u32 {
        if self.hmask == 0 {
            0
        } else {
            self.hmask.trailing_zeros()
        }
    }

    /// `u32_hash_fold`: the bucket bits of a word (before the divisor mask).
    pub fn fold(&self, word: u32) -> u32 {
        (word & self.hmask) >> self.fshift()
    }
}

/// iproute2's fold of a `sample` key: its value under its own mask,
/// shifted down to the mask's lowest bit.
pub fn sample_fold(k: &Key) -> u32 {
    let shift = if k.mask == 0 {
        0
    } else {
        k.mask.trailing_zeros()
    };
    (k.val & k.mask) >> shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_merge_by_offset_and_keep_value_under_mask() {
        let mut s = Sel::default();
        s.pack8(8, 0xff, 20, 0).unwrap(); // icmp type
        s.pack8(0, 0xff, 21, 0).unwrap(); // icmp code
        s.pack16(0, 0x3fff, 6, 0).unwrap(); // nofrag
        s.pack16(0x4000, 0x4000, 6, 0).unwrap(); // df
        assert_eq!(
            s.keys,
            [
                Key {
                    val: 0x0800_0000,
                    mask: 0xffff_0000,
                    off: 20,
                    offmask: 0
                },
                Key {
                    val: 0x4000,
                    mask: 0x7fff,
                    off: 4,
                    offmask: 0
                },
            ]
        );
        // Same offset, other offset mask: a new key.
        s.pack8(0x11, 0xff, 8, -1).unwrap();
        assert_eq!(s.keys.len(), 3);
        // value & mask.
        s.pack(0xffff_ffff, 0x0f00_0000, 0, 0).unwrap();
        assert_eq!(s.keys[3].val, 0x0f00_0000);
        // Contradiction, width, alignment.
        assert!(
            s.pack8(9, 0xff, 20, 0)
                .unwrap_err()
                .to_string()
                .contains("contradicts")
        );
        assert!(
            s.pack8(0x1ff, 0xff, 0, 0)
                .unwrap_err()
                .to_string()
                .contains("wider than 8")
        );
        assert!(
            s.pack16(1, 0x1_0000, 0, 0)
                .unwrap_err()
                .to_string()
                .contains("wider than 16")
        );
        assert!(
            s.pack(1, 1, 2, 0)
                .unwrap_err()
                .to_string()
                .contains("multiple of 4")
        );
    }

    #[test]
    fn the_hash_fold_shifts_to_the_mask() {
        let s = Sel {
            hmask: 0x0000_ff00,
            ..Sel::default()
        };
        assert_eq!(s.fshift(), 8);
        assert_eq!(s.fold(0x0a00_0305), 3);
        let k = Key {
            val: 0x50,
            mask: 0xffff,
            off: 0,
            offmask: -1,
        };
        assert_eq!(sample_fold(&k), 80);
        assert_eq!(Sel::default().fold(0x1234), 0);
    }
}
