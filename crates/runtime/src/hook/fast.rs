//! What the verifier's facts let a trusted hook skip (`vm::trusted`): the
//! stack below the programs' depth is not zeroed per run, and map lookups
//! whose map the call site fixes skip the helper: arrays are indexed
//! inline by native code, hash and LPM maps' own lookups called directly.

use maps::{Map, MapType};
use vm::{ArrayLookup, Lookup};

use super::Hook;

impl Hook {
    /// The deepest stack use, in bytes, of every program this hook may run
    /// from its entry frame ([`Hook::runnable`]), as the verifier reports
    /// it (`verifier::VerifyReport::stack_depth`): trusted runs zero only that
    /// much of the stack. Too small a value cannot break memory safety
    /// (the frame is the VM's own), only make runs depend on earlier ones.
    pub fn set_stack_depth(&mut self, bytes: usize) {
        self.vm.set_stack_depth(bytes);
    }

    /// Tells the VM how to do each lookup whose map is known, for this
    /// hook's CPU.
    pub(super) fn inline_lookups(&mut self) {
        let cpu = self.env.cpu();
        for program in 0..self.vm.programs().len() {
            let sites = self
                .vm
                .constant_map_lookups(program)
                .into_iter()
                .filter_map(|(pc, handle)| {
                    let map = &self.env.maps[self.env.map_of(handle)?];
                    Some((pc, lookup_of(map, cpu)?))
                })
                .collect();
            // SAFETY: `constant_map_lookups` proved r1 holds the handle at
            // each site, which names a map of this hook. The maps live in
            // `env`'s shared slice, which neither moves nor drops them
            // while this hook (its VM included) lives; an array's values
            // live in its arena, which never moves or shrinks, at the
            // layout `array_layout` gave for this CPU; `direct_lookup`
            // reads the map's key size of bytes at the key address, which
            // the verifier proved readable (`ARG_PTR_TO_MAP_KEY`).
            unsafe { self.vm.inline_lookups(program, sites) };
        }
    }
}

/// How native code may look up `map` from `cpu`, if it can skip the helper:
/// the maps whose helper lookup is the map's `lookup_addr` and nothing else.
fn lookup_of(map: &Map, cpu: u32) -> Option<Lookup> {
    if let Some((base, stride, max_entries)) = map.array_layout(cpu) {
        return Some(Lookup::Array(ArrayLookup {
            base,
            stride,
            max_entries,
        }));
    }
    match map.map_type() {
        MapType::Hash
        | MapType::PercpuHash
        | MapType::LruHash
        | MapType::LruPercpuHash
        | MapType::LpmTrie => Some(Lookup::Direct {
            func: direct_lookup,
            data: (map as *const Map).expose_provenance() as u64,
            cpu,
        }),
        _ => None,
    }
}

/// `bpf_map_lookup_elem` on the map at `data`, for native code: the
/// helper's lookup (`runtime::helpers::maps`) without the helper around it.
extern "sysv64" fn direct_lookup(data: u64, key: u64, cpu: u64) -> u64 {
    // SAFETY: `data` is the address of a `Map` that outlives the code
    // calling this (see `inline_lookups`), shared (`Map` is `Sync`).
    let map = unsafe { &*std::ptr::with_exposed_provenance::<Map>(data as usize) };
    let size = map.spec().key_size as usize;
    // SAFETY: the verifier proved `size` bytes at `key` readable for the
    // call (the helper's key argument), and nothing writes them during it.
    let key = unsafe {
        std::slice::from_raw_parts(std::ptr::with_exposed_provenance::<u8>(key as usize), size)
    };
    map.lookup_addr(key, cpu as u32).unwrap_or(0)
}
