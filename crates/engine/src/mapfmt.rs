//! Map keys and values as text: formatted with the object's BTF when it
//! describes them, parsed from text (`--map-update`); a map's contents
//! for reports ([`MapDump`]).

use std::cell::Cell;
use std::net::IpAddr;

use maps::{Map, MapType};
use obj::{Btf, BtfKind, MapDef, TypeId};
use serde::Serialize;

/// One map's contents for reports.
#[derive(Serialize, Clone, Debug)]
pub struct MapDump {
    pub name: String,
    #[serde(rename = "type")]
    pub map_type: String,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    /// Entries in use (array maps: all of them).
    pub len: usize,
    /// Entries whose value is not all zeros, up to the limit.
    pub entries: Vec<EntryDump>,
    /// Entries whose value is all zeros (not listed).
    pub zero_entries: usize,
    /// Non-zero entries beyond the limit (not listed).
    pub more: usize,
}

/// One entry of a map, as text.
#[derive(Serialize, Clone, Debug)]
pub struct EntryDump {
    pub key: String,
    /// Per-CPU maps: the sum over CPUs when the value is made of integer
    /// counters (BTF tells; `summed`), else CPU 0's value.
    pub value: String,
    /// Per-CPU maps: each CPU's value.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<String>,
    /// Per-CPU maps: whether `value` is the sum of `cpus`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub summed: bool,
}

/// Formats bytes as the BTF type `ty` describes, or as hex.
pub fn format(btf: Option<&Btf>, ty: Option<TypeId>, bytes: &[u8]) -> String {
    match (btf, ty) {
        (Some(btf), Some(ty)) => format_ty(btf, ty, bytes, 0).unwrap_or_else(|| hex(bytes)),
        _ => hex(bytes),
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The most pieces (numbers, members, elements) one value is printed in:
/// BTF from an object may nest zero-sized arrays and structs, which take no
/// bytes however many they are.
const MAX_PIECES: usize = 1 << 16;

fn format_ty(btf: &Btf, ty: TypeId, bytes: &[u8], depth: usize) -> Option<String> {
    format_named(btf, ty, bytes, depth, "", &Cell::new(MAX_PIECES))
}

/// Formats a value; `field` is the member name it sits in (address-like
/// names print as addresses).
fn format_named(
    btf: &Btf,
    ty: TypeId,
    bytes: &[u8],
    depth: usize,
    field: &str,
    left: &Cell<usize>,
) -> Option<String> {
    if depth > 8 || left.get() == 0 {
        return None;
    }
    left.set(left.get() - 1);
    let id = btf.skip_mods_and_typedefs(ty).ok()?;
    let t = btf.get(id)?;
    let addr_like = addr_like(field);
    Some(match &t.kind {
        BtfKind::Struct { .. } if t.name == "in6_addr" => {
            std::net::Ipv6Addr::from(<[u8; 16]>::try_from(bytes.get(..16)?).ok()?).to_string()
        }
        BtfKind::Int { size: 4, .. } if addr_like && !field.contains("len") => {
            std::net::Ipv4Addr::from(<[u8; 4]>::try_from(bytes.get(..4)?).ok()?).to_string()
        }
        BtfKind::Int { size, signed, .. } | BtfKind::Enum { size, signed, .. } => {
            let n = *size as usize;
            let raw = bytes.get(..n)?;
            let mut b = [0u8; 8];
            b[..n.min(8)].copy_from_slice(&raw[..n.min(8)]);
            let v = u64::from_le_bytes(b);
            if let BtfKind::Enum { values, .. } = &t.kind
                && let Some((name, _)) = values.iter().find(|(_, x)| *x as u64 == v)
            {
                return Some(name.clone());
            }
            // A zero-sized integer (BTF from anywhere says so) is 0.
            if *signed && n > 0 {
                let shift = 64 - 8 * n.min(8) as u32;
                (((v << shift) as i64) >> shift).to_string()
            } else {
                v.to_string()
            }
        }
        BtfKind::Array { elem, nelems, .. } => {
            let esize = btf.size_of(*elem).ok()? as usize;
            let n = *nelems as usize;
            if esize == 1 {
                let raw = bytes.get(..n)?;
                return Some(match n {
                    4 if addr_like => {
                        std::net::Ipv4Addr::from(<[u8; 4]>::try_from(raw).ok()?).to_string()
                    }
                    16 if addr_like => {
                        std::net::Ipv6Addr::from(<[u8; 16]>::try_from(raw).ok()?).to_string()
                    }
                    6 if field.contains("mac") => raw
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<Vec<_>>()
                        .join(":"),
                    _ => hex(raw),
                });
            }
            let items: Option<Vec<String>> = (0..n)
                .map(|i| {
                    format_named(
                        btf,
                        *elem,
                        bytes.get(i * esize..(i + 1) * esize)?,
                        depth + 1,
                        field,
                        left,
                    )
                })
                .collect();
            format!("[{}]", items?.join(", "))
        }
        // A union shows its first member.
        BtfKind::Union { members, .. } => {
            let m = members.first()?;
            format_named(btf, m.ty, bytes, depth + 1, &m.name, left)?
        }
        BtfKind::Struct { members, .. } => {
            let mut parts = Vec::new();
            for m in members {
                if m.bitfield_size != 0 || m.bit_offset % 8 != 0 {
                    return None;
                }
                let off = (m.bit_offset / 8) as usize;
                let size = btf.size_of(m.ty).ok()? as usize;
                let v = format_named(
                    btf,
                    m.ty,
                    bytes.get(off..off + size)?,
                    depth + 1,
                    &m.name,
                    left,
                )?;
                if m.name.is_empty() || m.name.starts_with("pad") {
                    // An anonymous union shows as its first member, named.
                    match union_first_name(btf, m.ty) {
                        Some(name) if m.name.is_empty() => parts.push(format!("{name}: {v}")),
                        _ if !m.name.starts_with("pad") => parts.push(v),
                        _ => {}
                    }
                } else {
                    parts.push(format!("{}: {v}", m.name));
                }
            }
            format!("{{{}}}", parts.join(", "))
        }
        // Global data: each variable by name.
        BtfKind::Datasec { vars, .. } => {
            let mut parts = Vec::new();
            for v in vars {
                let var = btf.get(v.ty)?;
                let BtfKind::Var { ty, .. } = var.kind else {
                    return None;
                };
                let (off, size) = (v.offset as usize, v.size as usize);
                let val = format_named(
                    btf,
                    ty,
                    bytes.get(off..off + size)?,
                    depth + 1,
                    &var.name,
                    left,
                )?;
                parts.push(format!("{}: {val}", var.name));
            }
            format!("{{{}}}", parts.join(", "))
        }
        BtfKind::Ptr(_) => format!(
            "0x{}",
            hex(&bytes.get(..8)?.iter().rev().copied().collect::<Vec<_>>())
        ),
        _ => return None,
    })
}

/// Whether a member of this name holds an address (printed as one).
pub(crate) fn addr_like(field: &str) -> bool {
    field.contains("addr")
        || field.contains("ip")
        || field == "vip"
        || field == "dst"
        || field == "src"
}

/// The name of a union's first member (the one a union is shown as).
pub(crate) fn union_first_name(btf: &Btf, ty: TypeId) -> Option<String> {
    let t = btf.get(btf.skip_mods_and_typedefs(ty).ok()?)?;
    match &t.kind {
        BtfKind::Union { members, .. } => members
            .first()
            .map(|m| m.name.clone())
            .filter(|n| !n.is_empty()),
        _ => None,
    }
}

/// Where the integer fields of a value sit: `(offset, size)` of each, or
/// `None` when the value holds anything else (then per-CPU copies are not
/// summed).
fn counter_fields(
    btf: &Btf,
    ty: TypeId,
    off: usize,
    depth: usize,
    left: &Cell<usize>,
    out: &mut Vec<(usize, usize)>,
) -> Option<()> {
    // Bounded as formatting is: a struct may name itself, zero-sized
    // members and elements take no bytes.
    if depth > 8 || left.get() == 0 {
        return None;
    }
    left.set(left.get() - 1);
    let t = btf.get(btf.skip_mods_and_typedefs(ty).ok()?)?;
    match &t.kind {
        BtfKind::Int { size, .. } if [1, 2, 4, 8].contains(size) => {
            out.push((off, *size as usize));
        }
        BtfKind::Struct { members, .. } => {
            for m in members {
                if m.bitfield_size != 0 || m.bit_offset % 8 != 0 {
                    return None;
                }
                let at = off.checked_add((m.bit_offset / 8) as usize)?;
                counter_fields(btf, m.ty, at, depth + 1, left, out)?;
            }
        }
        BtfKind::Array { elem, nelems, .. } => {
            let esize = btf.size_of(*elem).ok()? as usize;
            for i in 0..*nelems as usize {
                let at = off.checked_add(i.checked_mul(esize)?)?;
                counter_fields(btf, *elem, at, depth + 1, left, out)?;
            }
        }
        // Names for one counter (xdp-tools' `union { packets; rx_packets; }`):
        // summed when every member lays out the same integers.
        BtfKind::Union { members, .. } => {
            let mut first: Option<Vec<(usize, usize)>> = None;
            for m in members {
                let mut fields = Vec::new();
                counter_fields(btf, m.ty, off, depth + 1, left, &mut fields)?;
                match &first {
                    Some(f) if *f != fields => return None,
                    Some(_) => {}
                    None => first = Some(fields),
                }
            }
            out.extend(first?);
        }
        _ => return None,
    }
    Some(())
}

/// The per-CPU copies of a value added field by field (wrapping, as
/// counters do), when BTF shows it is made of integers.
pub(crate) fn sum_cpus(btf: Option<&Btf>, ty: Option<TypeId>, copies: &[&[u8]]) -> Option<Vec<u8>> {
    let mut fields = Vec::new();
    counter_fields(btf?, ty?, 0, 0, &Cell::new(MAX_PIECES), &mut fields)?;
    let mut sum = copies.first()?.to_vec();
    for copy in &copies[1..] {
        for &(off, size) in &fields {
            // BTF may place a field past the map's value: then no sum.
            let read = |b: &[u8]| {
                let mut w = [0u8; 8];
                w[..size].copy_from_slice(b.get(off..off + size)?);
                Some(u64::from_le_bytes(w))
            };
            let v = read(&sum)?.wrapping_add(read(copy)?);
            sum.get_mut(off..off + size)?
                .copy_from_slice(&v.to_le_bytes()[..size]);
        }
    }
    Some(sum)
}

/// Where the integers of a value of BTF type `ty` sit, `(offset, size)`
/// each: `None` without BTF, or when the value holds anything else.
pub(crate) fn integer_members(
    btf: Option<&Btf>,
    ty: Option<TypeId>,
) -> Option<Vec<(usize, usize)>> {
    let mut fields = Vec::new();
    counter_fields(btf?, ty?, 0, 0, &Cell::new(MAX_PIECES), &mut fields)?;
    Some(fields)
}

/// Dumps a map: at most `limit` entries.
pub fn dump(map: &Map, def: Option<&MapDef>, btf: Option<&Btf>, limit: usize) -> MapDump {
    let spec = map.spec();
    // Entries never written are not read: a huge array costs what it holds.
    let (nonzero, zero_entries) = map.entries_skipping_zeros();
    let (key_ty, value_ty) = def.map_or((None, None), |d| (d.key_type, d.value_type));
    let is_data = matches!(def.map(|d| &d.origin), Some(obj::MapOrigin::Data { .. }));
    let elem = (spec.value_size as usize).div_ceil(8) * 8;
    let dumped = nonzero
        .iter()
        .take(limit)
        .map(|(k, v)| {
            let key = if is_data {
                "0".into()
            } else {
                format(btf, key_ty, k)
            };
            if spec.map_type.is_percpu() {
                let copies: Vec<&[u8]> = v
                    .chunks(elem)
                    .map(|c| &c[..spec.value_size as usize])
                    .collect();
                let cpus: Vec<String> = copies.iter().map(|c| format(btf, value_ty, c)).collect();
                let sum = sum_cpus(btf, value_ty, &copies);
                let summed = sum.is_some() && copies.len() > 1;
                let value = match sum {
                    Some(sum) => format(btf, value_ty, &sum),
                    None => cpus.first().cloned().unwrap_or_default(),
                };
                EntryDump {
                    key,
                    value,
                    cpus,
                    summed,
                }
            } else {
                EntryDump {
                    key,
                    value: format(btf, value_ty, v),
                    cpus: Vec::new(),
                    summed: false,
                }
            }
        })
        .collect();
    MapDump {
        name: map.name().to_string(),
        map_type: spec.map_type.name().to_string(),
        key_size: spec.key_size,
        value_size: spec.value_size,
        max_entries: spec.max_entries,
        len: map.len(),
        zero_entries,
        more: nonzero.len().saturating_sub(limit),
        entries: dumped,
    }
}

/// Parses a key or value of `size` bytes: `hex:0a0b..` (memory order), an
/// integer (little-endian in `size` bytes), an IP address (network order),
/// or for an LPM trie key `ADDR/LEN`.
pub fn parse(
    text: &str,
    size: usize,
    map_type: MapType,
    is_key: bool,
) -> Result<Vec<u8>, MapTextError> {
    parse_text(text, size, map_type, is_key).map_err(MapTextError)
}

fn parse_text(text: &str, size: usize, map_type: MapType, is_key: bool) -> Result<Vec<u8>, String> {
    let t = text.trim();
    if let Some(h) = t.strip_prefix("hex:") {
        let bytes = hex_bytes(h).ok_or_else(|| format!("`{t}` is not hex"))?;
        return fit(bytes, size, t);
    }
    if is_key && map_type == MapType::LpmTrie {
        let (addr, len) = t
            .split_once('/')
            .ok_or_else(|| format!("an LPM key is ADDR/LEN, not `{t}`"))?;
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| format!("`{addr}` is not an IP address"))?;
        let len: u32 = len
            .parse()
            .map_err(|_| format!("`{len}` is not a prefix length"))?;
        let mut key = len.to_le_bytes().to_vec();
        key.extend(ip_bytes(ip));
        key.resize(size, 0);
        return fit(key, size, t);
    }
    if let Ok(ip) = t.parse::<IpAddr>() {
        return fit(ip_bytes(ip), size, t);
    }
    let n: i128 = match t.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16),
        None => t.parse(),
    }
    .map_err(|_| format!("`{t}` is neither a number, an IP address nor hex:BYTES"))?;
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Err(format!(
            "`{t}`: this map's {size}-byte {} needs hex:BYTES",
            if is_key { "key" } else { "value" }
        ));
    }
    let bits = size * 8;
    if n >= 1i128 << bits || n < -(1i128 << (bits - 1)) {
        return Err(format!("`{t}` does not fit {size} bytes"));
    }
    Ok(n.to_le_bytes()[..size].to_vec())
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// Bytes from hex digits, two per byte; `None` for anything else.
pub fn hex_bytes(h: &str) -> Option<Vec<u8>> {
    (0..h.len())
        .step_by(2)
        .map(|i| h.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect()
}

fn fit(bytes: Vec<u8>, size: usize, text: &str) -> Result<Vec<u8>, String> {
    if bytes.len() == size {
        Ok(bytes)
    } else {
        Err(format!(
            "`{text}` is {} bytes; this map needs {size}",
            bytes.len()
        ))
    }
}

/// A key or value [`parse`] does not take; the message says what it
/// expected.
// Display and Error by hand: the fuzz checks include this file by path,
// without the crate's dependencies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapTextError(pub String);

impl std::fmt::Display for MapTextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MapTextError {}
