//! [`HookMaps`]: a hook's maps, shared with it, read and written as user
//! space does with `bpf()` (lookup, update, delete, iterate) while the
//! hook runs or between runs; keys and values as [`Value`]s, laid out by
//! the object's BTF ([`Shape`]). [`MapInfo`] says what a map is.

use std::sync::Arc;

use maps::{Errno, Map, MapType};
use obj::{Btf, MapDef, MapOrigin};
use serde::Serialize;

use crate::map_value::{MapValueError, Shape, Value};

/// What a map is: as `bpftool map show` names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MapInfo {
    pub name: String,
    /// As bpftool names it: `hash`, `percpu_array`, `lpm_trie`...
    #[serde(rename = "type")]
    pub map_type: String,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    /// Per-CPU maps: the values each key has, one per CPU (else 1).
    pub cpus: u32,
}

impl MapInfo {
    /// Each map of `object` as it declares it (sizes before `--map-size`).
    pub fn of_object(object: &obj::Object) -> Vec<MapInfo> {
        object
            .maps
            .iter()
            .map(|d| MapInfo {
                name: d.name().to_string(),
                map_type: d.spec.map_type.name().to_string(),
                key_size: d.spec.key_size,
                value_size: d.spec.value_size,
                max_entries: d.spec.max_entries,
                flags: d.spec.flags,
                cpus: 1,
            })
            .collect()
    }

    fn of_map(map: &Map) -> MapInfo {
        let s = map.spec();
        MapInfo {
            name: s.name.clone(),
            map_type: s.map_type.name().to_string(),
            key_size: s.key_size,
            value_size: s.value_size,
            max_entries: s.max_entries,
            flags: s.flags,
            cpus: if s.map_type.is_percpu() {
                map.ncpus()
            } else {
                1
            },
        }
    }
}

/// Why a map operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("no map `{name}`; the object has: {}", maps.join(", "))]
    NoSuchMap { name: String, maps: Vec<String> },
    /// `what`: `key` or `value`.
    #[error("map {map}: {what}: {cause}")]
    Value {
        map: String,
        what: &'static str,
        cause: MapValueError,
    },
    /// Per-CPU values, one per CPU: not as many as CPUs.
    #[error("map {map}: {given} per-CPU values given; the map has {cpus} CPUs")]
    Cpus {
        map: String,
        given: usize,
        cpus: u32,
    },
    /// The map refused (as `bpf()` would, with this errno).
    #[error("map {map}: {op} refused: {errno}{}", hint(*errno))]
    Refused {
        map: String,
        op: &'static str,
        errno: Errno,
    },
}

fn hint(e: Errno) -> &'static str {
    match e {
        Errno::EPERM => " (the map is read-only: global data in .rodata is set with --set)",
        Errno::E2BIG => " (the map is full)",
        Errno::EINVAL => " (array entries are not deleted; write zeros)",
        Errno::EOPNOTSUPP => " (not a map of keys and values)",
        _ => "",
    }
}

/// A map's value: one, or one per CPU for per-CPU maps.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MapValue {
    Shared(Value),
    PerCpu(Vec<Value>),
}

/// A hook's maps, shared with it (cheap to clone), and what the object
/// says of them.
#[derive(Clone)]
pub struct HookMaps {
    maps: Arc<[Map]>,
    defs: Arc<[MapDef]>,
    btf: Arc<Option<Btf>>,
}

impl HookMaps {
    /// `hook`'s maps: the very ones its programs use.
    pub fn of(hook: &runtime::Hook) -> HookMaps {
        HookMaps {
            maps: hook.shared_maps().clone(),
            defs: hook.object().maps.clone().into(),
            btf: Arc::new(hook.object().btf.clone()),
        }
    }

    /// The maps' names, in the object's order.
    pub fn names(&self) -> Vec<String> {
        self.maps.iter().map(|m| m.name().to_string()).collect()
    }

    /// The map `name`.
    pub fn get(&self, name: &str) -> Result<HookMap, MapError> {
        let index = self
            .maps
            .iter()
            .position(|m| m.name() == name)
            .ok_or_else(|| MapError::NoSuchMap {
                name: name.to_string(),
                maps: self.names(),
            })?;
        let map = &self.maps[index];
        let spec = map.spec();
        let def = self.defs.get(index);
        let btf = (*self.btf).as_ref();
        let (key_ty, value_ty) = def.map_or((None, None), |d| (d.key_type, d.value_type));
        let is_data = matches!(def.map(|d| &d.origin), Some(MapOrigin::Data { .. }));
        let ks = spec.key_size as usize;
        let index_key = Shape::Int {
            size: 4,
            signed: false,
        };
        let key = match Shape::of(btf, key_ty, ks) {
            _ if is_data => index_key,
            _ if spec.map_type == MapType::LpmTrie && (ks == 8 || ks == 20) => {
                Shape::Prefix { size: ks }
            }
            Shape::Bytes(4) if spec.map_type.name().contains("array") => index_key,
            shape => shape,
        };
        Ok(HookMap {
            maps: self.maps.clone(),
            index,
            key,
            value: Shape::of(btf, value_ty, spec.value_size as usize),
            btf: self.btf.clone(),
            value_ty,
        })
    }
}

/// One of a hook's maps, with its keys' and values' shapes.
#[derive(Clone)]
pub struct HookMap {
    maps: Arc<[Map]>,
    index: usize,
    key: Shape,
    value: Shape,
    btf: Arc<Option<Btf>>,
    value_ty: Option<obj::TypeId>,
}

impl HookMap {
    fn map(&self) -> &Map {
        &self.maps[self.index]
    }

    pub fn name(&self) -> &str {
        self.map().name()
    }

    /// What the map is, sizes as loaded.
    pub fn info(&self) -> MapInfo {
        MapInfo::of_map(self.map())
    }

    /// How its keys are laid out.
    pub fn key_shape(&self) -> &Shape {
        &self.key
    }

    /// How its values are laid out (each CPU's, for per-CPU maps).
    pub fn value_shape(&self) -> &Shape {
        &self.value
    }

    /// Per-CPU maps: the CPUs it holds a value for.
    pub fn per_cpu(&self) -> Option<u32> {
        let m = self.map();
        m.map_type().is_percpu().then(|| m.ncpus())
    }

    /// Entries in use (array maps: all of them).
    pub fn len(&self) -> usize {
        self.map().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn value_error(&self, what: &'static str, cause: MapValueError) -> MapError {
        MapError::Value {
            map: self.name().to_string(),
            what,
            cause,
        }
    }

    fn refused(&self, op: &'static str, errno: Errno) -> MapError {
        MapError::Refused {
            map: self.name().to_string(),
            op,
            errno,
        }
    }

    /// `key` in the map's layout.
    pub fn encode_key(&self, key: &Value) -> Result<Vec<u8>, MapError> {
        self.key.encode(key).map_err(|e| self.value_error("key", e))
    }

    /// A user-space value (every CPU's copy, each rounded up to 8 bytes,
    /// for per-CPU maps) decoded.
    fn decode_value(&self, bytes: &[u8]) -> MapValue {
        match self.per_cpu() {
            Some(_) => {
                let stride = self.map().spec().value_size.div_ceil(8) as usize * 8;
                MapValue::PerCpu(
                    bytes
                        .chunks(stride.max(1))
                        .map(|c| self.value.decode(c))
                        .collect(),
                )
            }
            None => MapValue::Shared(self.value.decode(bytes)),
        }
    }

    /// The value at `key`; `None` when there is none (a hash without the
    /// key, an index past an array). LPM tries give the longest match.
    pub fn lookup(&self, key: &Value) -> Result<Option<MapValue>, MapError> {
        let k = self.encode_key(key)?;
        match self.map().user_lookup(&k) {
            Ok(v) => Ok(Some(self.decode_value(&v))),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(self.refused("lookup", e)),
        }
    }

    /// Writes `value` at `key` (`BPF_ANY`). Per-CPU maps take one value per
    /// CPU, or one [`MapValue::Shared`] value for every CPU; other maps
    /// take [`MapValue::PerCpu`] values as an array's items.
    pub fn update(&self, key: &Value, value: &MapValue) -> Result<(), MapError> {
        let k = self.encode_key(key)?;
        let one = |v: &Value| {
            self.value
                .encode(v)
                .map_err(|e| self.value_error("value", e))
        };
        let bytes = match (self.per_cpu(), value) {
            (None, MapValue::Shared(v)) => one(v)?,
            // Not per-CPU: the list is an array.
            (None, MapValue::PerCpu(vs)) => one(&Value::Array(vs.clone()))?,
            (Some(cpus), v) => {
                let values: Vec<&Value> = match v {
                    MapValue::Shared(v) => vec![v; cpus as usize],
                    MapValue::PerCpu(vs) if vs.len() == cpus as usize => vs.iter().collect(),
                    MapValue::PerCpu(vs) => {
                        return Err(MapError::Cpus {
                            map: self.name().to_string(),
                            given: vs.len(),
                            cpus,
                        });
                    }
                };
                let stride = self.map().spec().value_size.div_ceil(8) as usize * 8;
                let mut all = Vec::with_capacity(stride * values.len());
                for v in values {
                    let mut b = one(v)?;
                    b.resize(stride, 0);
                    all.extend(b);
                }
                all
            }
        };
        self.map()
            .user_update(&k, &bytes, maps::update::ANY)
            .map_err(|e| self.refused("update", e))
    }

    /// Deletes `key`; whether it was there.
    pub fn delete(&self, key: &Value) -> Result<bool, MapError> {
        let k = self.encode_key(key)?;
        match self.map().delete(&k) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(self.refused("delete", e)),
        }
    }

    /// Every key, in `get_next_key` order.
    pub fn keys(&self) -> Vec<Value> {
        let map = self.map();
        let mut out = Vec::new();
        let mut key: Option<Vec<u8>> = None;
        while let Ok(next) = map.user_next_key(key.as_deref()) {
            out.push(self.key.decode(&next));
            key = Some(next);
        }
        out
    }

    /// Every entry, in `get_next_key` order.
    pub fn entries(&self) -> Vec<(Value, MapValue)> {
        self.map()
            .entries()
            .iter()
            .map(|(k, v)| (self.key.decode(k), self.decode_value(v)))
            .collect()
    }

    /// The entries a run's report lists ([`crate::MapDump`]): values not
    /// all zeros, at most `limit`; a per-CPU value as the report gives it
    /// (summed over CPUs when BTF shows it is made of counters, else
    /// CPU 0's).
    pub fn report_entries(&self, limit: usize) -> Vec<(Value, Value)> {
        let map = self.map();
        let size = map.spec().value_size as usize;
        let stride = size.div_ceil(8) * 8;
        let (nonzero, _) = map.entries_skipping_zeros();
        nonzero
            .iter()
            .take(limit)
            .map(|(k, v)| {
                let key = self.key.decode(k);
                let value = if self.per_cpu().is_some() {
                    let copies: Vec<&[u8]> = v.chunks(stride.max(1)).map(|c| &c[..size]).collect();
                    match crate::mapfmt::sum_cpus((*self.btf).as_ref(), self.value_ty, &copies) {
                        Some(sum) => self.value.decode(&sum),
                        None => self
                            .value
                            .decode(copies.first().copied().unwrap_or_default()),
                    }
                } else {
                    self.value.decode(v)
                };
                (key, value)
            })
            .collect()
    }
}
