//! The program side of a map: what the `bpf_map_*`, ring buffer and perf
//! helpers do. Per-CPU maps use the copy of the caller's `cpu`.

use std::sync::MutexGuard;
use std::sync::atomic::Ordering;

use crate::{Errno, Map, MapType, RingBuf, Store, lock, lpm, u32_key, update};

impl Map {
    /// `bpf_map_lookup_elem` for value maps: the address of the value (this
    /// CPU's copy for per-CPU maps), or `None` (NULL). Arrays and per-CPU
    /// arrays take no lock.
    pub fn lookup_addr(&self, key: &[u8], cpu: u32) -> Option<u64> {
        self.check_key(key).ok()?;
        let ks = self.spec.key_size as usize;
        match &self.store {
            Store::Array(values) => {
                let i = u32_key(key);
                (i < self.spec.max_entries).then(|| values.addr(i, cpu))
            }
            Store::Hash { table, values } => {
                let slot = lock(table).get(&key[..ks]);
                slot.map(|s| values.addr(s, cpu))
            }
            Store::Lpm { state, values } => {
                let max = (self.spec.key_size - 4) * 8;
                let st = lock(state);
                lpm::longest_match(&st.table, &st.lens, &key[..ks], max).map(|s| values.addr(s, 0))
            }
            Store::RefArray {
                present, values, ..
            } => {
                let i = u32_key(key) as usize;
                (i < present.len() && present[i].load(Ordering::Acquire))
                    .then(|| values.addr(i as u32, 0))
            }
            Store::RefHash { table, values } => {
                let slot = lock(table).peek(&key[..4]);
                slot.map(|s| values.addr(s, 0))
            }
            Store::Fifo { .. } | Store::Ring(_) | Store::Perf { .. } | Store::Absent => None,
        }
    }

    /// For an array (or per-CPU array) map: where `lookup_addr` finds the
    /// values of `cpu`, as `(address of value 0, bytes between values,
    /// max_entries)`, so that a lookup of key `i < max_entries` is
    /// `address + i * stride` (the layout never changes while the map
    /// lives). `None` for other maps.
    pub fn array_layout(&self, cpu: u32) -> Option<(u64, u32, u32)> {
        match &self.store {
            Store::Array(values) => Some((
                values.addr(0, cpu),
                values.elem as u32,
                self.spec.max_entries,
            )),
            _ => None,
        }
    }

    /// `bpf_map_update_elem` from a program: per-CPU maps update this CPU's copy.
    pub fn prog_update(&self, key: &[u8], value: &[u8], flags: u64, cpu: u32) -> Result<(), Errno> {
        self.update(key, value, flags, Some(cpu))
    }

    /// `bpf_map_delete_elem` (programs and user space alike).
    pub fn delete(&self, key: &[u8]) -> Result<(), Errno> {
        self.check_key(key)?;
        let ks = self.spec.key_size as usize;
        match &self.store {
            Store::Array(_) => Err(Errno::EINVAL),
            Store::Hash { table, values } | Store::RefHash { table, values } => {
                let ks = if matches!(self.store, Store::RefHash { .. }) {
                    4
                } else {
                    ks
                };
                let mut table = lock(table);
                let s = table.remove(&key[..ks]).ok_or(Errno::ENOENT)?;
                values.clear(s);
                Ok(())
            }
            Store::Lpm { state, values } => {
                let plen = lpm::prefixlen(key);
                if plen > (self.spec.key_size - 4) * 8 {
                    return Err(Errno::EINVAL);
                }
                let mut st = lock(state);
                let s = st
                    .table
                    .remove(&lpm::normalize(&key[..ks], plen))
                    .ok_or(Errno::ENOENT)?;
                st.lens.remove(plen);
                values.clear(s);
                st.stored[s as usize].clear();
                Ok(())
            }
            Store::RefArray {
                present,
                values,
                writer,
            } => {
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
                let _w = lock(writer);
                let was = present[i].swap(false, Ordering::AcqRel);
                values.clear(i as u32);
                match self.spec.map_type {
                    MapType::ProgArray | MapType::ArrayOfMaps if !was => Err(Errno::ENOENT),
                    _ => Ok(()),
                }
            }
            Store::Fifo { .. } | Store::Ring(_) | Store::Perf { .. } => Err(Errno::EINVAL),
            Store::Absent => Err(Errno::ENOENT),
        }
    }

    /// `bpf_map_push_elem` (queue, stack).
    pub fn push(&self, value: &[u8], flags: u64) -> Result<(), Errno> {
        let Store::Fifo { items, .. } = &self.store else {
            return Err(Errno::EINVAL);
        };
        if flags & update::NOEXIST != 0 || flags > update::EXIST {
            return Err(Errno::EINVAL);
        }
        let item = value[..self.spec.value_size as usize].to_vec();
        let mut items = lock(items);
        if items.len() >= self.spec.max_entries as usize {
            if flags & update::EXIST == 0 {
                return Err(Errno::E2BIG);
            }
            // BPF_EXIST overwrites the oldest element, for queues and stacks alike.
            items.pop_front();
        }
        items.push_back(item);
        Ok(())
    }

    /// `bpf_map_pop_elem` / `bpf_map_peek_elem`.
    pub fn pop(&self, remove: bool) -> Result<Vec<u8>, Errno> {
        let Store::Fifo { items, lifo } = &self.store else {
            return Err(Errno::EINVAL);
        };
        let mut items = lock(items);
        let item = match (*lifo, remove) {
            (false, true) => items.pop_front(),
            (true, true) => items.pop_back(),
            (false, false) => items.front().cloned(),
            (true, false) => items.back().cloned(),
        };
        item.ok_or(Errno::ENOENT)
    }

    /// The ring buffer of a ringbuf map, locked for as long as the guard
    /// lives (keep it short: programs on other threads wait for it).
    /// Records a program reserved are written through their addresses,
    /// without the lock, as in the kernel.
    pub fn ringbuf(&self) -> Option<MutexGuard<'_, RingBuf>> {
        match &self.store {
            Store::Ring(r) => Some(lock(r)),
            _ => None,
        }
    }

    /// `bpf_perf_event_output`: appends a record for CPU slot `index`.
    pub fn perf_output(&self, index: u32, data: Vec<u8>) -> Result<(), Errno> {
        let limit = self.spec.max_entries.max(self.ncpus);
        let Store::Perf { records } = &self.store else {
            return Err(Errno::EINVAL);
        };
        if index >= limit {
            return Err(Errno::E2BIG);
        }
        let i = index as usize;
        let mut records = lock(records);
        if records.len() <= i {
            records.resize(i + 1, Vec::new());
        }
        records[i].push(data);
        Ok(())
    }

    /// Takes the perf records of every CPU slot: `(index, record)`.
    pub fn perf_drain(&self) -> Vec<(u32, Vec<u8>)> {
        let Store::Perf { records } = &self.store else {
            return Vec::new();
        };
        lock(records)
            .iter_mut()
            .enumerate()
            .flat_map(|(i, r)| std::mem::take(r).into_iter().map(move |d| (i as u32, d)))
            .collect()
    }

    /// The u32 an entry of a reference map holds (program, map, ifindex,
    /// queue size or socket), for tail calls, map-in-map lookups and
    /// redirects. Reference arrays take no lock.
    pub fn ref_at(&self, key: &[u8]) -> Option<u32> {
        match &self.store {
            Store::RefArray {
                present, values, ..
            } => {
                let i = u32_key(key) as usize;
                (i < present.len() && present[i].load(Ordering::Acquire))
                    .then(|| values.get_u32(i as u32))
            }
            Store::RefHash { table, values } => {
                // Read under the lock: a concurrent delete clears the value.
                let table = lock(table);
                table.peek(&key[..4]).map(|s| values.get_u32(s))
            }
            _ => None,
        }
    }
}
