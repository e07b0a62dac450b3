//! The kernel's load options for an object sluice's own loader has set
//! up: whatever the two loaders must agree on, so that the kernel's maps
//! start as sluice's loader left its own.

use crate::object::{LoadOptions, ProgType};

/// What the kernel's loader needs so its maps start as sluice's loader
/// left them: the global data (with `--set` applied) by section, and the
/// map sizes sluice changed (`--map-size`).
pub fn load_options(object: &obj::Object, vm_maps: &[maps::Map]) -> LoadOptions {
    let mut opts = LoadOptions::default();
    for (def, map) in object.maps.iter().zip(vm_maps) {
        if let obj::MapOrigin::Data { section, .. } = &def.origin
            && let Ok(bytes) = map.user_lookup(&0u32.to_le_bytes())
        {
            opts.data.push((section.clone(), bytes));
        }
        if def.spec.max_entries != map.spec().max_entries {
            opts.max_entries
                .push((map.name().to_string(), map.spec().max_entries));
        }
    }
    // The types sluice runs the programs as, for those libbpf cannot type
    // from their sections and those given by --type.
    opts.prog_types = object.programs.iter().filter_map(ProgType::of).collect();
    opts
}

#[cfg(test)]
mod tests {
    use super::*;
    use maps::{Map, MapSpec, MapType};
    use obj::{MapDef, MapOrigin, Object};

    fn def(spec: MapSpec, origin: MapOrigin) -> MapDef {
        MapDef {
            spec,
            origin,
            pin_by_name: false,
            inner: None,
            initial: vec![],
            data: None,
            key_type: None,
            value_type: None,
        }
    }

    #[test]
    fn global_data_and_resized_maps_go_to_the_kernel() {
        let data = MapSpec::new(".data", MapType::Array, 4, 8, 1);
        let table = MapSpec::new("table", MapType::Hash, 4, 8, 64);
        let object = Object {
            license: "GPL".into(),
            kernel_version: None,
            maps: vec![
                def(
                    data.clone(),
                    MapOrigin::Data {
                        section: ".data".into(),
                        readonly: false,
                    },
                ),
                def(table.clone(), MapOrigin::Btf),
            ],
            programs: vec![],
            btf: None,
            core_target: None,
        };
        let global = Map::new(data, 1).unwrap();
        global
            .user_update(&0u32.to_le_bytes(), &[1, 2, 3, 4, 5, 6, 7, 8], 0)
            .unwrap();
        let resized = Map::new(MapSpec::new("table", MapType::Hash, 4, 8, 1024), 1).unwrap();
        let opts = load_options(&object, &[global, resized]);
        assert_eq!(
            opts.data,
            vec![(".data".into(), vec![1, 2, 3, 4, 5, 6, 7, 8])]
        );
        assert_eq!(opts.max_entries, vec![("table".into(), 1024)]);
        assert!(opts.prog_types.is_empty());
    }
}
