//! eBPF maps with the Linux kernel's semantics: the flags, errors and limits
//! of `bpf_map_*` helpers and of the `bpf()` map commands.
//!
//! A [`Map`] keeps its values in a zeroed arena that never moves, so a
//! program can hold a pointer to a value (as the kernel's `lookup` gives
//! one) while user space reads and writes the same map through the
//! `user_*` API. Per-CPU maps keep one copy per simulated CPU.
//!
//! ```
//! use maps::{Map, MapSpec, MapType, update};
//! let mut m = Map::new(MapSpec::new("counts", MapType::Hash, 4, 8, 16), 1).unwrap();
//! m.user_update(&7u32.to_le_bytes(), &1u64.to_le_bytes(), update::NOEXIST).unwrap();
//! assert_eq!(m.user_update(&7u32.to_le_bytes(), &2u64.to_le_bytes(), update::NOEXIST), Err(maps::Errno::EEXIST));
//! assert_eq!(m.user_lookup(&7u32.to_le_bytes()).unwrap(), 1u64.to_le_bytes());
//! ```

mod arena;
mod errno;
mod lpm;
mod ringbuf;
mod slots;
mod spec;
mod values;

use std::collections::VecDeque;

pub use errno::Errno;
pub use ringbuf::RingBuf;
pub use spec::{MapSpec, MapType, flags, update};

use slots::SlotTable;
use values::Values;

/// Why a map cannot be created (the kernel answers `EINVAL`, sluice says why).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("map {name} ({map_type}): {reason}")]
pub struct MapError {
    pub name: String,
    pub map_type: MapType,
    pub reason: String,
}

/// Largest map a simulation allocates up front (values of all slots and CPUs).
pub const MAX_MAP_BYTES: u64 = 4 << 30;

enum Store {
    /// array, percpu_array.
    Array(Values),
    /// hash, percpu_hash, lru_hash, lru_percpu_hash.
    Hash {
        table: SlotTable,
        values: Values,
    },
    /// lpm_trie: slots keyed by the normalised prefix; `stored` keeps each
    /// slot's key as written.
    Lpm {
        table: SlotTable,
        values: Values,
        lens: lpm::PrefixLens,
        stored: Vec<Vec<u8>>,
    },
    /// prog_array, array_of_maps, devmap, cpumap, xskmap, perf_event_array:
    /// indexed entries that may be empty.
    RefArray {
        present: Vec<bool>,
        values: Values,
    },
    /// hash_of_maps, devmap_hash.
    RefHash {
        table: SlotTable,
        values: Values,
    },
    /// queue, stack.
    Fifo {
        items: VecDeque<Vec<u8>>,
        lifo: bool,
    },
    Ring(RingBuf),
    /// perf_event_array output: records per CPU index.
    Perf {
        records: Vec<Vec<Vec<u8>>>,
    },
}

/// One map.
pub struct Map {
    spec: MapSpec,
    ncpus: u32,
    store: Store,
    frozen: bool,
}

fn u32_key(key: &[u8]) -> u32 {
    u32::from_le_bytes(key[..4].try_into().expect("4-byte key"))
}

fn check_update_flags(flags: u64) -> Result<(), Errno> {
    if flags & !update::F_LOCK > update::EXIST {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// `BPF_NOEXIST` / `BPF_EXIST` against whether the element exists.
fn check_exists(flags: u64, exists: bool) -> Result<(), Errno> {
    match flags & !update::F_LOCK {
        update::NOEXIST if exists => Err(Errno::EEXIST),
        update::EXIST if !exists => Err(Errno::ENOENT),
        _ => Ok(()),
    }
}

impl Map {
    /// Creates a map, refusing the definitions the kernel refuses.
    pub fn new(spec: MapSpec, ncpus: u32) -> Result<Map, MapError> {
        let fail = |reason: String| MapError {
            name: spec.name.clone(),
            map_type: spec.map_type,
            reason,
        };
        let ncpus = ncpus.max(1);
        let (k, v, n) = (spec.key_size, spec.value_size, spec.max_entries);
        let copies = if spec.map_type.is_percpu() {
            ncpus as usize
        } else {
            1
        };
        let need = |what: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(fail(what.to_string()))
            }
        };
        use MapType::*;
        match spec.map_type {
            Ringbuf => {
                need("key_size and value_size must be 0", k == 0 && v == 0)?;
                need(
                    "max_entries must be a power of 2 and a multiple of the 4096-byte page",
                    n >= 4096 && n.is_power_of_two(),
                )?;
            }
            Queue | Stack => {
                need("key_size must be 0", k == 0)?;
                need("value_size must not be 0", v > 0)?;
                need("max_entries must not be 0", n > 0)?;
            }
            LpmTrie => {
                need(
                    "map_flags must include BPF_F_NO_PREALLOC",
                    spec.flags & flags::NO_PREALLOC != 0,
                )?;
                need(
                    "key_size must be 5 to 260 (u32 prefixlen + 1..256 bytes)",
                    (5..=260).contains(&k),
                )?;
                need("value_size must not be 0", v > 0)?;
                need("max_entries must not be 0", n > 0)?;
            }
            Array | PercpuArray | ProgArray | ArrayOfMaps | Devmap | Cpumap | Xskmap
            | PerfEventArray => {
                need("key_size must be 4", k == 4)?;
                need(
                    "max_entries must not be 0",
                    n > 0 || spec.map_type == PerfEventArray,
                )?;
                match spec.map_type {
                    Array | PercpuArray => need("value_size must not be 0", v > 0)?,
                    Devmap => need("value_size must be 4 or 8", v == 4 || v == 8)?,
                    Cpumap => need("value_size must be 4 or 8", v == 4 || v == 8)?,
                    _ => need("value_size must be 4", v == 4)?,
                }
            }
            Hash | PercpuHash | LruHash | LruPercpuHash | HashOfMaps | DevmapHash => {
                need("key_size must not be 0", k > 0)?;
                need("max_entries must not be 0", n > 0)?;
                match spec.map_type {
                    HashOfMaps => need("value_size must be 4", v == 4)?,
                    DevmapHash => {
                        need("key_size must be 4", k == 4)?;
                        need("value_size must be 4 or 8", v == 4 || v == 8)?;
                    }
                    _ => need("value_size must not be 0", v > 0)?,
                }
            }
        }
        // Values of every slot and CPU, plus about 32 bytes of bookkeeping per slot.
        let bytes = u64::from(n) * ((u64::from(v).div_ceil(8) * 8) * copies as u64 + 32);
        need(
            &format!("needs {bytes} bytes of values, more than sluice allocates ({MAX_MAP_BYTES})"),
            bytes <= MAX_MAP_BYTES,
        )?;

        let (n, v) = (n as usize, v as usize);
        let store = match spec.map_type {
            Array | PercpuArray => Store::Array(Values::new(n, v, copies)),
            Hash | PercpuHash => Store::Hash {
                table: SlotTable::new(n as u32, false),
                values: Values::new(n, v, copies),
            },
            LruHash | LruPercpuHash => Store::Hash {
                table: SlotTable::new(n as u32, true),
                values: Values::new(n, v, copies),
            },
            LpmTrie => Store::Lpm {
                table: SlotTable::new(n as u32, false),
                values: Values::new(n, v, 1),
                lens: lpm::PrefixLens::default(),
                stored: vec![Vec::new(); n],
            },
            ProgArray | ArrayOfMaps | Devmap | Cpumap | Xskmap => Store::RefArray {
                present: vec![false; n],
                values: Values::new(n, v, 1),
            },
            HashOfMaps | DevmapHash => Store::RefHash {
                table: SlotTable::new(n as u32, false),
                values: Values::new(n, v, 1),
            },
            Queue => Store::Fifo {
                items: VecDeque::new(),
                lifo: false,
            },
            Stack => Store::Fifo {
                items: VecDeque::new(),
                lifo: true,
            },
            Ringbuf => Store::Ring(RingBuf::new(n)),
            PerfEventArray => Store::Perf {
                records: vec![Vec::new(); ncpus as usize],
            },
        };
        Ok(Map {
            spec,
            ncpus,
            store,
            frozen: false,
        })
    }

    pub fn spec(&self) -> &MapSpec {
        &self.spec
    }

    pub fn map_type(&self) -> MapType {
        self.spec.map_type
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn ncpus(&self) -> u32 {
        self.ncpus
    }

    /// `BPF_MAP_FREEZE`: user space can no longer write (`.rodata`).
    pub fn freeze(&mut self) {
        self.frozen = true;
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// Whether programs may write the map's values.
    pub fn program_writable(&self) -> bool {
        self.spec.flags & flags::RDONLY_PROG == 0
            && !matches!(
                self.spec.map_type,
                MapType::Devmap | MapType::DevmapHash | MapType::Cpumap
            )
    }

    /// The value storage a program may point into: `(address, length)`.
    pub fn value_region(&self) -> Option<(u64, usize)> {
        let arena = match &self.store {
            Store::Array(v) | Store::Hash { values: v, .. } | Store::Lpm { values: v, .. } => {
                &v.arena
            }
            Store::RefArray { values, .. } | Store::RefHash { values, .. } => &values.arena,
            Store::Ring(r) => &r.arena,
            Store::Fifo { .. } | Store::Perf { .. } => return None,
        };
        (!arena.is_empty()).then(|| (arena.addr(0), arena.len()))
    }

    /// Number of entries in use (array maps: `max_entries`).
    pub fn len(&self) -> usize {
        match &self.store {
            Store::Array(_) => self.spec.max_entries as usize,
            Store::Hash { table, .. } | Store::Lpm { table, .. } | Store::RefHash { table, .. } => {
                table.len()
            }
            Store::RefArray { present, .. } => present.iter().filter(|p| **p).count(),
            Store::Fifo { items, .. } => items.len(),
            Store::Ring(r) => r.pending(),
            Store::Perf { records } => records.iter().map(Vec::len).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn check_key(&self, key: &[u8]) -> Result<(), Errno> {
        if key.len() < self.spec.key_size as usize {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    // ---- the program side (helpers) ----

    /// `bpf_map_lookup_elem` for value maps: the address of the value (this
    /// CPU's copy for per-CPU maps), or `None` (NULL).
    pub fn lookup_addr(&mut self, key: &[u8], cpu: u32) -> Option<u64> {
        self.check_key(key).ok()?;
        match &mut self.store {
            Store::Array(values) => {
                let i = u32_key(key);
                (i < self.spec.max_entries).then(|| values.addr(i, cpu))
            }
            Store::Hash { table, values } => table
                .get(&key[..self.spec.key_size as usize])
                .map(|s| values.addr(s, cpu)),
            Store::Lpm {
                table,
                values,
                lens,
                ..
            } => {
                let max = (self.spec.key_size - 4) * 8;
                let want = lpm::prefixlen(key).min(max);
                let key = &key[..self.spec.key_size as usize];
                lens.up_to(want)
                    .find_map(|l| table.peek(&lpm::normalize(key, l)))
                    .map(|s| values.addr(s, 0))
            }
            Store::RefArray { present, values } => {
                let i = u32_key(key) as usize;
                (i < present.len() && present[i]).then(|| values.addr(i as u32, 0))
            }
            Store::RefHash { table, values } => table.peek(&key[..4]).map(|s| values.addr(s, 0)),
            Store::Fifo { .. } | Store::Ring(_) | Store::Perf { .. } => None,
        }
    }

    /// `bpf_map_update_elem` from a program: per-CPU maps update this CPU's copy.
    pub fn prog_update(
        &mut self,
        key: &[u8],
        value: &[u8],
        flags: u64,
        cpu: u32,
    ) -> Result<(), Errno> {
        self.update(key, value, flags, Some(cpu))
    }

    /// `bpf_map_delete_elem` (programs and user space alike).
    pub fn delete(&mut self, key: &[u8]) -> Result<(), Errno> {
        self.check_key(key)?;
        let ks = self.spec.key_size as usize;
        match &mut self.store {
            Store::Array(_) => Err(Errno::EINVAL),
            Store::Hash { table, values } => {
                let s = table.remove(&key[..ks]).ok_or(Errno::ENOENT)?;
                values.clear(s);
                Ok(())
            }
            Store::Lpm {
                table,
                values,
                lens,
                stored,
            } => {
                let plen = lpm::prefixlen(key);
                if plen > (self.spec.key_size - 4) * 8 {
                    return Err(Errno::EINVAL);
                }
                let s = table
                    .remove(&lpm::normalize(&key[..ks], plen))
                    .ok_or(Errno::ENOENT)?;
                lens.remove(plen);
                values.clear(s);
                stored[s as usize].clear();
                Ok(())
            }
            Store::RefArray { present, values } => {
                let i = u32_key(key) as usize;
                if i >= present.len() {
                    // devmap/cpumap/xskmap answer EINVAL, fd arrays E2BIG.
                    return Err(match self.spec.map_type {
                        MapType::ProgArray | MapType::ArrayOfMaps | MapType::PerfEventArray => {
                            Errno::E2BIG
                        }
                        _ => Errno::EINVAL,
                    });
                }
                let was = std::mem::replace(&mut present[i], false);
                values.clear(i as u32);
                match self.spec.map_type {
                    MapType::ProgArray | MapType::ArrayOfMaps if !was => Err(Errno::ENOENT),
                    _ => Ok(()),
                }
            }
            Store::RefHash { table, values } => {
                let s = table.remove(&key[..4]).ok_or(Errno::ENOENT)?;
                values.clear(s);
                Ok(())
            }
            Store::Fifo { .. } | Store::Ring(_) | Store::Perf { .. } => Err(Errno::EINVAL),
        }
    }

    /// `bpf_map_push_elem` (queue, stack).
    pub fn push(&mut self, value: &[u8], flags: u64) -> Result<(), Errno> {
        let Store::Fifo { items, .. } = &mut self.store else {
            return Err(Errno::EINVAL);
        };
        if flags & update::NOEXIST != 0 || flags > update::EXIST {
            return Err(Errno::EINVAL);
        }
        if items.len() >= self.spec.max_entries as usize {
            if flags & update::EXIST == 0 {
                return Err(Errno::E2BIG);
            }
            // BPF_EXIST overwrites the oldest element, for queues and stacks alike.
            items.pop_front();
        }
        items.push_back(value[..self.spec.value_size as usize].to_vec());
        Ok(())
    }

    /// `bpf_map_pop_elem` / `bpf_map_peek_elem`.
    pub fn pop(&mut self, remove: bool) -> Result<Vec<u8>, Errno> {
        let Store::Fifo { items, lifo } = &mut self.store else {
            return Err(Errno::EINVAL);
        };
        let item = match (*lifo, remove) {
            (false, true) => items.pop_front(),
            (true, true) => items.pop_back(),
            (false, false) => items.front().cloned(),
            (true, false) => items.back().cloned(),
        };
        item.ok_or(Errno::ENOENT)
    }

    /// The ring buffer of a ringbuf map.
    pub fn ringbuf(&mut self) -> Option<&mut RingBuf> {
        match &mut self.store {
            Store::Ring(r) => Some(r),
            _ => None,
        }
    }

    /// `bpf_perf_event_output`: appends a record for CPU slot `index`.
    pub fn perf_output(&mut self, index: u32, data: Vec<u8>) -> Result<(), Errno> {
        let limit = self.spec.max_entries.max(self.ncpus);
        let Store::Perf { records } = &mut self.store else {
            return Err(Errno::EINVAL);
        };
        if index >= limit {
            return Err(Errno::E2BIG);
        }
        let i = index as usize;
        if records.len() <= i {
            records.resize(i + 1, Vec::new());
        }
        records[i].push(data);
        Ok(())
    }

    /// Takes the perf records of every CPU slot: `(index, record)`.
    pub fn perf_drain(&mut self) -> Vec<(u32, Vec<u8>)> {
        let Store::Perf { records } = &mut self.store else {
            return Vec::new();
        };
        records
            .iter_mut()
            .enumerate()
            .flat_map(|(i, r)| std::mem::take(r).into_iter().map(move |d| (i as u32, d)))
            .collect()
    }

    /// The u32 an entry of a reference map holds (program, map, ifindex,
    /// queue size or socket), for tail calls, map-in-map lookups and
    /// redirects.
    pub fn ref_at(&self, key: &[u8]) -> Option<u32> {
        match &self.store {
            Store::RefArray { present, values } => {
                let i = u32_key(key) as usize;
                (i < present.len() && present[i]).then(|| u32_key(values.get(i as u32, 0)))
            }
            Store::RefHash { table, values } => {
                table.peek(&key[..4]).map(|s| u32_key(values.get(s, 0)))
            }
            _ => None,
        }
    }

    // ---- the user side (bpf syscall commands) ----

    /// `BPF_MAP_LOOKUP_ELEM`: a copy of the value (every CPU's copy, each
    /// rounded up to 8 bytes, for per-CPU maps; the head for queues).
    pub fn user_lookup(&self, key: &[u8]) -> Result<Vec<u8>, Errno> {
        let ks = self.spec.key_size as usize;
        match &self.store {
            Store::Array(values) => {
                self.check_key(key)?;
                let i = u32_key(key);
                if i >= self.spec.max_entries {
                    return Err(Errno::ENOENT);
                }
                Ok(if values.copies > 1 {
                    values.get_all(i)
                } else {
                    values.get(i, 0).to_vec()
                })
            }
            Store::Hash { table, values } => {
                self.check_key(key)?;
                let s = table.peek(&key[..ks]).ok_or(Errno::ENOENT)?;
                Ok(if values.copies > 1 {
                    values.get_all(s)
                } else {
                    values.get(s, 0).to_vec()
                })
            }
            Store::Lpm {
                table,
                values,
                lens,
                ..
            } => {
                self.check_key(key)?;
                let want = lpm::prefixlen(key).min((self.spec.key_size - 4) * 8);
                let s = lens
                    .up_to(want)
                    .find_map(|l| table.peek(&lpm::normalize(&key[..ks], l)))
                    .ok_or(Errno::ENOENT)?;
                Ok(values.get(s, 0).to_vec())
            }
            Store::RefArray { present, values } => {
                self.check_key(key)?;
                let i = u32_key(key) as usize;
                if i >= present.len() || !present[i] {
                    return Err(Errno::ENOENT);
                }
                Ok(values.get(i as u32, 0).to_vec())
            }
            Store::RefHash { table, values } => {
                self.check_key(key)?;
                let s = table.peek(&key[..4]).ok_or(Errno::ENOENT)?;
                Ok(values.get(s, 0).to_vec())
            }
            Store::Fifo { items, lifo } => {
                let item = if *lifo { items.back() } else { items.front() };
                item.cloned().ok_or(Errno::ENOENT)
            }
            Store::Ring(_) | Store::Perf { .. } => Err(Errno::EOPNOTSUPP),
        }
    }

    /// `BPF_MAP_UPDATE_ELEM` from user space (per-CPU maps take every CPU's
    /// copy); refused on frozen maps.
    pub fn user_update(&mut self, key: &[u8], value: &[u8], flags: u64) -> Result<(), Errno> {
        if self.frozen {
            return Err(Errno::EPERM);
        }
        if let Store::Fifo { .. } = self.store {
            return self.push(value, flags);
        }
        self.update(key, value, flags, None)
    }

    /// Bytes a user-space value of this map has.
    pub fn user_value_len(&self) -> usize {
        match &self.store {
            Store::Array(v) | Store::Hash { values: v, .. } => v.user_len(),
            _ => self.spec.value_size as usize,
        }
    }

    /// The update behind both sides; `cpu` is `Some` for programs.
    fn update(
        &mut self,
        key: &[u8],
        value: &[u8],
        flags: u64,
        cpu: Option<u32>,
    ) -> Result<(), Errno> {
        self.check_key(key)?;
        let ks = self.spec.key_size as usize;
        let vlen = match (cpu, &self.store) {
            (None, Store::Array(v) | Store::Hash { values: v, .. }) => v.user_len(),
            _ => self.spec.value_size as usize,
        };
        if value.len() < vlen {
            return Err(Errno::EINVAL);
        }
        let value = &value[..vlen];
        let map_type = self.spec.map_type;
        match &mut self.store {
            Store::Array(values) => {
                check_update_flags(flags)?;
                let i = u32_key(key);
                if i >= self.spec.max_entries {
                    return Err(Errno::E2BIG);
                }
                if flags & !update::F_LOCK == update::NOEXIST {
                    return Err(Errno::EEXIST);
                }
                match cpu {
                    Some(c) => values.set(i, c, value),
                    None if values.copies > 1 => values.set_all(i, value),
                    None => values.set(i, 0, value),
                }
                Ok(())
            }
            Store::Hash { table, values } => {
                check_update_flags(flags)?;
                let k = &key[..ks];
                // Check the flags before touching the LRU order: a refused
                // update leaves recency alone.
                check_exists(flags, table.peek(k).is_some())?;
                let (slot, fresh) = match table.get(k) {
                    Some(s) => (s, false),
                    None => {
                        let s = match table.insert(k) {
                            Some(s) => s,
                            None => {
                                // LRU maps evict; the others are full.
                                table.evict().ok_or(Errno::E2BIG)?;
                                table.insert(k).ok_or(Errno::E2BIG)?
                            }
                        };
                        (s, true)
                    }
                };
                match cpu {
                    Some(c) => values.set_from_prog(slot, c, value, fresh),
                    None if values.copies > 1 => values.set_all(slot, value),
                    None => values.set(slot, 0, value),
                }
                Ok(())
            }
            Store::Lpm {
                table,
                values,
                lens,
                stored,
            } => {
                if flags > update::EXIST {
                    return Err(Errno::EINVAL);
                }
                let plen = lpm::prefixlen(key);
                if plen > (self.spec.key_size - 4) * 8 {
                    return Err(Errno::EINVAL);
                }
                let norm = lpm::normalize(&key[..ks], plen);
                let existing = table.peek(&norm);
                check_exists(flags, existing.is_some())?;
                let slot = match existing {
                    Some(s) => s,
                    None => {
                        let s = table.insert(&norm).ok_or(Errno::ENOSPC)?;
                        lens.add(plen);
                        s
                    }
                };
                stored[slot as usize] = key[..ks].to_vec();
                values.set(slot, 0, value);
                Ok(())
            }
            Store::RefArray { present, values } => {
                let i = u32_key(key) as usize;
                let fd_array = matches!(
                    map_type,
                    MapType::ProgArray | MapType::ArrayOfMaps | MapType::PerfEventArray
                );
                if fd_array && flags != update::ANY {
                    return Err(Errno::EINVAL);
                }
                if flags > update::EXIST {
                    return Err(Errno::EINVAL);
                }
                if i >= present.len() {
                    return Err(Errno::E2BIG);
                }
                if flags == update::NOEXIST {
                    return Err(Errno::EEXIST);
                }
                let target = u32_key(value);
                // A device map needs an interface; a cpumap queue size of 0
                // removes the entry.
                match map_type {
                    MapType::Devmap | MapType::Xskmap if target == 0 => return Err(Errno::EINVAL),
                    MapType::Cpumap if target == 0 => {
                        present[i] = false;
                        values.clear(i as u32);
                        return Ok(());
                    }
                    _ => {}
                }
                present[i] = true;
                values.set(i as u32, 0, value);
                Ok(())
            }
            Store::RefHash { table, values } => {
                check_update_flags(flags)?;
                let k = &key[..4];
                let existing = table.peek(k);
                check_exists(flags, existing.is_some())?;
                if map_type == MapType::DevmapHash && u32_key(value) == 0 {
                    return Err(Errno::EINVAL);
                }
                let slot = match existing {
                    Some(s) => s,
                    None => table.insert(k).ok_or(Errno::E2BIG)?,
                };
                values.set(slot, 0, value);
                Ok(())
            }
            Store::Fifo { .. } => Err(Errno::EINVAL),
            Store::Ring(_) | Store::Perf { .. } => Err(Errno::EOPNOTSUPP),
        }
    }

    /// `BPF_MAP_GET_NEXT_KEY`: the key after `key`, or the first key when
    /// `key` is `None` or absent.
    pub fn user_next_key(&self, key: Option<&[u8]>) -> Result<Vec<u8>, Errno> {
        let ks = self.spec.key_size as usize;
        match &self.store {
            Store::Array(_) | Store::RefArray { .. } => {
                let n = self.spec.max_entries;
                let next = match key.map(u32_key) {
                    Some(i) if i < n => i + 1,
                    _ => 0,
                };
                let next = match &self.store {
                    // Reference arrays skip empty entries.
                    Store::RefArray { present, .. } => (next..n).find(|&i| present[i as usize]),
                    _ => (next < n).then_some(next),
                };
                next.map(|i| i.to_le_bytes().to_vec()).ok_or(Errno::ENOENT)
            }
            Store::Hash { table, .. } | Store::RefHash { table, .. } => {
                let k = key.map(|k| &k[..ks.min(k.len())]);
                table.next_key(k).map(<[u8]>::to_vec).ok_or(Errno::ENOENT)
            }
            Store::Lpm { table, stored, .. } => {
                let start = match key {
                    Some(k) if k.len() >= ks => {
                        let norm = lpm::normalize(&k[..ks], lpm::prefixlen(k));
                        table.peek(&norm).map_or(0, |s| s as usize + 1)
                    }
                    _ => 0,
                };
                table
                    .iter()
                    .find(|(s, _)| *s as usize >= start)
                    .map(|(s, _)| stored[s as usize].clone())
                    .ok_or(Errno::ENOENT)
            }
            Store::Fifo { .. } | Store::Ring(_) | Store::Perf { .. } => Err(Errno::EINVAL),
        }
    }

    /// An array map's values, every index in order, as one buffer in the
    /// user layout (`None` for other map types).
    pub fn array_user_values(&self) -> Option<Vec<u8>> {
        let Store::Array(v) = &self.store else {
            return None;
        };
        let slots = self.spec.max_entries as usize;
        let user = v.user_len();
        if user == v.elem * v.copies {
            // The arena already has the user layout.
            return Some(v.arena.read(0, slots * user).to_vec());
        }
        let mut out = Vec::with_capacity(slots * user);
        for slot in 0..slots as u32 {
            out.extend_from_slice(&v.get_all(slot)[..user]);
        }
        Some(out)
    }

    /// Every entry as `(key, user value)`, in `get_next_key` order.
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        if let Store::Fifo { items, lifo } = &self.store {
            let mut v: Vec<_> = items.iter().map(|i| (Vec::new(), i.clone())).collect();
            if *lifo {
                v.reverse();
            }
            return v;
        }
        let mut out = Vec::new();
        let mut key = None;
        while let Ok(next) = self.user_next_key(key.as_deref()) {
            if let Ok(value) = self.user_lookup(&next) {
                out.push((next.clone(), value));
            }
            key = Some(next);
        }
        out
    }
}
