//! An xPF instance's persistent memory: equal blocks of 32-bit words,
//! named by handles, one of them *active* (what `bsp` reaches). The rule:
//! user space changes memory only between packets, so a packet sees one
//! active block from start to end; [`Memory::mswitch`] prepares the new
//! block (keep, zero or copy the old one's words) before making it active.
//! Where the words live is a [`Blocks`] store: vectors for the interpreter
//! ([`VecBlocks`]), map values for the eBPF translation (the map's store
//! is written by the crate that holds the map).

use std::fmt;

/// A block of an instance, by its index (0 is allocated at the start and
/// active).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(pub u32);

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How `mswitch` prepares the block it makes active.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    /// As it is.
    Keep,
    /// All zero.
    Zero,
    /// A copy of the active block.
    Copy,
}

/// A word `mswitch` does not take (it takes keep, zero or copy).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: keep, zero or copy")]
pub struct UnknownSwitch(pub String);

impl std::str::FromStr for Switch {
    type Err = UnknownSwitch;
    fn from_str(s: &str) -> Result<Switch, UnknownSwitch> {
        match s {
            "keep" => Ok(Switch::Keep),
            "zero" => Ok(Switch::Zero),
            "copy" => Ok(Switch::Copy),
            _ => Err(UnknownSwitch(s.to_string())),
        }
    }
}

/// Why a memory operation was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    #[error("all {0} blocks are allocated")]
    Full(u32),
    #[error("block {0} is not allocated")]
    NotAllocated(Handle),
    #[error("block {0} is active: switch to another block first")]
    Active(Handle),
    #[error("words {at}..{end} are outside the {words}-word block")]
    Range { at: u64, end: u64, words: u32 },
    #[error("{0}")]
    Store(String),
}

/// Where blocks' words live.
pub trait Blocks {
    /// Words `at..at + out.len()` of `block` (in range).
    fn read(&self, block: u32, at: u32, out: &mut [u32]) -> Result<(), MemError>;
    /// Writes words from `at` of `block` (in range).
    fn write(&mut self, block: u32, at: u32, words: &[u32]) -> Result<(), MemError>;
    /// Records which block is active (the one packets use from now on)
    /// and which are allocated, a bit per block.
    fn save(&mut self, active: u32, allocated: u64) -> Result<(), MemError>;
    /// What [`Blocks::save`] last recorded, where the store keeps it for
    /// other processes (map values do; vectors do not).
    fn saved(&self) -> Result<Option<(u32, u64)>, MemError> {
        Ok(None)
    }
}

/// Blocks as vectors (the interpreter's).
#[derive(Clone, Debug)]
pub struct VecBlocks {
    blocks: Vec<Vec<u32>>,
    active: usize,
}

impl VecBlocks {
    pub fn new(words: u32, blocks: u32) -> VecBlocks {
        VecBlocks {
            blocks: vec![vec![0; words as usize]; blocks as usize],
            active: 0,
        }
    }

    /// The active block, as a packet sees it.
    pub fn active_mut(&mut self) -> &mut [u32] {
        &mut self.blocks[self.active]
    }
}

impl Blocks for VecBlocks {
    fn read(&self, block: u32, at: u32, out: &mut [u32]) -> Result<(), MemError> {
        let at = at as usize;
        out.copy_from_slice(&self.blocks[block as usize][at..at + out.len()]);
        Ok(())
    }

    fn write(&mut self, block: u32, at: u32, words: &[u32]) -> Result<(), MemError> {
        let at = at as usize;
        self.blocks[block as usize][at..at + words.len()].copy_from_slice(words);
        Ok(())
    }

    fn save(&mut self, active: u32, _allocated: u64) -> Result<(), MemError> {
        self.active = active as usize;
        Ok(())
    }
}

/// The blocks of an instance and their bookkeeping.
#[derive(Clone, Debug)]
pub struct Memory<B> {
    store: B,
    words: u32,
    allocated: Vec<bool>,
    active: u32,
}

impl<B: Blocks> Memory<B> {
    /// `blocks` blocks of `words` words in `store`; block 0 allocated,
    /// zeroed and active.
    pub fn new(mut store: B, words: u32, blocks: u32) -> Result<Memory<B>, MemError> {
        let mut allocated = vec![false; blocks.max(1) as usize];
        allocated[0] = true;
        store.write(0, 0, &vec![0; words as usize])?;
        store.save(0, 1)?;
        Ok(Memory {
            store,
            words,
            allocated,
            active: 0,
        })
    }

    /// The memory another process set up in `store` (with [`Memory::new`]),
    /// as it last recorded it.
    pub fn open(store: B, words: u32, blocks: u32) -> Result<Memory<B>, MemError> {
        let (active, mask) = store
            .saved()?
            .ok_or_else(|| MemError::Store("the store holds no xPF memory state".into()))?;
        let allocated: Vec<bool> = (0..blocks.max(1)).map(|i| mask >> i & 1 == 1).collect();
        if !allocated.get(active as usize).copied().unwrap_or(false) {
            return Err(MemError::Store(format!(
                "the recorded active block {active} is not allocated"
            )));
        }
        Ok(Memory {
            store,
            words,
            allocated,
            active,
        })
    }

    /// Records the bookkeeping in the store.
    fn save(&mut self) -> Result<(), MemError> {
        let mask = (self.allocated.iter().enumerate())
            .filter(|(_, a)| **a)
            .fold(0u64, |m, (i, _)| m | 1 << i);
        self.store.save(self.active, mask)
    }

    pub fn words(&self) -> u32 {
        self.words
    }

    /// The block packets use now.
    pub fn active(&self) -> Handle {
        Handle(self.active)
    }

    /// The allocated blocks, in order.
    pub fn handles(&self) -> Vec<Handle> {
        (0..self.allocated.len() as u32)
            .filter(|&i| self.allocated[i as usize])
            .map(Handle)
            .collect()
    }

    pub fn store(&self) -> &B {
        &self.store
    }

    pub fn store_mut(&mut self) -> &mut B {
        &mut self.store
    }

    fn allocated(&self, h: Handle) -> Result<(), MemError> {
        match self.allocated.get(h.0 as usize) {
            Some(true) => Ok(()),
            _ => Err(MemError::NotAllocated(h)),
        }
    }

    fn range(&self, at: u32, len: usize) -> Result<(), MemError> {
        let end = u64::from(at) + len as u64;
        if end > u64::from(self.words) {
            return Err(MemError::Range {
                at: at.into(),
                end,
                words: self.words,
            });
        }
        Ok(())
    }

    /// A new zeroed block (`malloc`).
    pub fn malloc(&mut self) -> Result<Handle, MemError> {
        let i = self
            .allocated
            .iter()
            .position(|a| !a)
            .ok_or(MemError::Full(self.allocated.len() as u32))?;
        self.store
            .write(i as u32, 0, &vec![0; self.words as usize])?;
        self.allocated[i] = true;
        self.save()?;
        Ok(Handle(i as u32))
    }

    /// Gives a block back; not the active one.
    pub fn free(&mut self, h: Handle) -> Result<(), MemError> {
        self.allocated(h)?;
        if h.0 == self.active {
            return Err(MemError::Active(h));
        }
        self.allocated[h.0 as usize] = false;
        self.save()
    }

    /// `n` words of block `h` from word `at` (`mread`).
    pub fn mread(&self, h: Handle, at: u32, n: usize) -> Result<Vec<u32>, MemError> {
        self.allocated(h)?;
        self.range(at, n)?;
        let mut out = vec![0; n];
        self.store.read(h.0, at, &mut out)?;
        Ok(out)
    }

    /// Writes `words` into block `h` from word `at` (`mwrite`).
    pub fn mwrite(&mut self, h: Handle, at: u32, words: &[u32]) -> Result<(), MemError> {
        self.allocated(h)?;
        self.range(at, words.len())?;
        self.store.write(h.0, at, words)
    }

    /// Makes block `h` the active one, prepared as `how` says; returns the
    /// block that was active (`mswitch`). Switching to the active block
    /// with `Zero` clears it; with `Keep` or `Copy` it changes nothing.
    pub fn mswitch(&mut self, h: Handle, how: Switch) -> Result<Handle, MemError> {
        self.allocated(h)?;
        let old = Handle(self.active);
        match how {
            Switch::Keep => {}
            Switch::Zero => self.store.write(h.0, 0, &vec![0; self.words as usize])?,
            Switch::Copy if h != old => {
                let words = self.mread(old, 0, self.words as usize)?;
                self.store.write(h.0, 0, &words)?;
            }
            Switch::Copy => {}
        }
        let was = self.active;
        self.active = h.0;
        if let Err(e) = self.save() {
            self.active = was;
            return Err(e);
        }
        Ok(old)
    }
}

/// Why a map value was not read or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapValueError {
    /// The value ends before the bytes asked for.
    #[error("the value of {0} is short")]
    Short(u32),
    /// The maps refused (in their own words).
    #[error("{0}")]
    Store(String),
}

/// Map values, as the eBPF translation keeps memory: map 0's value `i` is
/// block `i` (its words in host order), map 1's value 0 the active index.
/// Implemented over sluice's maps and the kernel's by who holds them.
pub trait MapValues {
    /// The value of `key` in `map`.
    fn value(&self, map: usize, key: u32) -> Result<Vec<u8>, MapValueError>;
    /// Sets the value of `key` in `map`.
    fn set_value(&mut self, map: usize, key: u32, value: &[u8]) -> Result<(), MapValueError>;

    /// `out.len()` bytes of the value of `key` from byte `at` (a store
    /// that can reach into a value saves copying all of it).
    fn read_part(
        &self,
        map: usize,
        key: u32,
        at: usize,
        out: &mut [u8],
    ) -> Result<(), MapValueError> {
        let value = self.value(map, key)?;
        let part = value
            .get(at..at + out.len())
            .ok_or(MapValueError::Short(key))?;
        out.copy_from_slice(part);
        Ok(())
    }

    /// Writes `bytes` into the value of `key` from byte `at`.
    fn write_part(
        &mut self,
        map: usize,
        key: u32,
        at: usize,
        bytes: &[u8],
    ) -> Result<(), MapValueError> {
        let mut value = self.value(map, key)?;
        value
            .get_mut(at..at + bytes.len())
            .ok_or(MapValueError::Short(key))?
            .copy_from_slice(bytes);
        self.set_value(map, key, &value)
    }
}

/// Blocks kept in map values.
#[derive(Clone, Debug)]
pub struct MapBlocks<V>(pub V);

impl<V: MapValues> Blocks for MapBlocks<V> {
    fn read(&self, block: u32, at: u32, out: &mut [u32]) -> Result<(), MemError> {
        let mut bytes = vec![0u8; 4 * out.len()];
        self.0
            .read_part(0, block, at as usize * 4, &mut bytes)
            .map_err(|e| MemError::Store(format!("block {block}: {e}")))?;
        for (w, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *w = u32::from_ne_bytes(b.try_into().expect("4 bytes"));
        }
        Ok(())
    }

    fn write(&mut self, block: u32, at: u32, words: &[u32]) -> Result<(), MemError> {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        self.0
            .write_part(0, block, at as usize * 4, &bytes)
            .map_err(|e| MemError::Store(format!("block {block}: {e}")))
    }

    /// Map 1's value: the active index (what the program reads), 4
    /// bytes of padding, the allocation bits.
    fn save(&mut self, active: u32, allocated: u64) -> Result<(), MemError> {
        let mut value = [0u8; 16];
        value[..4].copy_from_slice(&active.to_ne_bytes());
        value[8..].copy_from_slice(&allocated.to_ne_bytes());
        self.0
            .set_value(1, 0, &value)
            .map_err(|e| MemError::Store(e.to_string()))
    }

    fn saved(&self) -> Result<Option<(u32, u64)>, MemError> {
        let v = (self.0.value(1, 0)).map_err(|e| MemError::Store(e.to_string()))?;
        if v.len() < 16 {
            return Ok(None);
        }
        let active = u32::from_ne_bytes(v[..4].try_into().expect("4 bytes"));
        let allocated = u64::from_ne_bytes(v[8..16].try_into().expect("8 bytes"));
        // A map never set up holds zeros: no block allocated.
        Ok((allocated != 0).then_some((active, allocated)))
    }
}

/// The handle operations on any instance's memory, whatever its store.
pub trait MemoryOps {
    fn words(&self) -> u32;
    fn active(&self) -> Handle;
    fn handles(&self) -> Vec<Handle>;
    fn malloc(&mut self) -> Result<Handle, MemError>;
    fn free(&mut self, h: Handle) -> Result<(), MemError>;
    fn mread(&self, h: Handle, at: u32, n: usize) -> Result<Vec<u32>, MemError>;
    fn mwrite(&mut self, h: Handle, at: u32, words: &[u32]) -> Result<(), MemError>;
    fn mswitch(&mut self, h: Handle, how: Switch) -> Result<Handle, MemError>;
}

impl<B: Blocks> MemoryOps for Memory<B> {
    fn words(&self) -> u32 {
        Memory::words(self)
    }
    fn active(&self) -> Handle {
        Memory::active(self)
    }
    fn handles(&self) -> Vec<Handle> {
        Memory::handles(self)
    }
    fn malloc(&mut self) -> Result<Handle, MemError> {
        Memory::malloc(self)
    }
    fn free(&mut self, h: Handle) -> Result<(), MemError> {
        Memory::free(self, h)
    }
    fn mread(&self, h: Handle, at: u32, n: usize) -> Result<Vec<u32>, MemError> {
        Memory::mread(self, h, at, n)
    }
    fn mwrite(&mut self, h: Handle, at: u32, words: &[u32]) -> Result<(), MemError> {
        Memory::mwrite(self, h, at, words)
    }
    fn mswitch(&mut self, h: Handle, how: Switch) -> Result<Handle, MemError> {
        Memory::mswitch(self, h, how)
    }
}
