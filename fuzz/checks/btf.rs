//! Any bytes as an object's `.BTF` (the corpus holds the sections of real
//! objects) and as its `.BTF.ext`: parsing never panics, and for a BTF that
//! parses, every type id walks (sizes, modifiers and typedefs skipped, its
//! C-like name) and formats a map value as `sluice run` prints maps
//! (crates/engine/src/mapfmt.rs; per-CPU values summed where BTF shows
//! counters), without panicking or
//! recursing without end; a type's printed name is the same each time.

#[path = "../../crates/engine/src/mapfmt.rs"]
#[allow(dead_code)]
mod mapfmt;

/// A value to format: as many bytes as the type says, up to this.
const MAX_VALUE: usize = 256;

pub fn check(data: &[u8]) {
    let _ = obj::BtfExt::parse(data, data);
    let Ok(btf) = obj::Btf::parse(data) else {
        return;
    };
    let value: Vec<u8> = (0..MAX_VALUE).map(|i| (i * 37 + 11) as u8).collect();
    let ids: Vec<obj::TypeId> = btf.types().map(|(id, _)| id).take(64).collect();
    for id in ids {
        let name = btf.display(id);
        assert_eq!(name, btf.display(id));
        let _ = btf.skip_mods_and_typedefs(id);
        let n = btf
            .size_of(id)
            .map_or(8, |s| s.min(MAX_VALUE as u64) as usize);
        let _ = mapfmt::format(Some(&btf), Some(id), &value[..n]);
        let _ = mapfmt::format(Some(&btf), Some(id), &value[..n / 2]);
        // A per-CPU map whose values are of this type: the dump sums the
        // CPUs' copies field by field where BTF shows counters (for the
        // first types only: a map per type is slow).
        let spec = maps::MapSpec::new("m", maps::MapType::PercpuArray, 4, n.max(1) as u32, 1);
        if let Some(map) = (id <= 16).then(|| maps::Map::new(spec, 2).ok()).flatten() {
            let copies = vec![0x11; map.user_value_len()];
            if map.user_update(&0u32.to_le_bytes(), &copies, 0).is_ok() {
                let def = obj::MapDef {
                    spec: map.spec().clone(),
                    origin: obj::MapOrigin::Btf,
                    pin_by_name: false,
                    inner: None,
                    initial: vec![],
                    data: None,
                    key_type: None,
                    value_type: Some(id),
                };
                let _ = mapfmt::dump(&map, Some(&def), Some(&btf), 4);
            }
        }
        let t = btf.ty(id);
        let _ = btf.find(&t.name, t.kind.name());
    }
    let _ = btf.get(u32::MAX);
}
