//! Map definitions as libbpf reads them: BTF-defined maps in `.maps`, the
//! legacy `maps` section, and global data sections as single-entry arrays.

use maps::{MapSpec, MapType, flags};

use crate::ObjError;
use crate::btf::{Btf, BtfKind, TypeId};

/// What a map's slot is initialised with (`__array(values, ...)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitialRef {
    Program(String),
    Map(String),
}

/// Where a map came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapOrigin {
    /// A BTF-defined map in `.maps`.
    Btf,
    /// A `struct bpf_map_def` in the legacy `maps` section.
    Legacy,
    /// Global data: `.data*`, `.rodata*` (read-only, frozen) or `.bss*`.
    Data { section: String, readonly: bool },
}

/// One map of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapDef {
    pub spec: MapSpec,
    pub origin: MapOrigin,
    /// `LIBBPF_PIN_BY_NAME`: shared through a pin directory.
    pub pin_by_name: bool,
    /// The inner map's template, for maps of maps.
    pub inner: Option<Box<MapDef>>,
    /// Initial slots from `__array(values, ...)`.
    pub initial: Vec<(u32, InitialRef)>,
    /// Initial contents of a global data map.
    pub data: Option<Vec<u8>>,
    /// BTF of the key and value, when known (for printing and `--set`).
    pub key_type: Option<TypeId>,
    pub value_type: Option<TypeId>,
}

impl MapDef {
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// A BTF map definition before the object's relocations fill `initial`.
pub struct BtfMapDef {
    pub def: MapDef,
    /// Byte offset of the `values` array inside the map variable.
    pub values_offset: Option<u32>,
}

fn uint_value(btf: &Btf, ty: TypeId) -> Result<u32, String> {
    // `__uint(name, N)` is `int (*name)[N]`.
    let ptr = btf.skip_mods_and_typedefs(ty).map_err(|e| e.to_string())?;
    let BtfKind::Ptr(arr) = btf.ty(ptr).kind else {
        return Err(format!(
            "expected a pointer to an array, found {}",
            btf.display(ptr)
        ));
    };
    let arr = btf.skip_mods_and_typedefs(arr).map_err(|e| e.to_string())?;
    match btf.ty(arr).kind {
        BtfKind::Array { nelems, .. } => Ok(nelems),
        _ => Err(format!("expected an array, found {}", btf.display(arr))),
    }
}

fn pointee(btf: &Btf, ty: TypeId) -> Result<TypeId, String> {
    let ptr = btf.skip_mods_and_typedefs(ty).map_err(|e| e.to_string())?;
    match btf.ty(ptr).kind {
        BtfKind::Ptr(to) => Ok(to),
        _ => Err(format!(
            "expected a pointer (__type), found {}",
            btf.display(ptr)
        )),
    }
}

/// Parses the struct of a BTF-defined map (`struct { __uint(type, ...); ... }`).
pub(crate) fn parse_btf_map(
    btf: &Btf,
    name: &str,
    def_ty: TypeId,
    inner: bool,
) -> Result<BtfMapDef, String> {
    let st = btf
        .skip_mods_and_typedefs(def_ty)
        .map_err(|e| e.to_string())?;
    let BtfKind::Struct { members, .. } = &btf.ty(st).kind else {
        return Err(format!("definition is {}, not a struct", btf.display(st)));
    };
    let mut map_type = None;
    let (mut key_size, mut value_size, mut max_entries, mut map_flags) = (None, None, 0u32, 0u32);
    let (mut key_type, mut value_type) = (None, None);
    let mut pin_by_name = false;
    let mut inner_def = None;
    let mut values_offset = None;
    let mut values_seen = false;
    for m in members {
        let at = |e: String| format!("member `{}`: {e}", m.name);
        match m.name.as_str() {
            "type" => {
                let id = uint_value(btf, m.ty).map_err(at)?;
                map_type = Some(MapType::from_id(id).map_err(|e| e.to_string())?);
            }
            "max_entries" => max_entries = uint_value(btf, m.ty).map_err(at)?,
            "map_flags" => map_flags = uint_value(btf, m.ty).map_err(at)?,
            "key_size" => key_size = Some(uint_value(btf, m.ty).map_err(at)?),
            "value_size" => value_size = Some(uint_value(btf, m.ty).map_err(at)?),
            "key" => {
                let t = pointee(btf, m.ty).map_err(at)?;
                key_size = Some(btf.size_of(t).map_err(|e| at(e.to_string()))? as u32);
                key_type = Some(t);
            }
            "value" => {
                let t = pointee(btf, m.ty).map_err(at)?;
                value_size = Some(btf.size_of(t).map_err(|e| at(e.to_string()))? as u32);
                value_type = Some(t);
            }
            // libbpf knows 0 (none) and 1 (by name); iproute2 uses 2 for
            // its global namespace, shared by name too. Other loaders give
            // other values their own meanings (Cilium's 16): not pinned here.
            "pinning" => pin_by_name = matches!(uint_value(btf, m.ty).map_err(at)?, 1 | 2),
            "numa_node" | "map_extra" => {}
            "values" => {
                values_seen = true;
                if inner {
                    return Err("an inner map cannot have `values`".into());
                }
                values_offset = Some(m.bit_offset / 8);
                // `__array(values, T)` is `typeof(T) *values[]`.
                let arr = btf
                    .skip_mods_and_typedefs(m.ty)
                    .map_err(|e| at(e.to_string()))?;
                let BtfKind::Array { elem, .. } = btf.ty(arr).kind else {
                    return Err(at("expected __array(values, ...)".into()));
                };
                let target = btf
                    .skip_mods_and_typedefs(pointee(btf, elem).map_err(at)?)
                    .map_err(|e| at(e.to_string()))?;
                if let BtfKind::Struct { .. } = btf.ty(target).kind {
                    let inner_name = format!("{name}.inner");
                    inner_def = Some(Box::new(
                        parse_btf_map(btf, &inner_name, target, true)
                            .map_err(at)?
                            .def,
                    ));
                }
            }
            other => return Err(format!("unknown member `{other}` in a map definition")),
        }
    }
    let map_type = map_type.ok_or("missing __uint(type, ...)")?;
    let is_map_in_map = matches!(map_type, MapType::ArrayOfMaps | MapType::HashOfMaps);
    let is_fd_array =
        matches!(map_type, MapType::ProgArray | MapType::PerfEventArray) || is_map_in_map;
    if is_map_in_map && inner_def.is_none() {
        return Err(
            "a map of maps needs __array(values, struct { ... }) describing its inner map".into(),
        );
    }
    if values_seen {
        // As libbpf: `values` makes the slots 4-byte ids (of maps or
        // programs); a declared size must agree.
        match value_size {
            None | Some(0) | Some(4) => value_size = Some(4),
            Some(n) => {
                return Err(format!(
                    "conflicting value size {n} != 4 (`values` makes the slots 4-byte ids)"
                ));
            }
        }
    }
    let default_size = if is_fd_array
        || matches!(
            map_type,
            MapType::Devmap | MapType::DevmapHash | MapType::Cpumap | MapType::Xskmap
        ) {
        4
    } else {
        0
    };
    let mut spec = MapSpec::new(
        name,
        map_type,
        key_size.unwrap_or(if map_type == MapType::PerfEventArray {
            4
        } else {
            default_size
        }),
        value_size.unwrap_or(default_size),
        max_entries,
    );
    spec.flags = map_flags;
    // The kernel finds a value's lock through its BTF, in these maps only.
    if matches!(
        spec.map_type,
        MapType::Array | MapType::Hash | MapType::LruHash
    ) {
        spec.spin_lock = value_type.and_then(|t| btf.spin_lock_offset(t));
    }
    normalize(&mut spec);
    Ok(BtfMapDef {
        def: MapDef {
            spec,
            origin: MapOrigin::Btf,
            pin_by_name,
            inner: inner_def,
            initial: Vec::new(),
            data: None,
            key_type,
            value_type,
        },
        values_offset,
    })
}

/// What loaders make of definitions the kernel would refuse as written.
///
/// A ring buffer has no keys or values: some toolchains still declare
/// sizes for them (a `struct bpf_map_def` with every field filled, or
/// `__type(value, struct event)` as documentation); they are dropped (the
/// kernel refuses a ring buffer with either). Its size is rounded up to a
/// power-of-2 multiple of the 4096-byte page, as libbpf's
/// `adjust_ringbuf_sz` does.
fn normalize(spec: &mut MapSpec) {
    if spec.map_type == MapType::Ringbuf {
        spec.key_size = 0;
        spec.value_size = 0;
        let n = spec.max_entries;
        if n != 0 {
            spec.max_entries = n.max(4096).checked_next_power_of_two().unwrap_or(n);
        }
    }
}

/// Why a legacy map definition cannot be read.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub(crate) enum LegacyMapError {
    #[error("definition shorter than 4 bytes")]
    Short,
    /// The definition ends before this field.
    #[error("definition has no {0}")]
    Missing(&'static str),
    #[error(transparent)]
    Type(#[from] maps::MapTypeError),
}

/// A legacy `struct bpf_map_def { type, key_size, value_size, max_entries,
/// map_flags, ... }` of `def.len()` bytes.
pub(crate) fn parse_legacy_map(name: &str, def: &[u8]) -> Result<MapDef, LegacyMapError> {
    let field = |i: usize| {
        def.get(i * 4..i * 4 + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    };
    let ty = field(0).ok_or(LegacyMapError::Short)?;
    let spec = MapSpec {
        name: name.to_string(),
        map_type: MapType::from_id(ty)?,
        key_size: field(1).ok_or(LegacyMapError::Missing("key_size"))?,
        value_size: field(2).ok_or(LegacyMapError::Missing("value_size"))?,
        max_entries: field(3).ok_or(LegacyMapError::Missing("max_entries"))?,
        flags: field(4).unwrap_or(0),
        // Legacy definitions carry no BTF to find a lock in.
        spin_lock: None,
    };
    let mut spec = spec;
    normalize(&mut spec);
    Ok(MapDef {
        spec,
        origin: MapOrigin::Legacy,
        pin_by_name: false,
        inner: None,
        initial: Vec::new(),
        data: None,
        key_type: None,
        value_type: None,
    })
}

/// A global data section as a one-element array map.
pub fn data_map(section: &str, contents: Vec<u8>, value_type: Option<TypeId>) -> MapDef {
    let readonly = section.starts_with(".rodata");
    let mut spec = MapSpec::new(section, MapType::Array, 4, contents.len() as u32, 1);
    if readonly {
        spec.flags |= flags::RDONLY_PROG;
    }
    MapDef {
        spec,
        origin: MapOrigin::Data {
            section: section.to_string(),
            readonly,
        },
        pin_by_name: false,
        inner: None,
        initial: Vec::new(),
        data: Some(contents),
        key_type: None,
        value_type,
    }
}

/// Program-array slots declared on functions with a BTF declaration tag
/// `tail:MAP/INDEX` (Cilium's `__declare_tail`, which its agent honours
/// when loading): each becomes an initial slot, as `__array(values, ...)`
/// initialisers do for libbpf.
pub fn tail_call_tags(
    btf: &Btf,
    maps: &mut [MapDef],
    is_program: impl Fn(&str) -> bool,
) -> Result<(), ObjError> {
    for (_, t) in btf.types() {
        let BtfKind::DeclTag { ty, component: -1 } = t.kind else {
            continue;
        };
        let Some(spec) = t.name.strip_prefix("tail:") else {
            continue;
        };
        let func = btf.ty(ty);
        // A tagged function the compiler left out is simply not a slot.
        if !matches!(func.kind, BtfKind::Func { .. }) || !is_program(&func.name) {
            continue;
        }
        let (map, index) = spec.rsplit_once('/').unwrap_or((spec, ""));
        let bad = |why: &str| ObjError::Map {
            name: map.to_string(),
            reason: format!("tag `{}` on {}: {why}", t.name, func.name),
        };
        let index = parse_c_int(index).ok_or_else(|| bad("the index is not a number"))?;
        let def = maps
            .iter_mut()
            .find(|m| m.name() == map)
            .ok_or_else(|| bad("no such map"))?;
        if def.spec.map_type != MapType::ProgArray {
            return Err(bad("the map is not a program array"));
        }
        if index >= def.spec.max_entries {
            return Err(bad(&format!(
                "index beyond the map's {} entries",
                def.spec.max_entries
            )));
        }
        def.initial
            .push((index, InitialRef::Program(func.name.clone())));
    }
    Ok(())
}

/// A C integer literal as `__stringify` leaves it (`42`, `0x2a`, `42U`).
fn parse_c_int(s: &str) -> Option<u32> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}
