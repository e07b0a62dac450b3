//! eBPF maps with the Linux kernel's semantics: the flags, errors and limits
//! of `bpf_map_*` helpers and of the `bpf()` map commands.
//!
//! A [`Map`] keeps its values in a zeroed arena that never moves, so a
//! program can hold a pointer to a value (as the kernel's `lookup` gives
//! one) while user space reads and writes the same map through the
//! `user_*` API. Per-CPU maps keep one copy per simulated CPU.
//!
//! A map is [`Sync`]: several threads (the kernel's CPUs) run programs over
//! it at once. Its bookkeeping (the slots of hash, LRU, LPM and reference
//! hash maps, queues, the ring buffer, perf records) is behind short-held
//! locks; array lookups take none (an index becomes an address in a
//! layout that never changes). Values themselves are as unsynchronised as
//! in the kernel: programs use atomic instructions, `bpf_spin_lock` or
//! per-CPU maps to share them.
//!
//! ```
//! use maps::{Map, MapSpec, MapType, update};
//! let m = Map::new(MapSpec::new("counts", MapType::Hash, 4, 8, 16), 1).unwrap();
//! m.user_update(&7u32.to_le_bytes(), &1u64.to_le_bytes(), update::NOEXIST).unwrap();
//! assert_eq!(m.user_update(&7u32.to_le_bytes(), &2u64.to_le_bytes(), update::NOEXIST), Err(maps::Errno::EEXIST));
//! assert_eq!(m.user_lookup(&7u32.to_le_bytes()).unwrap(), 1u64.to_le_bytes());
//! ```

mod arena;
mod errno;
mod lpm;
mod prog;
mod ringbuf;
mod slots;
mod spec;
mod track;
mod user;
mod values;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

pub use errno::Errno;
pub use ringbuf::RingBuf;
pub use spec::{MapSpec, MapType, MapTypeError, flags, update};
pub use track::{Changes, Entries, Tracker};

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

/// Largest map a simulation declares (values of all slots and CPUs; the
/// memory is only used as entries are written).
pub const MAX_MAP_BYTES: u64 = 4 << 30;

enum Store {
    /// array, percpu_array: no lock, the layout never changes.
    Array(Values),
    /// hash, percpu_hash, lru_hash, lru_percpu_hash.
    Hash {
        table: Mutex<SlotTable>,
        values: Values,
    },
    /// lpm_trie: slots keyed by the normalised prefix.
    Lpm {
        state: Mutex<LpmState>,
        values: Values,
    },
    /// prog_array, array_of_maps, devmap, cpumap, xskmap, perf_event_array:
    /// indexed entries that may be empty. Readers (tail calls, redirects)
    /// take no lock; writers take `writer`, so an entry's value and its
    /// presence change together.
    RefArray {
        present: Vec<AtomicBool>,
        values: Values,
        writer: Mutex<()>,
    },
    /// hash_of_maps, devmap_hash.
    RefHash {
        table: Mutex<SlotTable>,
        values: Values,
    },
    /// queue, stack.
    Fifo {
        items: Mutex<VecDeque<Vec<u8>>>,
        lifo: bool,
    },
    Ring(Mutex<RingBuf>),
    /// perf_event_array output: records per CPU index.
    Perf {
        records: Mutex<Vec<Vec<Vec<u8>>>>,
    },
    /// stack_trace, cgroup_array, sk_storage: entries are kernel objects
    /// (stack traces, cgroups, sockets) a replay has none of, so the map
    /// stays empty ([`MapType::absent_reason`]).
    Absent,
}

/// The bookkeeping of an LPM trie: its slots, the prefix lengths in use,
/// and each slot's key as written.
struct LpmState {
    table: SlotTable,
    lens: lpm::PrefixLens,
    stored: Vec<Vec<u8>>,
}

/// One map.
pub struct Map {
    spec: MapSpec,
    ncpus: u32,
    store: Store,
    frozen: AtomicBool,
    /// The value storage programs may point into (fixed at creation).
    region: Option<(u64, usize)>,
}

// Maps are shared by the threads that run programs over them.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Map>()
};

/// Locks a map's bookkeeping. A thread that panicked while holding it
/// left the bookkeeping consistent (no operation panics half-way through
/// a change), so a poisoned lock is taken as it is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn u32_key(key: &[u8]) -> u32 {
    u32::from_le_bytes(key[..4].try_into().expect("4-byte key"))
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
            StackTrace => {
                need("key_size must be 4", k == 4)?;
                need(
                    "value_size must be a non-zero multiple of 8 (u64 addresses), at most 127 of them",
                    v >= 8 && v % 8 == 0 && v / 8 <= 127,
                )?;
                need("max_entries must not be 0", n > 0)?;
            }
            CgroupArray => {
                need("key_size must be 4", k == 4)?;
                need("value_size must be 4", v == 4)?;
                need("max_entries must not be 0", n > 0)?;
            }
            SkStorage => {
                need("key_size must be 4 (a socket descriptor)", k == 4)?;
                need("value_size must not be 0", v > 0)?;
                need("max_entries must be 0 (one value per socket)", n == 0)?;
                need(
                    "map_flags must include BPF_F_NO_PREALLOC",
                    spec.flags & flags::NO_PREALLOC != 0,
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
        if let Some(at) = spec.spin_lock {
            need(
                "a bpf_spin_lock goes in array and hash values only",
                matches!(spec.map_type, Array | Hash | LruHash),
            )?;
            need(
                "the bpf_spin_lock must be 4 aligned bytes inside the value",
                at % 4 == 0 && u64::from(at) + 4 <= u64::from(v),
            )?;
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
                table: Mutex::new(SlotTable::new(n as u32, false)),
                values: Values::new(n, v, copies),
            },
            LruHash | LruPercpuHash => Store::Hash {
                table: Mutex::new(SlotTable::new(n as u32, true)),
                values: Values::new(n, v, copies),
            },
            LpmTrie => Store::Lpm {
                state: Mutex::new(LpmState {
                    table: SlotTable::new(n as u32, false),
                    lens: lpm::PrefixLens::default(),
                    stored: vec![Vec::new(); n],
                }),
                values: Values::new(n, v, 1),
            },
            ProgArray | ArrayOfMaps | Devmap | Cpumap | Xskmap => Store::RefArray {
                present: (0..n).map(|_| AtomicBool::new(false)).collect(),
                values: Values::new(n, v, 1),
                writer: Mutex::new(()),
            },
            HashOfMaps | DevmapHash => Store::RefHash {
                table: Mutex::new(SlotTable::new(n as u32, false)),
                values: Values::new(n, v, 1),
            },
            Queue => Store::Fifo {
                items: Mutex::new(VecDeque::new()),
                lifo: false,
            },
            Stack => Store::Fifo {
                items: Mutex::new(VecDeque::new()),
                lifo: true,
            },
            Ringbuf => Store::Ring(Mutex::new(RingBuf::new(n))),
            PerfEventArray => Store::Perf {
                records: Mutex::new(vec![Vec::new(); ncpus as usize]),
            },
            StackTrace | CgroupArray | SkStorage => Store::Absent,
        };
        let area = |a: &arena::Arena| (!a.is_empty()).then(|| (a.addr(0), a.len()));
        let region = match &store {
            Store::Array(v)
            | Store::Hash { values: v, .. }
            | Store::Lpm { values: v, .. }
            | Store::RefArray { values: v, .. }
            | Store::RefHash { values: v, .. } => area(&v.arena),
            Store::Ring(r) => area(&lock(r).arena),
            Store::Fifo { .. } | Store::Perf { .. } | Store::Absent => None,
        };
        Ok(Map {
            spec,
            ncpus,
            store,
            frozen: AtomicBool::new(false),
            region,
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
    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::Release);
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::Acquire)
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
        self.region
    }

    /// Number of entries in use (array maps: `max_entries`).
    pub fn len(&self) -> usize {
        match &self.store {
            Store::Array(_) => self.spec.max_entries as usize,
            Store::Hash { table, .. } | Store::RefHash { table, .. } => lock(table).len(),
            Store::Lpm { state, .. } => lock(state).table.len(),
            Store::RefArray { present, .. } => {
                present.iter().filter(|p| p.load(Ordering::Acquire)).count()
            }
            Store::Fifo { items, .. } => lock(items).len(),
            Store::Ring(r) => lock(r).pending(),
            Store::Perf { records } => lock(records).iter().map(Vec::len).sum(),
            Store::Absent => 0,
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
}
