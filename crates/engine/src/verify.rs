//! [`Verifiable`]: an object made ready for verifying its programs one by
//! one (`sluice verify`): settings applied, and what the verifier and the
//! kernel need to know of its maps, as programs will see them (global
//! data after `--set`, sizes after `--map-size`).

use runtime::{Image, LoadOptions};
use verifier::MapView;

use crate::error::{Error, ObjectError};
use crate::hook_spec::ObjectSource;
use crate::settings::Settings;

/// An object with its maps as loading makes them.
pub struct Verifiable {
    /// The object, settings applied.
    pub object: obj::Object,
    /// Each map for the verifier: its size, and its global data.
    pub maps: Vec<MapView>,
    /// Each map's definition, its size as loaded (for the kernel).
    pub defs: Vec<obj::MapDef>,
    /// Each global-data map's contents after `--set` (`None`: not one).
    data: Vec<Option<Vec<u8>>>,
}

impl Verifiable {
    /// Reads and parses the object, applies `settings` and makes its maps.
    pub fn load(source: &ObjectSource, settings: &Settings) -> Result<Verifiable, Error> {
        let name = source.name();
        let at = |cause: ObjectError| Error::Object {
            name: name.clone(),
            cause,
        };
        let bytes = source.bytes(None)?;
        let mut object = obj::Object::parse(&bytes).map_err(|e| at(e.into()))?;
        let mut opts = LoadOptions::default();
        settings.apply(&mut object, &mut opts)?;
        let image = Image::load(object.clone(), &opts).map_err(|e| at(e.into()))?;
        let data: Vec<Option<Vec<u8>>> = (0..object.maps.len())
            .map(|i| {
                object.maps[i].data.as_ref()?;
                image.maps[i].user_lookup(&0u32.to_le_bytes()).ok()
            })
            .collect();
        let mut maps = MapView::of_object(&object, &|i| data[i].clone());
        for (info, map) in maps.iter_mut().zip(image.maps.iter()) {
            info.max_entries = map.spec().max_entries;
        }
        let mut defs = object.maps.clone();
        for (def, map) in defs.iter_mut().zip(image.maps.iter()) {
            def.spec.max_entries = map.spec().max_entries;
        }
        Ok(Verifiable {
            object,
            maps,
            defs,
            data,
        })
    }

    /// Map `i`'s global data after `--set`, when it holds global data.
    pub fn data_of(&self, i: usize) -> Option<Vec<u8>> {
        self.data.get(i).cloned().flatten()
    }
}
