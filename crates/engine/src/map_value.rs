//! Map keys and values as structured data ([`Value`]) laid out as the
//! object's BTF describes them ([`Shape`]): decoded from a map's bytes and
//! encoded into them. A value reads as the report's map dumps
//! ([`crate::mapfmt`]) print it: struct members by name (`pad*` members
//! left out), address-like members as addresses, enums by name, byte
//! arrays as bytes.

use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use obj::{Btf, BtfKind, TypeId};

use crate::mapfmt::union_first_name;

/// How a key or value is laid out in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// An integer of 1, 2, 4 or 8 bytes, little-endian.
    Int { size: usize, signed: bool },
    /// An enum: an integer whose constants have names.
    Enum {
        size: usize,
        signed: bool,
        names: Vec<(String, i64)>,
    },
    /// An IPv4 address, in network order (4 bytes).
    Ipv4,
    /// An IPv6 address (16 bytes).
    Ipv6,
    /// A MAC address (6 bytes).
    Mac,
    /// Bytes as they are: what BTF does not describe.
    Bytes(usize),
    /// `len` elements, each `stride` bytes from the last.
    Array {
        elem: Box<Shape>,
        stride: usize,
        len: usize,
    },
    /// Members by name, in order (a struct, or global data's variables).
    Struct { size: usize, members: Vec<Member> },
    /// An LPM trie's key: the prefix length (u32), then the address.
    Prefix { size: usize },
}

/// One member of a [`Shape::Struct`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// Bytes from the start of the struct.
    pub offset: usize,
    pub size: usize,
    pub shape: Shape,
}

/// A key or value as data.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Value {
    Int(i128),
    /// Decoded: an enum constant's name. Encoded: text as `--map-update`
    /// takes it (a number, an address, `ADDR/LEN`, `hex:BYTES`), a MAC
    /// address or an enum constant's name.
    Text(String),
    Bytes(Vec<u8>),
    Ip(IpAddr),
    /// An address and a prefix length (an LPM trie's key).
    Prefix(IpAddr, u32),
    Mac([u8; 6]),
    /// Members by name; encoded, members not given are zeros.
    Struct(Vec<(String, Value)>),
    Array(Vec<Value>),
}

/// A value that does not encode into a shape; `at` names the member
/// (`stats.packets`, `[2]`), empty for the whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{reason}", if at.is_empty() { String::new() } else { format!("{at}: ") })]
pub struct MapValueError {
    pub at: String,
    pub reason: String,
}

fn fail<T>(reason: impl ToString) -> Result<T, MapValueError> {
    Err(MapValueError {
        at: String::new(),
        reason: reason.to_string(),
    })
}

/// The most shape nodes one type is described with (as formatting bounds
/// the pieces it prints).
const MAX_NODES: usize = 1 << 16;

impl Shape {
    /// The bytes it takes.
    pub fn size(&self) -> usize {
        match self {
            Shape::Int { size, .. } | Shape::Enum { size, .. } => *size,
            Shape::Ipv4 => 4,
            Shape::Ipv6 => 16,
            Shape::Mac => 6,
            Shape::Bytes(n) => *n,
            Shape::Array { stride, len, .. } => stride * len,
            Shape::Struct { size, .. } | Shape::Prefix { size } => *size,
        }
    }

    /// The shape of `size` bytes of BTF type `ty`: bytes when BTF does
    /// not describe them (no BTF, a bitfield, a float, another size).
    pub fn of(btf: Option<&Btf>, ty: Option<TypeId>, size: usize) -> Shape {
        let built = match (btf, ty) {
            (Some(btf), Some(ty)) => build(btf, ty, "", 0, &Cell::new(MAX_NODES)),
            _ => None,
        };
        match built {
            Some(s) if s.size() == size => s,
            _ => Shape::Bytes(size),
        }
    }

    /// Decodes `bytes` (at least [`Shape::size`] of them).
    pub fn decode(&self, bytes: &[u8]) -> Value {
        let take = |n: usize| &bytes[..n.min(bytes.len())];
        match self {
            Shape::Int { size, signed } => Value::Int(int(take(*size), *signed)),
            Shape::Enum {
                size,
                signed,
                names,
            } => {
                let n = int(take(*size), *signed);
                match names.iter().find(|(_, v)| i128::from(*v) == n) {
                    Some((name, _)) => Value::Text(name.clone()),
                    None => Value::Int(n),
                }
            }
            Shape::Ipv4 => Value::Ip(IpAddr::V4(Ipv4Addr::from(array::<4>(bytes)))),
            Shape::Ipv6 => Value::Ip(IpAddr::V6(Ipv6Addr::from(array::<16>(bytes)))),
            Shape::Mac => Value::Mac(array::<6>(bytes)),
            Shape::Bytes(n) => Value::Bytes(take(*n).to_vec()),
            Shape::Array { elem, stride, len } => Value::Array(
                (0..*len)
                    .map(|i| elem.decode(bytes.get(i * stride..).unwrap_or_default()))
                    .collect(),
            ),
            Shape::Struct { members, .. } => Value::Struct(
                members
                    .iter()
                    .map(|m| {
                        let at = bytes.get(m.offset..).unwrap_or_default();
                        (m.name.clone(), m.shape.decode(at))
                    })
                    .collect(),
            ),
            Shape::Prefix { size } => {
                let len = int(take(4), false) as u32;
                let addr = bytes.get(4..*size).unwrap_or_default();
                let ip = if addr.len() == 16 {
                    IpAddr::V6(Ipv6Addr::from(array::<16>(addr)))
                } else {
                    IpAddr::V4(Ipv4Addr::from(array::<4>(addr)))
                };
                Value::Prefix(ip, len)
            }
        }
    }

    /// Encodes `value` into [`Shape::size`] bytes.
    pub fn encode(&self, value: &Value) -> Result<Vec<u8>, MapValueError> {
        let mut out = vec![0u8; self.size()];
        self.encode_into(value, &mut out)?;
        Ok(out)
    }

    fn encode_into(&self, value: &Value, out: &mut [u8]) -> Result<(), MapValueError> {
        let size = self.size();
        match (self, value) {
            (_, Value::Bytes(b)) if !matches!(self, Shape::Array { .. }) || b.len() == size => {
                if b.len() != size {
                    return fail(format!("{} bytes given; this needs {size}", b.len()));
                }
                out[..size].copy_from_slice(b);
            }
            (Shape::Int { size, signed }, Value::Int(n)) => put_int(out, *size, *signed, *n)?,
            (Shape::Enum { size, signed, .. }, Value::Int(n)) => put_int(out, *size, *signed, *n)?,
            (Shape::Enum { size, names, .. }, Value::Text(t)) => {
                let Some((_, v)) = names.iter().find(|(n, _)| n == t) else {
                    let all: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
                    return fail(format!(
                        "no constant `{t}`; the enum has: {}",
                        all.join(", ")
                    ));
                };
                out[..*size].copy_from_slice(&v.to_le_bytes()[..*size]);
            }
            (Shape::Ipv4 | Shape::Ipv6, Value::Int(n)) => {
                let ip = match (self, u128::try_from(*n)) {
                    (Shape::Ipv4, Ok(n)) => u32::try_from(n).ok().map(|n| Ipv4Addr::from(n).into()),
                    (_, Ok(n)) => Some(Ipv6Addr::from(n).into()),
                    _ => None,
                };
                let Some(ip) = ip else {
                    return fail(format!(
                        "{n} is no IPv{} address",
                        if size == 4 { 4 } else { 6 }
                    ));
                };
                self.encode_into(&Value::Ip(ip), out)?;
            }
            (Shape::Ipv4 | Shape::Ipv6 | Shape::Bytes(4 | 16), Value::Ip(ip)) => {
                let octets = ip_octets(*ip);
                if octets.len() != size {
                    return fail(format!("{ip} does not fit {size} bytes"));
                }
                out[..size].copy_from_slice(&octets);
            }
            (Shape::Ipv4 | Shape::Ipv6, Value::Text(t)) => {
                let ip: IpAddr = t.trim().parse().map_err(|_| MapValueError {
                    at: String::new(),
                    reason: format!("`{t}` is not an IP address"),
                })?;
                self.encode_into(&Value::Ip(ip), out)?;
            }
            (Shape::Mac, Value::Mac(m)) => out[..6].copy_from_slice(m),
            (Shape::Mac, Value::Text(t)) => {
                let bytes: Option<Vec<u8>> = t
                    .split(':')
                    .map(|b| u8::from_str_radix(b, 16).ok().filter(|_| b.len() == 2))
                    .collect();
                match bytes {
                    Some(b) if b.len() == 6 => out[..6].copy_from_slice(&b),
                    _ => return fail(format!("`{t}` is not a MAC address (aa:bb:cc:dd:ee:ff)")),
                }
            }
            (Shape::Prefix { size }, Value::Prefix(ip, len)) => {
                let octets = ip_octets(*ip);
                if 4 + octets.len() != *size {
                    return fail(format!(
                        "{ip}/{len}: this LPM key holds {} address bytes",
                        size - 4
                    ));
                }
                if *len as usize > octets.len() * 8 {
                    return fail(format!("{ip}/{len}: the prefix is longer than the address"));
                }
                out[..4].copy_from_slice(&len.to_le_bytes());
                out[4..*size].copy_from_slice(&octets);
            }
            (Shape::Prefix { .. }, Value::Ip(ip)) => {
                let len = if ip.is_ipv4() { 32 } else { 128 };
                self.encode_into(&Value::Prefix(*ip, len), out)?;
            }
            (Shape::Prefix { .. }, Value::Text(t)) => {
                let bad = || MapValueError {
                    at: String::new(),
                    reason: format!("an LPM key is ADDR/LEN, not `{t}`"),
                };
                let (addr, len) = t.trim().split_once('/').ok_or_else(bad)?;
                let ip = addr.parse().map_err(|_| bad())?;
                let len = len.parse().map_err(|_| bad())?;
                self.encode_into(&Value::Prefix(ip, len), out)?;
            }
            (Shape::Bytes(n @ (1 | 2 | 4 | 8)), Value::Int(v)) => {
                put_int(out, *n, true, *v).or_else(|_| put_int(out, *n, false, *v))?
            }
            (Shape::Bytes(n), Value::Array(items)) => {
                if items.len() != *n {
                    return fail(format!("{} items given; this is {n} bytes", items.len()));
                }
                for (i, item) in items.iter().enumerate() {
                    let byte = Shape::Int {
                        size: 1,
                        signed: false,
                    };
                    byte.encode_into(item, &mut out[i..])
                        .map_err(|e| nest(e, &format!("[{i}]")))?;
                }
            }
            (Shape::Int { .. } | Shape::Bytes(_), Value::Text(t)) => {
                let bytes =
                    crate::mapfmt::parse(t, size, maps::MapType::Hash, false).map_err(|e| {
                        MapValueError {
                            at: String::new(),
                            reason: e.0,
                        }
                    })?;
                out[..size].copy_from_slice(&bytes);
            }
            (Shape::Array { elem, stride, len }, Value::Array(items)) => {
                if items.len() != *len {
                    return fail(format!("{} items given; the array has {len}", items.len()));
                }
                for (i, item) in items.iter().enumerate() {
                    elem.encode_into(item, &mut out[i * stride..])
                        .map_err(|e| nest(e, &format!("[{i}]")))?;
                }
            }
            // Members in order: a struct key as a dict of tuples keys it.
            (Shape::Struct { members, .. }, Value::Array(items)) => {
                if items.len() != members.len() {
                    return fail(format!(
                        "{} items given; the struct has {} members",
                        items.len(),
                        members.len()
                    ));
                }
                for (m, v) in members.iter().zip(items) {
                    m.shape
                        .encode_into(v, &mut out[m.offset..m.offset + m.size])
                        .map_err(|e| nest(e, &m.name))?;
                }
            }
            (Shape::Struct { members, .. }, Value::Struct(given)) => {
                for (name, v) in given {
                    let Some(m) = members.iter().find(|m| &m.name == name) else {
                        let all: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
                        return fail(format!(
                            "no field `{name}`; the fields are: {}",
                            all.join(", ")
                        ));
                    };
                    m.shape
                        .encode_into(v, &mut out[m.offset..m.offset + m.size])
                        .map_err(|e| nest(e, name))?;
                }
            }
            (shape, v) => {
                return fail(format!("{} given; this is {}", v.kind(), shape.describe()));
            }
        }
        Ok(())
    }

    /// What the shape takes, for messages.
    pub fn describe(&self) -> String {
        match self {
            Shape::Int { size, signed } => {
                format!(
                    "a{} {size}-byte integer",
                    if *signed { " signed" } else { "n unsigned" }
                )
            }
            Shape::Enum { .. } => "an enum (a constant's name or an integer)".into(),
            Shape::Ipv4 => "an IPv4 address".into(),
            Shape::Ipv6 => "an IPv6 address".into(),
            Shape::Mac => "a MAC address".into(),
            Shape::Bytes(n) => format!("{n} bytes"),
            Shape::Array { len, .. } => format!("an array of {len} items"),
            Shape::Struct { members, .. } => {
                let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
                format!("a struct {{{}}}", names.join(", "))
            }
            Shape::Prefix { size } => format!(
                "an IPv{} prefix (ADDR/LEN)",
                if *size == 20 { 6 } else { 4 }
            ),
        }
    }
}

impl Value {
    /// What kind of value it is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytes",
            Value::Ip(_) => "an IP address",
            Value::Prefix(..) => "an IP prefix",
            Value::Mac(_) => "a MAC address",
            Value::Struct(_) => "a struct (dict)",
            Value::Array(_) => "an array",
        }
    }
}

fn nest(e: MapValueError, at: &str) -> MapValueError {
    let at = match (at.starts_with('['), e.at.is_empty(), e.at.starts_with('[')) {
        (_, true, _) => at.to_string(),
        (_, false, true) => format!("{at}{}", e.at),
        _ => format!("{at}.{}", e.at),
    };
    MapValueError {
        at,
        reason: e.reason,
    }
}

fn array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    let n = N.min(bytes.len());
    a[..n].copy_from_slice(&bytes[..n]);
    a
}

fn ip_octets(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// A little-endian integer of up to 8 bytes.
fn int(bytes: &[u8], signed: bool) -> i128 {
    let n = bytes.len().min(8);
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&bytes[..n]);
    let v = u64::from_le_bytes(b);
    if signed && n > 0 {
        let shift = 64 - 8 * n as u32;
        i128::from(((v << shift) as i64) >> shift)
    } else {
        i128::from(v)
    }
}

fn put_int(out: &mut [u8], size: usize, signed: bool, n: i128) -> Result<(), MapValueError> {
    let bits = 8 * size as u32;
    let fits = if signed {
        n >= -(1i128 << (bits - 1)) && n < (1i128 << (bits - 1))
    } else {
        n >= 0 && n < (1i128 << bits)
    };
    if !fits {
        return fail(format!(
            "{n} does not fit a{} {size}-byte integer",
            if signed { " signed" } else { "n unsigned" }
        ));
    }
    out[..size].copy_from_slice(&n.to_le_bytes()[..size]);
    Ok(())
}

/// The shape of type `ty` in member `field`, as [`crate::mapfmt`] formats it.
fn build(btf: &Btf, ty: TypeId, field: &str, depth: usize, left: &Cell<usize>) -> Option<Shape> {
    if depth > 8 || left.get() == 0 {
        return None;
    }
    left.set(left.get() - 1);
    let id = btf.skip_mods_and_typedefs(ty).ok()?;
    let t = btf.get(id)?;
    let addr_like = crate::mapfmt::addr_like(field);
    Some(match &t.kind {
        BtfKind::Struct { size: 16, .. } if t.name == "in6_addr" => Shape::Ipv6,
        BtfKind::Int { size: 4, .. } if addr_like && !field.contains("len") => Shape::Ipv4,
        BtfKind::Int { size, signed, .. } => match *size as usize {
            n @ (1 | 2 | 4 | 8) => Shape::Int {
                size: n,
                signed: *signed,
            },
            n => Shape::Bytes(n),
        },
        BtfKind::Enum {
            size,
            signed,
            values,
        } if matches!(size, 1 | 2 | 4 | 8) => Shape::Enum {
            size: *size as usize,
            signed: *signed,
            names: values.clone(),
        },
        BtfKind::Array { elem, nelems, .. } => {
            let stride = btf.size_of(*elem).ok()? as usize;
            let len = *nelems as usize;
            if stride == 1 {
                match len {
                    4 if addr_like => Shape::Ipv4,
                    16 if addr_like => Shape::Ipv6,
                    6 if field.contains("mac") => Shape::Mac,
                    n => Shape::Bytes(n),
                }
            } else {
                stride.checked_mul(len)?;
                Shape::Array {
                    elem: Box::new(build(btf, *elem, field, depth + 1, left)?),
                    stride,
                    len,
                }
            }
        }
        // A union is its first member.
        BtfKind::Union { members, .. } => {
            let m = members.first()?;
            build(btf, m.ty, &m.name, depth + 1, left)?
        }
        BtfKind::Struct { size, members } => {
            let mut out = Vec::new();
            for m in members {
                if m.bitfield_size != 0 || m.bit_offset % 8 != 0 {
                    return None;
                }
                let offset = (m.bit_offset / 8) as usize;
                let msize = btf.size_of(m.ty).ok()? as usize;
                let shape = build(btf, m.ty, &m.name, depth + 1, left)?;
                if m.name.starts_with("pad") {
                    continue;
                }
                if m.name.is_empty() {
                    match (union_first_name(btf, m.ty), shape) {
                        // An anonymous union: its first member, named.
                        (Some(name), shape) => out.push(Member {
                            name,
                            offset,
                            size: msize,
                            shape,
                        }),
                        // An anonymous struct: its members, as C reaches them.
                        (None, Shape::Struct { members, .. }) => {
                            out.extend(members.into_iter().map(|mut inner| {
                                inner.offset += offset;
                                inner
                            }))
                        }
                        _ => return None,
                    }
                    continue;
                }
                out.push(Member {
                    name: m.name.clone(),
                    offset,
                    size: msize,
                    shape,
                });
            }
            if out.iter().any(|m| m.offset + m.size > *size as usize) {
                return None;
            }
            Shape::Struct {
                size: *size as usize,
                members: out,
            }
        }
        // Global data: each variable by name.
        BtfKind::Datasec { size, vars } => {
            let mut out = Vec::new();
            for v in vars {
                let var = btf.get(v.ty)?;
                let BtfKind::Var { ty, .. } = var.kind else {
                    return None;
                };
                let (offset, vsize) = (v.offset as usize, v.size as usize);
                if offset + vsize > *size as usize {
                    return None;
                }
                let shape = match build(btf, ty, &var.name, depth + 1, left) {
                    Some(s) if s.size() == vsize => s,
                    _ => Shape::Bytes(vsize),
                };
                out.push(Member {
                    name: var.name.clone(),
                    offset,
                    size: vsize,
                    shape,
                });
            }
            Shape::Struct {
                size: *size as usize,
                members: out,
            }
        }
        BtfKind::Ptr(_) => Shape::Int {
            size: 8,
            signed: false,
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_and_refuse_what_does_not_fit() {
        let s = Shape::Int {
            size: 2,
            signed: false,
        };
        assert_eq!(s.encode(&Value::Int(258)).unwrap(), vec![2, 1]);
        assert_eq!(s.decode(&[2, 1]), Value::Int(258));
        let e = s.encode(&Value::Int(70000)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "70000 does not fit an unsigned 2-byte integer"
        );
        let e = s.encode(&Value::Bytes(vec![1])).unwrap_err();
        assert_eq!(e.to_string(), "1 bytes given; this needs 2");
    }

    #[test]
    fn prefixes_and_structs() {
        let p = Shape::Prefix { size: 8 };
        let key = p.encode(&Value::Text("10.0.0.0/8".into())).unwrap();
        assert_eq!(key, vec![8, 0, 0, 0, 10, 0, 0, 0]);
        assert_eq!(
            p.decode(&key),
            Value::Prefix("10.0.0.0".parse().unwrap(), 8)
        );
        assert!(p.encode(&Value::Text("10.0.0.0/40".into())).is_err());
        let s = Shape::Struct {
            size: 8,
            members: vec![
                Member {
                    name: "a".into(),
                    offset: 0,
                    size: 4,
                    shape: Shape::Ipv4,
                },
                Member {
                    name: "b".into(),
                    offset: 4,
                    size: 4,
                    shape: Shape::Int {
                        size: 4,
                        signed: true,
                    },
                },
            ],
        };
        let v = Value::Struct(vec![("b".into(), Value::Int(-1))]);
        assert_eq!(s.encode(&v).unwrap(), vec![0, 0, 0, 0, 255, 255, 255, 255]);
        let e = s
            .encode(&Value::Struct(vec![("c".into(), Value::Int(1))]))
            .unwrap_err();
        assert_eq!(e.to_string(), "no field `c`; the fields are: a, b");
        let e = s
            .encode(&Value::Struct(vec![("a".into(), Value::Text("x".into()))]))
            .unwrap_err();
        assert_eq!(e.to_string(), "a: `x` is not an IP address");
    }
}
