//! BPF Type Format: the `.BTF` section's types and strings.
//!
//! Every type reference is checked when the section is parsed, and every
//! walk through modifiers and typedefs is bounded, so malformed or hostile
//! BTF (dangling ids, reference loops) is an error, never a hang or panic.

use crate::reader::{Reader, cstr};

/// Why `.BTF` cannot be read.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum BtfError {
    #[error(".BTF: {0}")]
    Malformed(String),
    #[error(".BTF type {id} ({what}) refers to type {target}, but there are only {count} types")]
    Dangling {
        id: u32,
        what: &'static str,
        target: u32,
        count: usize,
    },
    #[error(".BTF type {0} is part of a reference loop")]
    Loop(u32),
    /// A variable of DATASEC `datasec` has no symbol to give its offset.
    #[error("DATASEC {datasec}: no symbol for variable `{var}`")]
    NoSymbol { datasec: String, var: String },
}

/// A BTF type id; 0 is `void`.
pub type TypeId = u32;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub ty: TypeId,
    /// Offset from the start of the struct, in bits.
    pub bit_offset: u32,
    /// Width of a bitfield, 0 for a plain member.
    pub bitfield_size: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarSecinfo {
    pub ty: TypeId,
    pub offset: u32,
    pub size: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BtfKind {
    Void,
    Int {
        size: u32,
        signed: bool,
        bits: u32,
        offset: u32,
    },
    Ptr(TypeId),
    Array {
        elem: TypeId,
        index: TypeId,
        nelems: u32,
    },
    Struct {
        size: u32,
        members: Vec<Member>,
    },
    Union {
        size: u32,
        members: Vec<Member>,
    },
    /// ENUM and ENUM64.
    Enum {
        size: u32,
        signed: bool,
        values: Vec<(String, i64)>,
    },
    Fwd {
        union: bool,
    },
    Typedef(TypeId),
    Volatile(TypeId),
    Const(TypeId),
    Restrict(TypeId),
    Func {
        proto: TypeId,
        linkage: u32,
    },
    FuncProto {
        ret: TypeId,
        params: Vec<(String, TypeId)>,
    },
    Var {
        ty: TypeId,
        linkage: u32,
    },
    Datasec {
        size: u32,
        vars: Vec<VarSecinfo>,
    },
    Float {
        size: u32,
    },
    DeclTag {
        ty: TypeId,
        component: i32,
    },
    TypeTag(TypeId),
}

impl BtfKind {
    pub fn name(&self) -> &'static str {
        match self {
            BtfKind::Void => "void",
            BtfKind::Int { .. } => "int",
            BtfKind::Ptr(_) => "ptr",
            BtfKind::Array { .. } => "array",
            BtfKind::Struct { .. } => "struct",
            BtfKind::Union { .. } => "union",
            BtfKind::Enum { .. } => "enum",
            BtfKind::Fwd { .. } => "fwd",
            BtfKind::Typedef(_) => "typedef",
            BtfKind::Volatile(_) => "volatile",
            BtfKind::Const(_) => "const",
            BtfKind::Restrict(_) => "restrict",
            BtfKind::Func { .. } => "func",
            BtfKind::FuncProto { .. } => "func_proto",
            BtfKind::Var { .. } => "var",
            BtfKind::Datasec { .. } => "datasec",
            BtfKind::Float { .. } => "float",
            BtfKind::DeclTag { .. } => "decl_tag",
            BtfKind::TypeTag(_) => "type_tag",
        }
    }

    /// Types this one refers to (validation walks them; the kernel crate
    /// encodes the types a map's BTF reaches through them).
    pub fn refs(&self) -> Vec<TypeId> {
        match self {
            BtfKind::Ptr(t)
            | BtfKind::Typedef(t)
            | BtfKind::Volatile(t)
            | BtfKind::Const(t)
            | BtfKind::Restrict(t)
            | BtfKind::TypeTag(t) => vec![*t],
            BtfKind::Array { elem, index, .. } => vec![*elem, *index],
            BtfKind::Struct { members, .. } | BtfKind::Union { members, .. } => {
                members.iter().map(|m| m.ty).collect()
            }
            BtfKind::Func { proto, .. } => vec![*proto],
            BtfKind::FuncProto { ret, params } => std::iter::once(*ret)
                .chain(params.iter().map(|p| p.1))
                .collect(),
            BtfKind::Var { ty, .. } | BtfKind::DeclTag { ty, .. } => vec![*ty],
            BtfKind::Datasec { vars, .. } => vars.iter().map(|v| v.ty).collect(),
            BtfKind::Void
            | BtfKind::Int { .. }
            | BtfKind::Enum { .. }
            | BtfKind::Fwd { .. }
            | BtfKind::Float { .. } => vec![],
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Type {
    pub name: String,
    pub kind: BtfKind,
}

/// Parsed `.BTF`.
#[derive(Clone, Debug)]
pub struct Btf {
    types: Vec<Type>,
}

/// How many modifier/typedef links a walk may follow before it is a loop.
const MAX_CHAIN: usize = 64;

impl Btf {
    pub fn parse(data: &[u8]) -> Result<Btf, BtfError> {
        let bad = |m: String| BtfError::Malformed(m);
        let mut r = Reader::new(data);
        let short = |e: crate::reader::Short| {
            bad(format!(
                "truncated header (needs {} bytes at {})",
                e.want, e.at
            ))
        };
        let magic = r.u16().map_err(short)?;
        if magic != 0xeb9f {
            return Err(bad(format!(
                "bad magic {magic:#06x} (expected 0xeb9f; big-endian BTF is not supported)"
            )));
        }
        let version = r.u8().map_err(short)?;
        if version != 1 {
            return Err(bad(format!("unsupported version {version}")));
        }
        let _flags = r.u8().map_err(short)?;
        let hdr_len = r.u32().map_err(short)? as usize;
        let type_off = r.u32().map_err(short)? as usize;
        let type_len = r.u32().map_err(short)? as usize;
        let str_off = r.u32().map_err(short)? as usize;
        let str_len = r.u32().map_err(short)? as usize;
        let section = |off: usize, len: usize, what: &str| {
            hdr_len
                .checked_add(off)
                .and_then(|s| s.checked_add(len).map(|e| (s, e)))
                .filter(|&(_, e)| e <= data.len())
                .map(|(s, e)| &data[s..e])
                .ok_or_else(|| {
                    bad(format!(
                        "{what} section ({len} bytes at {off}) runs past the end ({} bytes)",
                        data.len()
                    ))
                })
        };
        let strings = section(str_off, str_len, "string")?;
        let type_data = section(type_off, type_len, "type")?;

        let name_at = |off: u32| -> Result<String, BtfError> {
            cstr(strings, off as usize)
                .map(str::to_string)
                .ok_or_else(|| {
                    bad(format!(
                        "name offset {off} is outside the string section or not valid UTF-8"
                    ))
                })
        };

        let mut types = vec![Type {
            name: String::new(),
            kind: BtfKind::Void,
        }];
        let mut r = Reader::new(type_data);
        while r.remaining() > 0 {
            let id = types.len();
            let at = r.pos();
            let trunc = |_| bad(format!("type {id} at byte {at} is truncated"));
            let name_off = r.u32().map_err(trunc)?;
            let info = r.u32().map_err(trunc)?;
            let size_or_type = r.u32().map_err(trunc)?;
            let vlen = (info & 0xffff) as usize;
            let kind_flag = info >> 31 == 1;
            let kind_id = (info >> 24) & 0x1f;
            let members = |r: &mut Reader| -> Result<Vec<Member>, BtfError> {
                (0..vlen)
                    .map(|_| {
                        let name = name_at(r.u32().map_err(trunc)?)?;
                        let ty = r.u32().map_err(trunc)?;
                        let off = r.u32().map_err(trunc)?;
                        let (bit_offset, bitfield_size) = if kind_flag {
                            (off & 0xff_ffff, off >> 24)
                        } else {
                            (off, 0)
                        };
                        Ok(Member {
                            name,
                            ty,
                            bit_offset,
                            bitfield_size,
                        })
                    })
                    .collect()
            };
            let kind = match kind_id {
                1 => {
                    let enc = r.u32().map_err(trunc)?;
                    BtfKind::Int {
                        size: size_or_type,
                        signed: (enc >> 24) & 1 != 0,
                        offset: (enc >> 16) & 0xff,
                        bits: enc & 0xff,
                    }
                }
                2 => BtfKind::Ptr(size_or_type),
                3 => BtfKind::Array {
                    elem: r.u32().map_err(trunc)?,
                    index: r.u32().map_err(trunc)?,
                    nelems: r.u32().map_err(trunc)?,
                },
                4 => BtfKind::Struct {
                    size: size_or_type,
                    members: members(&mut r)?,
                },
                5 => BtfKind::Union {
                    size: size_or_type,
                    members: members(&mut r)?,
                },
                6 => BtfKind::Enum {
                    size: size_or_type,
                    signed: kind_flag,
                    values: (0..vlen)
                        .map(|_| {
                            Ok((
                                name_at(r.u32().map_err(trunc)?)?,
                                i64::from(r.i32().map_err(trunc)?),
                            ))
                        })
                        .collect::<Result<_, BtfError>>()?,
                },
                7 => BtfKind::Fwd { union: kind_flag },
                8 => BtfKind::Typedef(size_or_type),
                9 => BtfKind::Volatile(size_or_type),
                10 => BtfKind::Const(size_or_type),
                11 => BtfKind::Restrict(size_or_type),
                12 => BtfKind::Func {
                    proto: size_or_type,
                    linkage: vlen as u32,
                },
                13 => BtfKind::FuncProto {
                    ret: size_or_type,
                    params: (0..vlen)
                        .map(|_| Ok((name_at(r.u32().map_err(trunc)?)?, r.u32().map_err(trunc)?)))
                        .collect::<Result<_, BtfError>>()?,
                },
                14 => BtfKind::Var {
                    ty: size_or_type,
                    linkage: r.u32().map_err(trunc)?,
                },
                15 => BtfKind::Datasec {
                    size: size_or_type,
                    vars: (0..vlen)
                        .map(|_| {
                            Ok(VarSecinfo {
                                ty: r.u32().map_err(trunc)?,
                                offset: r.u32().map_err(trunc)?,
                                size: r.u32().map_err(trunc)?,
                            })
                        })
                        .collect::<Result<_, BtfError>>()?,
                },
                16 => BtfKind::Float { size: size_or_type },
                17 => BtfKind::DeclTag {
                    ty: size_or_type,
                    component: r.i32().map_err(trunc)?,
                },
                18 => BtfKind::TypeTag(size_or_type),
                19 => BtfKind::Enum {
                    size: size_or_type,
                    signed: kind_flag,
                    values: (0..vlen)
                        .map(|_| {
                            let name = name_at(r.u32().map_err(trunc)?)?;
                            let lo = r.u32().map_err(trunc)?;
                            let hi = r.u32().map_err(trunc)?;
                            Ok((name, ((u64::from(hi) << 32) | u64::from(lo)) as i64))
                        })
                        .collect::<Result<_, BtfError>>()?,
                },
                k => return Err(bad(format!("type {id} has unknown kind {k}"))),
            };
            types.push(Type {
                name: name_at(name_off)?,
                kind,
            });
        }
        let btf = Btf { types };
        btf.validate()?;
        Ok(btf)
    }

    fn validate(&self) -> Result<(), BtfError> {
        let count = self.types.len();
        for (id, t) in self.types.iter().enumerate() {
            for target in t.kind.refs() {
                if target as usize >= count {
                    return Err(BtfError::Dangling {
                        id: id as u32,
                        what: t.kind.name(),
                        target,
                        count,
                    });
                }
            }
        }
        // Every chain of modifiers and typedefs must end.
        for id in 0..count as u32 {
            self.skip_mods_and_typedefs(id)?;
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.len() <= 1
    }

    pub fn get(&self, id: TypeId) -> Option<&Type> {
        self.types.get(id as usize)
    }

    /// Type `id`, which the parser has checked to exist.
    pub fn ty(&self, id: TypeId) -> &Type {
        &self.types[id as usize]
    }

    pub fn types(&self) -> impl Iterator<Item = (TypeId, &Type)> {
        self.types.iter().enumerate().map(|(i, t)| (i as TypeId, t))
    }

    /// Fills in what clang leaves zero in an object's DATASEC `name`: its
    /// size, and each variable's offset, which `offset_of` finds from the
    /// symbol table (as libbpf does).
    pub fn fixup_datasec(
        &mut self,
        name: &str,
        size: u32,
        offset_of: impl Fn(&str) -> Option<u32>,
    ) -> Result<(), BtfError> {
        let Some(id) = self.find(name, "datasec") else {
            return Ok(());
        };
        let names: Vec<String> = match &self.types[id as usize].kind {
            BtfKind::Datasec { vars, .. } => vars
                .iter()
                .map(|v| self.types[v.ty as usize].name.clone())
                .collect(),
            _ => unreachable!("found as a datasec"),
        };
        let offsets: Vec<u32> = names
            .iter()
            .map(|n| {
                offset_of(n).ok_or_else(|| BtfError::NoSymbol {
                    datasec: name.to_string(),
                    var: n.clone(),
                })
            })
            .collect::<Result<_, _>>()?;
        if let BtfKind::Datasec { size: s, vars } = &mut self.types[id as usize].kind {
            *s = size;
            for (v, off) in vars.iter_mut().zip(offsets) {
                v.offset = off;
            }
        }
        Ok(())
    }

    /// Follows const/volatile/restrict/type tags and typedefs.
    pub fn skip_mods_and_typedefs(&self, mut id: TypeId) -> Result<TypeId, BtfError> {
        for _ in 0..MAX_CHAIN {
            match self.ty(id).kind {
                BtfKind::Typedef(t)
                | BtfKind::Volatile(t)
                | BtfKind::Const(t)
                | BtfKind::Restrict(t)
                | BtfKind::TypeTag(t) => id = t,
                _ => return Ok(id),
            }
        }
        Err(BtfError::Loop(id))
    }

    /// Size in bytes of a type (pointers are 8 bytes).
    pub fn size_of(&self, id: TypeId) -> Result<u64, BtfError> {
        self.size_of_depth(id, 0)
    }

    fn size_of_depth(&self, id: TypeId, depth: usize) -> Result<u64, BtfError> {
        if depth > MAX_CHAIN {
            return Err(BtfError::Loop(id));
        }
        let id = self.skip_mods_and_typedefs(id)?;
        Ok(match &self.ty(id).kind {
            BtfKind::Int { size, .. }
            | BtfKind::Struct { size, .. }
            | BtfKind::Union { size, .. }
            | BtfKind::Enum { size, .. }
            | BtfKind::Datasec { size, .. }
            | BtfKind::Float { size } => u64::from(*size),
            BtfKind::Ptr(_) => 8,
            BtfKind::Array { elem, nelems, .. } => self
                .size_of_depth(*elem, depth + 1)?
                .saturating_mul(u64::from(*nelems)),
            BtfKind::Var { ty, .. } => self.size_of_depth(*ty, depth + 1)?,
            _ => 0,
        })
    }

    /// Where the `struct bpf_spin_lock` of a map value of type `id` is, in
    /// bytes: a member of the value's struct, or a variable of a global
    /// data section (`.data.A`), as the kernel looks for it.
    pub fn spin_lock_offset(&self, id: TypeId) -> Option<u32> {
        let id = self.skip_mods_and_typedefs(id).ok()?;
        let is_lock = |ty: TypeId| {
            self.skip_mods_and_typedefs(ty)
                .ok()
                .and_then(|t| self.get(t))
                .is_some_and(|t| {
                    t.name == "bpf_spin_lock" && matches!(t.kind, BtfKind::Struct { .. })
                })
        };
        match &self.get(id)?.kind {
            BtfKind::Struct { members, .. } => members
                .iter()
                .find(|m| is_lock(m.ty))
                .map(|m| m.bit_offset / 8),
            BtfKind::Datasec { vars, .. } => vars
                .iter()
                .find(|v| match self.get(v.ty).map(|t| &t.kind) {
                    Some(BtfKind::Var { ty, .. }) => is_lock(*ty),
                    _ => false,
                })
                .map(|v| v.offset),
            _ => None,
        }
    }

    /// The first type named `name` of the kind `kind_name`.
    pub fn find(&self, name: &str, kind_name: &str) -> Option<TypeId> {
        self.types()
            .find(|(_, t)| t.name == name && t.kind.name() == kind_name)
            .map(|(id, _)| id)
    }

    /// A readable name such as `struct iphdr`, `u32` or `char[16]`.
    pub fn display(&self, id: TypeId) -> String {
        self.display_depth(id, 0)
    }

    fn display_depth(&self, id: TypeId, depth: usize) -> String {
        if depth > MAX_CHAIN {
            return "...".into();
        }
        let t = self.ty(id);
        match &t.kind {
            BtfKind::Void => "void".into(),
            BtfKind::Struct { .. } => format!("struct {}", t.name),
            BtfKind::Union { .. } => format!("union {}", t.name),
            BtfKind::Enum { .. } => format!("enum {}", t.name),
            BtfKind::Ptr(to) => format!("{} *", self.display_depth(*to, depth + 1)),
            BtfKind::Array { elem, nelems, .. } => {
                format!("{}[{nelems}]", self.display_depth(*elem, depth + 1))
            }
            BtfKind::Const(to) => format!("const {}", self.display_depth(*to, depth + 1)),
            BtfKind::Volatile(to) => format!("volatile {}", self.display_depth(*to, depth + 1)),
            _ if !t.name.is_empty() => t.name.clone(),
            k => k.name().into(),
        }
    }
}
