//! What a map is: its type, sizes and flags, as `bpf(BPF_MAP_CREATE)` takes them.

use std::fmt;

/// Why a kernel map type id has no [`MapType`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum MapTypeError {
    /// The kernel has this type; sluice does not implement it.
    #[error("map type {name} ({id}) is not supported by sluice")]
    Unsupported { name: &'static str, id: u32 },
    /// No kernel map type has this id.
    #[error("unknown map type {0}")]
    Unknown(u32),
}

/// Map types by their kernel ids (`enum bpf_map_type`).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum MapType {
    Hash = 1,
    Array = 2,
    ProgArray = 3,
    PerfEventArray = 4,
    PercpuHash = 5,
    PercpuArray = 6,
    StackTrace = 7,
    CgroupArray = 8,
    LruHash = 9,
    LruPercpuHash = 10,
    LpmTrie = 11,
    ArrayOfMaps = 12,
    HashOfMaps = 13,
    Devmap = 14,
    Cpumap = 16,
    Xskmap = 17,
    Queue = 22,
    Stack = 23,
    SkStorage = 24,
    DevmapHash = 25,
    Ringbuf = 27,
}

impl MapType {
    pub const ALL: [MapType; 21] = [
        MapType::Hash,
        MapType::Array,
        MapType::ProgArray,
        MapType::PerfEventArray,
        MapType::PercpuHash,
        MapType::PercpuArray,
        MapType::LruHash,
        MapType::LruPercpuHash,
        MapType::LpmTrie,
        MapType::ArrayOfMaps,
        MapType::HashOfMaps,
        MapType::Devmap,
        MapType::Cpumap,
        MapType::Xskmap,
        MapType::Queue,
        MapType::Stack,
        MapType::DevmapHash,
        MapType::Ringbuf,
        MapType::StackTrace,
        MapType::CgroupArray,
        MapType::SkStorage,
    ];

    /// The type with kernel id `id`; `Err` names types sluice lacks.
    pub fn from_id(id: u32) -> Result<MapType, MapTypeError> {
        MapType::ALL
            .into_iter()
            .find(|t| *t as u32 == id)
            .ok_or_else(|| match KERNEL_NAMES.get(id as usize) {
                Some(name) => MapTypeError::Unsupported { name, id },
                None => MapTypeError::Unknown(id),
            })
    }

    /// The kernel's name without the `BPF_MAP_TYPE_` prefix, lower case.
    pub fn name(self) -> &'static str {
        KERNEL_NAMES[self as usize]
    }

    pub fn from_name(name: &str) -> Option<MapType> {
        let n = name.to_ascii_lowercase();
        let n = n.strip_prefix("bpf_map_type_").unwrap_or(&n);
        MapType::ALL.into_iter().find(|t| t.name() == n)
    }

    /// Why a replay has nothing to put in a map of this type, for the
    /// types whose entries are kernel objects (`None` for the others).
    pub fn absent_reason(self) -> Option<&'static str> {
        match self {
            MapType::StackTrace => Some(
                "a stack_trace map holds kernel stack traces, which only tracing programs record (bpf_get_stackid): a replay leaves it empty",
            ),
            MapType::CgroupArray => Some(
                "a cgroup_array map holds cgroups (set from cgroup directory descriptors), which a replay has none of: it stays empty",
            ),
            MapType::SkStorage => Some(
                "an sk_storage map holds storage attached to sockets, and a replay has no sockets: it stays empty",
            ),
            _ => None,
        }
    }

    pub fn is_percpu(self) -> bool {
        matches!(
            self,
            MapType::PercpuArray | MapType::PercpuHash | MapType::LruPercpuHash
        )
    }
}

impl fmt::Display for MapType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const KERNEL_NAMES: [&str; 34] = [
    "unspec",
    "hash",
    "array",
    "prog_array",
    "perf_event_array",
    "percpu_hash",
    "percpu_array",
    "stack_trace",
    "cgroup_array",
    "lru_hash",
    "lru_percpu_hash",
    "lpm_trie",
    "array_of_maps",
    "hash_of_maps",
    "devmap",
    "sockmap",
    "cpumap",
    "xskmap",
    "sockhash",
    "cgroup_storage",
    "reuseport_sockarray",
    "percpu_cgroup_storage",
    "queue",
    "stack",
    "sk_storage",
    "devmap_hash",
    "struct_ops",
    "ringbuf",
    "inode_storage",
    "task_storage",
    "bloom_filter",
    "user_ringbuf",
    "cgrp_storage",
    "arena",
];

/// Map creation flags (`BPF_F_*` for `map_flags`).
pub mod flags {
    pub const NO_PREALLOC: u32 = 1 << 0;
    pub const NO_COMMON_LRU: u32 = 1 << 1;
    pub const NUMA_NODE: u32 = 1 << 2;
    pub const RDONLY: u32 = 1 << 3;
    pub const WRONLY: u32 = 1 << 4;
    pub const ZERO_SEED: u32 = 1 << 6;
    pub const RDONLY_PROG: u32 = 1 << 7;
    pub const WRONLY_PROG: u32 = 1 << 8;
    pub const MMAPABLE: u32 = 1 << 10;
    pub const PRESERVE_ELEMS: u32 = 1 << 11;
    pub const INNER_MAP: u32 = 1 << 12;
}

/// Update flags (`BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST`, `BPF_F_LOCK`).
pub mod update {
    pub const ANY: u64 = 0;
    pub const NOEXIST: u64 = 1;
    pub const EXIST: u64 = 2;
    pub const F_LOCK: u64 = 4;
}

/// A map definition.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MapSpec {
    pub name: String,
    pub map_type: MapType,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    /// Where the value's `struct bpf_spin_lock` is (bytes from its start),
    /// which the kernel learns from the value's BTF: user-space updates
    /// leave that word alone, lookups give it as 0, and `BPF_F_LOCK` takes
    /// the lock around the copy. Only arrays and (LRU) hashes have one.
    pub spin_lock: Option<u32>,
}

impl MapSpec {
    pub fn new(
        name: &str,
        map_type: MapType,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> MapSpec {
        MapSpec {
            name: name.to_string(),
            map_type,
            key_size,
            value_size,
            max_entries,
            flags: 0,
            spin_lock: None,
        }
    }

    pub fn with_flags(mut self, flags: u32) -> MapSpec {
        self.flags = flags;
        self
    }

    /// The value holds a `struct bpf_spin_lock` at byte `offset`.
    pub fn with_spin_lock(mut self, offset: u32) -> MapSpec {
        self.spin_lock = Some(offset);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_id_errors_name_the_type() {
        let e = MapType::from_id(15).unwrap_err();
        assert_eq!(
            e,
            MapTypeError::Unsupported {
                name: "sockmap",
                id: 15
            }
        );
        assert_eq!(
            e.to_string(),
            "map type sockmap (15) is not supported by sluice"
        );
        assert_eq!(
            MapType::from_id(999).unwrap_err(),
            MapTypeError::Unknown(999)
        );
        assert_eq!(MapType::from_id(2), Ok(MapType::Array));
    }
}
