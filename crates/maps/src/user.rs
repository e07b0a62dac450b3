//! The user side of a map (the `bpf()` map commands), and the update both
//! sides share.

use std::sync::atomic::Ordering;

use crate::values::Values;
use crate::{Errno, Map, MapType, Store, lock, lpm, u32_key, update};

/// The flags of an update: one of `BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST`,
/// and `BPF_F_LOCK` only where the value has a spin lock.
fn check_update_flags(flags: u64, spin_lock: Option<u32>) -> Result<(), Errno> {
    if flags & !update::F_LOCK > update::EXIST
        || (flags & update::F_LOCK != 0 && spin_lock.is_none())
    {
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
    /// `BPF_MAP_LOOKUP_ELEM`: a copy of the value (every CPU's copy, each
    /// rounded up to 8 bytes, for per-CPU maps; the head for queues).
    pub fn user_lookup(&self, key: &[u8]) -> Result<Vec<u8>, Errno> {
        self.user_lookup_flags(key, 0)
    }

    /// `BPF_MAP_LOOKUP_ELEM` with its flags: `BPF_F_LOCK` copies the value
    /// holding its spin lock (a map whose value has none refuses it). The
    /// lock's word reads as 0, as from the kernel.
    pub fn user_lookup_flags(&self, key: &[u8], flags: u64) -> Result<Vec<u8>, Errno> {
        if flags & !update::F_LOCK != 0
            || (flags & update::F_LOCK != 0 && self.spec.spin_lock.is_none())
        {
            return Err(Errno::EINVAL);
        }
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
                    self.read_value(values, i, flags)
                })
            }
            Store::Hash { table, values } => {
                self.check_key(key)?;
                let table = lock(table);
                let s = table.peek(&key[..ks]).ok_or(Errno::ENOENT)?;
                Ok(if values.copies > 1 {
                    values.get_all(s)
                } else {
                    self.read_value(values, s, flags)
                })
            }
            Store::Lpm { state, values } => {
                self.check_key(key)?;
                let st = lock(state);
                let max = (self.spec.key_size - 4) * 8;
                let s = lpm::longest_match(&st.table, &st.lens, &key[..ks], max)
                    .ok_or(Errno::ENOENT)?;
                Ok(values.get(s, 0))
            }
            Store::RefArray {
                present, values, ..
            } => {
                self.check_key(key)?;
                let i = u32_key(key) as usize;
                if i >= present.len() || !present[i].load(Ordering::Acquire) {
                    return Err(Errno::ENOENT);
                }
                Ok(values.get(i as u32, 0))
            }
            Store::RefHash { table, values } => {
                self.check_key(key)?;
                let table = lock(table);
                let s = table.peek(&key[..4]).ok_or(Errno::ENOENT)?;
                Ok(values.get(s, 0))
            }
            Store::Fifo { items, lifo } => {
                let items = lock(items);
                let item = if *lifo { items.back() } else { items.front() };
                item.cloned().ok_or(Errno::ENOENT)
            }
            Store::Ring(_) | Store::Perf { .. } => Err(Errno::EOPNOTSUPP),
            Store::Absent => Err(Errno::ENOENT),
        }
    }

    /// `BPF_MAP_UPDATE_ELEM` from user space (per-CPU maps take every CPU's
    /// copy); refused on frozen maps.
    pub fn user_update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<(), Errno> {
        if self.is_frozen() {
            return Err(Errno::EPERM);
        }
        if let Store::Fifo { .. } = self.store {
            return self.push(value, flags);
        }
        self.update(key, value, flags, None)
    }

    /// A slot's value for user space: under its spin lock with
    /// `BPF_F_LOCK`, the lock's word as 0.
    fn read_value(&self, values: &Values, slot: u32, flags: u64) -> Vec<u8> {
        let Some(at) = self.spec.spin_lock.map(|o| o as usize) else {
            return values.get(slot, 0);
        };
        let mut v = {
            let _held = (flags & update::F_LOCK != 0).then(|| values.spin(slot, at));
            values.get(slot, 0)
        };
        v[at..at + 4].fill(0);
        v
    }

    /// Writes a slot's value (not per-CPU): around its spin lock's word,
    /// holding the lock with `BPF_F_LOCK`; a new element's lock starts free.
    fn write_value(&self, values: &Values, slot: u32, value: &[u8], flags: u64, fresh: bool) {
        let Some(at) = self.spec.spin_lock.map(|o| o as usize) else {
            return values.set(slot, 0, value);
        };
        if fresh {
            values.unlock(slot, at);
        }
        let _held = (flags & update::F_LOCK != 0).then(|| values.spin(slot, at));
        values.set_around(slot, value, at);
    }

    /// Bytes a user-space value of this map has.
    pub fn user_value_len(&self) -> usize {
        match &self.store {
            Store::Array(v) | Store::Hash { values: v, .. } => v.user_len(),
            _ => self.spec.value_size as usize,
        }
    }

    /// The update behind both sides; `cpu` is `Some` for programs.
    pub(crate) fn update(
        &self,
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
        match &self.store {
            Store::Array(values) => {
                check_update_flags(flags, self.spec.spin_lock)?;
                let i = u32_key(key);
                if i >= self.spec.max_entries {
                    return Err(Errno::E2BIG);
                }
                if flags & !update::F_LOCK == update::NOEXIST {
                    return Err(Errno::EEXIST);
                }
                match cpu {
                    Some(c) if values.copies > 1 => values.set(i, c, value),
                    None if values.copies > 1 => values.set_all(i, value),
                    _ => self.write_value(values, i, value, flags, false),
                }
                Ok(())
            }
            Store::Hash { table, values } => {
                check_update_flags(flags, self.spec.spin_lock)?;
                let k = &key[..ks];
                let mut table = lock(table);
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
                // The value is written under the lock, so that a delete
                // on another thread cannot clear the slot half-way.
                match cpu {
                    Some(c) if values.copies > 1 => values.set_from_prog(slot, c, value, fresh),
                    None if values.copies > 1 => values.set_all(slot, value),
                    _ => self.write_value(values, slot, value, flags, fresh),
                }
                Ok(())
            }
            Store::Lpm { state, values } => {
                if flags > update::EXIST {
                    return Err(Errno::EINVAL);
                }
                let plen = lpm::prefixlen(key);
                if plen > (self.spec.key_size - 4) * 8 {
                    return Err(Errno::EINVAL);
                }
                let norm = lpm::normalize(&key[..ks], plen);
                let mut st = lock(state);
                let existing = st.table.peek(&norm);
                check_exists(flags, existing.is_some())?;
                let slot = match existing {
                    Some(s) => s,
                    None => {
                        let s = st.table.insert(&norm).ok_or(Errno::ENOSPC)?;
                        st.lens.add(plen);
                        s
                    }
                };
                st.stored[slot as usize] = key[..ks].to_vec();
                values.set(slot, 0, value);
                Ok(())
            }
            Store::RefArray {
                present,
                values,
                writer,
            } => {
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
                let _w = lock(writer);
                // A device map needs an interface; a cpumap queue size of 0
                // removes the entry.
                match map_type {
                    MapType::Devmap | MapType::Xskmap if target == 0 => return Err(Errno::EINVAL),
                    MapType::Cpumap if target == 0 => {
                        present[i].store(false, Ordering::Release);
                        values.clear(i as u32);
                        return Ok(());
                    }
                    _ => {}
                }
                values.set(i as u32, 0, value);
                present[i].store(true, Ordering::Release);
                Ok(())
            }
            Store::RefHash { table, values } => {
                check_update_flags(flags, self.spec.spin_lock)?;
                let k = &key[..4];
                let mut table = lock(table);
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
            Store::Ring(_) | Store::Perf { .. } | Store::Absent => Err(Errno::EOPNOTSUPP),
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
                    Store::RefArray { present, .. } => {
                        (next..n).find(|&i| present[i as usize].load(Ordering::Acquire))
                    }
                    _ => (next < n).then_some(next),
                };
                next.map(|i| i.to_le_bytes().to_vec()).ok_or(Errno::ENOENT)
            }
            Store::Hash { table, .. } | Store::RefHash { table, .. } => {
                let k = key.map(|k| &k[..ks.min(k.len())]);
                lock(table)
                    .next_key(k)
                    .map(<[u8]>::to_vec)
                    .ok_or(Errno::ENOENT)
            }
            Store::Lpm { state, .. } => {
                let st = lock(state);
                let start = match key {
                    Some(k) if k.len() >= ks => {
                        let norm = lpm::normalize(&k[..ks], lpm::prefixlen(k));
                        st.table.peek(&norm).map_or(0, |s| s as usize + 1)
                    }
                    _ => 0,
                };
                st.table
                    .iter()
                    .find(|(s, _)| *s as usize >= start)
                    .map(|(s, _)| st.stored[s as usize].clone())
                    .ok_or(Errno::ENOENT)
            }
            Store::Fifo { .. } | Store::Ring(_) | Store::Perf { .. } => Err(Errno::EINVAL),
            Store::Absent => Err(Errno::ENOENT),
        }
    }

    /// An array map's values, every index in order, as one buffer in the
    /// user layout (`None` for other map types).
    pub fn array_user_values(&self) -> Option<Vec<u8>> {
        self.array_user_values_range(0, self.spec.max_entries)
    }

    /// The values of `n` array entries from index `first` (clipped to the
    /// map), in order, as one buffer in the user layout (`None` for other
    /// map types).
    pub fn array_user_values_range(&self, first: u32, n: u32) -> Option<Vec<u8>> {
        let Store::Array(v) = &self.store else {
            return None;
        };
        let first = first.min(self.spec.max_entries);
        let end = first.saturating_add(n).min(self.spec.max_entries);
        let user = v.user_len();
        if v.copies == 1 && user == v.elem {
            // The arena already has the user layout.
            let (off, len) = (first as usize * user, (end - first) as usize * user);
            return Some(v.arena.read(off, len));
        }
        let mut out = Vec::with_capacity((end - first) as usize * user);
        for slot in first..end {
            out.extend_from_slice(&v.get_all(slot)[..user]);
        }
        Some(out)
    }

    /// Part of an array entry's value: `out.len()` bytes from byte `at` of
    /// entry `index` (shared arrays only; per-CPU arrays have no one value).
    pub fn array_read(&self, index: u32, at: usize, out: &mut [u8]) -> Result<(), Errno> {
        let v = self.array_part(index, at, out.len())?;
        v.arena.read_into(index as usize * v.elem + at, out);
        Ok(())
    }

    /// Writes part of an array entry's value (shared arrays only).
    pub fn array_write(&self, index: u32, at: usize, bytes: &[u8]) -> Result<(), Errno> {
        let v = self.array_part(index, at, bytes.len())?;
        v.arena.write(index as usize * v.elem + at, bytes);
        Ok(())
    }

    fn array_part(
        &self,
        index: u32,
        at: usize,
        len: usize,
    ) -> Result<&crate::values::Values, Errno> {
        let Store::Array(v) = &self.store else {
            return Err(Errno::EINVAL);
        };
        if v.copies != 1 || index >= self.spec.max_entries {
            return Err(Errno::EINVAL);
        }
        if at.checked_add(len).is_none_or(|end| end > v.value_size) {
            return Err(Errno::E2BIG);
        }
        Ok(v)
    }

    /// Every entry as `(key, user value)`, in `get_next_key` order (not one
    /// snapshot: programs on other threads may change the map meanwhile,
    /// as with the kernel's `bpf()` commands).
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        if let Store::Fifo { items, lifo } = &self.store {
            let mut v: Vec<_> = lock(items)
                .iter()
                .map(|i| (Vec::new(), i.clone()))
                .collect();
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
