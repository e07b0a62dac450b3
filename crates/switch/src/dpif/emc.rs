//! The exact-match cache (Open vSwitch's EMC): a direct-mapped table of
//! whole flow keys, each naming the megaflow it hit, checked first. An
//! entry is only a hint: a megaflow removed since (its slot's generation
//! changed) makes it a miss.

use std::hash::BuildHasher;

use crate::flow::{PackedKey, WORDS};

/// Entries (a power of two), as in Open vSwitch.
pub const EMC_ENTRIES: usize = 8192;

#[derive(Clone, Copy)]
struct Entry {
    key: PackedKey,
    slot: u32,
    generation: u32,
}

pub struct Emc {
    entries: Box<[Option<Entry>]>,
    /// Entries in use (kept, not counted: statistics ask every millisecond).
    used: usize,
    hasher: foldhash::fast::FixedState,
}

impl Default for Emc {
    fn default() -> Emc {
        Emc {
            entries: vec![None; EMC_ENTRIES].into_boxed_slice(),
            used: 0,
            hasher: foldhash::fast::FixedState::with_seed(0x0e3c),
        }
    }
}

impl Emc {
    #[inline]
    pub fn hash(&self, key: &PackedKey) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The megaflow slot and generation cached for `key`.
    #[inline]
    pub fn lookup(&self, key: &PackedKey, hash: u64) -> Option<(u32, u32)> {
        let e = self.entries[hash as usize & (EMC_ENTRIES - 1)].as_ref()?;
        (e.key == *key).then_some((e.slot, e.generation))
    }

    /// Caches `key` -> megaflow `slot` of `generation`, replacing the
    /// entry there.
    #[inline]
    pub fn insert(&mut self, key: &PackedKey, hash: u64, slot: u32, generation: u32) {
        let e = &mut self.entries[hash as usize & (EMC_ENTRIES - 1)];
        if e.is_none() {
            self.used += 1;
        }
        *e = Some(Entry {
            key: *key,
            slot,
            generation,
        });
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.used
    }
}

const _: () = assert!(WORDS * 8 == 128, "an EMC entry holds a 128-byte key");
