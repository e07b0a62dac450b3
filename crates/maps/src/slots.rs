//! A table of fixed slots indexed by key bytes, with a free list and an
//! optional exact LRU order: the bookkeeping behind hash maps, LRU maps,
//! LPM tries and hash maps of references. Values live elsewhere (in an
//! arena), at an offset derived from the slot number, so a slot's value
//! never moves while the slot is in use.

use std::collections::HashMap;

const NONE: u32 = u32::MAX;

/// Keys come from packets: the index hashes them with a seed drawn per
/// table (foldhash's random state), as the kernel seeds jhash per map.
type Index = HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>;

pub struct SlotTable {
    index: Index,
    keys: Vec<Option<Box<[u8]>>>,
    free: Vec<u32>,
    /// LRU list (most recent first), when the table evicts.
    lru: Option<Lru>,
    /// Keys inserted or removed since the log was last taken, while a
    /// change log is kept ([`SlotTable::keep_log`]).
    log: Option<Vec<Box<[u8]>>>,
}

struct Lru {
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
}

impl Lru {
    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
        self.prev[s as usize] = NONE;
        self.next[s as usize] = NONE;
    }

    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NONE;
        self.next[s as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = s;
        } else {
            self.tail = s;
        }
        self.head = s;
    }
}

impl SlotTable {
    pub fn new(capacity: u32, lru: bool) -> SlotTable {
        let n = capacity as usize;
        SlotTable {
            index: Index::default(),
            keys: (0..n).map(|_| None).collect(),
            // Pop from the end: slot 0 is handed out first.
            free: (0..capacity).rev().collect(),
            lru: lru.then(|| Lru {
                prev: vec![NONE; n],
                next: vec![NONE; n],
                head: NONE,
                tail: NONE,
            }),
            log: None,
        }
    }

    /// Starts (or restarts) logging the keys inserted and removed.
    pub fn keep_log(&mut self) {
        self.log = Some(Vec::new());
    }

    /// The keys inserted or removed since the last call (or `keep_log`).
    pub fn take_log(&mut self) -> Vec<Box<[u8]>> {
        self.log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The key in slot `s`, if the slot is in use.
    pub fn key_of(&self, s: u32) -> Option<&[u8]> {
        self.keys.get(s as usize)?.as_deref()
    }

    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// The slot of `key`, marking it recently used.
    pub fn get(&mut self, key: &[u8]) -> Option<u32> {
        let s = *self.index.get(key)?;
        self.touch(s);
        Some(s)
    }

    /// The slot of `key` without touching the LRU order.
    pub fn peek(&self, key: &[u8]) -> Option<u32> {
        self.index.get(key).copied()
    }

    fn touch(&mut self, s: u32) {
        if let Some(lru) = &mut self.lru {
            lru.unlink(s);
            lru.push_front(s);
        }
    }

    /// A new slot for `key` (which must be absent); `None` when full.
    pub fn insert(&mut self, key: &[u8]) -> Option<u32> {
        let s = self.free.pop()?;
        if let Some(log) = &mut self.log {
            log.push(key.into());
        }
        self.keys[s as usize] = Some(key.into());
        self.index.insert(key.into(), s);
        if let Some(lru) = &mut self.lru {
            lru.push_front(s);
        }
        Some(s)
    }

    /// Frees the least recently used slot; returns it and its key.
    pub fn evict(&mut self) -> Option<(u32, Box<[u8]>)> {
        let tail = self.lru.as_ref()?.tail;
        if tail == NONE {
            return None;
        }
        let key = self.keys[tail as usize].clone()?;
        self.remove(&key);
        Some((tail, key))
    }

    /// Frees the slot of `key`.
    pub fn remove(&mut self, key: &[u8]) -> Option<u32> {
        let s = self.index.remove(key)?;
        if let Some(log) = &mut self.log {
            log.push(key.into());
        }
        self.keys[s as usize] = None;
        if let Some(lru) = &mut self.lru {
            lru.unlink(s);
        }
        self.free.push(s);
        Some(s)
    }

    /// Used slots in slot order, with their keys.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.keys
            .iter()
            .enumerate()
            .filter_map(|(i, k)| k.as_deref().map(|k| (i as u32, k)))
    }

    /// The key that follows `key` in slot order (the first key when `key`
    /// is absent or `None`), as `BPF_MAP_GET_NEXT_KEY` walks a hash map.
    pub fn next_key(&self, key: Option<&[u8]>) -> Option<&[u8]> {
        let start = key.and_then(|k| self.peek(k)).map_or(0, |s| s as usize + 1);
        self.keys[start..].iter().find_map(|k| k.as_deref())
    }
}
