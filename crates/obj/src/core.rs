//! CO-RE relocations: instructions compiled against the types the program
//! saw (local BTF) are adjusted to the types of the kernel they run on
//! (target BTF), by name, as libbpf does.

use std::collections::HashMap;
use std::sync::OnceLock;

use isa::RawInsn;

use crate::btf::{Btf, BtfError, BtfKind, TypeId};
use crate::btf_ext::CoreRelo;

/// Why a file gives no CO-RE target types (`--btf FILE`); each names the
/// file (`origin`).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum CoreTargetError {
    /// The file looks like ELF but does not parse as it.
    #[error("{origin}: {reason}")]
    Elf { origin: String, reason: String },
    #[error("{origin} has no .BTF section (was it built with -g?)")]
    NoBtfSection { origin: String },
    /// The `.BTF` section's bytes cannot be read from the file.
    #[error("{origin}: .BTF: {reason}")]
    Section { origin: String, reason: String },
    #[error("{origin} is neither raw BTF nor an ELF object")]
    NotBtf { origin: String },
    #[error("{origin}: {source}")]
    Btf { origin: String, source: BtfError },
}

/// Why one CO-RE relocation cannot be resolved or applied.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub(crate) enum CoreError {
    #[error(transparent)]
    Btf(#[from] BtfError),
    #[error("bad access string `{0}`")]
    BadAccess(String),
    #[error("empty access string")]
    EmptyAccess,
    #[error("the access overflows")]
    Overflow,
    #[error("member {index} of {ty} does not exist")]
    NoMember { index: u32, ty: String },
    #[error("access into {0}, which has no members")]
    NoMembers(String),
    #[error("the bitfield cannot be read with one 64-bit load")]
    WideBitfield,
    #[error("a field of {0} bytes has no 64-bit shift")]
    NoShift(u64),
    #[error("relocation kind {0} is not a field kind")]
    NotFieldKind(u32),
    #[error("type {0} does not exist")]
    NoType(u32),
    /// `what` (a field, "type", an enumerator) matches several target
    /// types with different values.
    #[error("{what} is ambiguous: several kernel types match with different results")]
    Ambiguous { what: String },
    #[error("an enum relocation on a type that is not an enum")]
    NotEnum,
    #[error("enumerator {0} does not exist")]
    NoEnumerator(usize),
    #[error("unknown CO-RE relocation kind {0}")]
    UnknownKind(u32),
    /// The instruction does not hold the value the relocation starts from.
    #[error("the instruction holds {have}, not the {expected} its relocation expects")]
    Mismatch { have: i64, expected: u64 },
    #[error("{0} does not fit an immediate")]
    Immediate(u64),
    #[error("offset {0} does not fit 16 bits")]
    Offset(u64),
    #[error("field of {0} bytes cannot be loaded")]
    LoadSize(u32),
    #[error("cannot relocate opcode {0:#04x}")]
    Opcode(u8),
}

/// The types relocations are resolved against, indexed by essential name.
#[derive(Debug)]
pub struct CoreTarget {
    btf: Btf,
    by_name: HashMap<String, Vec<TypeId>>,
    origin: String,
}

impl CoreTarget {
    pub fn new(btf: Btf, origin: impl Into<String>) -> CoreTarget {
        let mut by_name: HashMap<String, Vec<TypeId>> = HashMap::new();
        for (id, t) in btf.types() {
            if !t.name.is_empty() {
                by_name
                    .entry(essential(&t.name).to_string())
                    .or_default()
                    .push(id);
            }
        }
        CoreTarget {
            btf,
            by_name,
            origin: origin.into(),
        }
    }

    /// The running kernel's BTF (`/sys/kernel/btf/vmlinux`), read once;
    /// `None` when the kernel has none or it cannot be read.
    pub fn kernel() -> Option<&'static CoreTarget> {
        static KERNEL: OnceLock<Option<CoreTarget>> = OnceLock::new();
        KERNEL
            .get_or_init(|| {
                let path = "/sys/kernel/btf/vmlinux";
                let data = std::fs::read(path).ok()?;
                Btf::parse(&data).ok().map(|b| CoreTarget::new(b, path))
            })
            .as_ref()
    }

    /// Types from a file's bytes: raw BTF (as in `/sys/kernel/btf/`) or
    /// an ELF object with a `.BTF` section.
    pub fn from_bytes(data: &[u8], origin: &str) -> Result<CoreTarget, CoreTargetError> {
        let origin_ = || origin.to_string();
        let bytes = if data.starts_with(&[0x9f, 0xeb]) {
            data
        } else if crate::is_elf(data) {
            use object::{Object as _, ObjectSection as _};
            let file = object::File::parse(data).map_err(|e| CoreTargetError::Elf {
                origin: origin_(),
                reason: e.to_string(),
            })?;
            let section = file
                .section_by_name(".BTF")
                .ok_or_else(|| CoreTargetError::NoBtfSection { origin: origin_() })?;
            section.data().map_err(|e| CoreTargetError::Section {
                origin: origin_(),
                reason: e.to_string(),
            })?
        } else {
            return Err(CoreTargetError::NotBtf { origin: origin_() });
        };
        let btf = Btf::parse(bytes).map_err(|source| CoreTargetError::Btf {
            origin: origin_(),
            source,
        })?;
        Ok(CoreTarget::new(btf, origin))
    }

    /// The Linux UAPI context and header types (`xdp_md`, `__sk_buff`,
    /// `ethhdr`, `iphdr`, `tcphdr`...), built into sluice: the target when
    /// the kernel has no BTF.
    pub fn bundled() -> &'static CoreTarget {
        static BUNDLED: OnceLock<CoreTarget> = OnceLock::new();
        BUNDLED.get_or_init(|| {
            let bytes = include_bytes!(concat!(env!("OUT_DIR"), "/uapi_types.o"));
            CoreTarget::from_bytes(bytes, "sluice's bundled UAPI types")
                .expect("the bundled BTF was built by build.rs")
        })
    }

    /// The target `Object::parse` uses: the kernel's BTF, else the bundled
    /// UAPI types.
    pub fn default_target() -> &'static CoreTarget {
        CoreTarget::kernel().unwrap_or_else(CoreTarget::bundled)
    }

    pub fn btf(&self) -> &Btf {
        &self.btf
    }

    /// Where the types came from (a path, or "the object's own BTF").
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

/// Relocation kinds (`enum bpf_core_relo_kind`).
pub mod kind {
    pub const FIELD_BYTE_OFFSET: u32 = 0;
    pub const FIELD_BYTE_SIZE: u32 = 1;
    pub const FIELD_EXISTS: u32 = 2;
    pub const FIELD_SIGNED: u32 = 3;
    pub const FIELD_LSHIFT_U64: u32 = 4;
    pub const FIELD_RSHIFT_U64: u32 = 5;
    pub const TYPE_ID_LOCAL: u32 = 6;
    pub const TYPE_ID_TARGET: u32 = 7;
    pub const TYPE_EXISTS: u32 = 8;
    pub const TYPE_SIZE: u32 = 9;
    pub const ENUMVAL_EXISTS: u32 = 10;
    pub const ENUMVAL_VALUE: u32 = 11;
    pub const TYPE_MATCHES: u32 = 12;
}

/// The value an instruction must have (`orig`) and gets (`new`); `None`
/// for `new` means the relocation failed and the instruction is poisoned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    pub orig: u64,
    pub new: Option<u64>,
    /// Field sizes, for loads whose width must follow the field (0 when
    /// the width stays: bitfields, types, enums).
    pub orig_size: u32,
    pub new_size: u32,
    /// Whether the instruction must hold `orig` (compilers and libbpf may
    /// disagree on a bitfield's load, so bitfields are not checked).
    pub validate: bool,
}

/// Strips a `___flavor` suffix (`task_struct___old` is `task_struct`).
fn essential(name: &str) -> &str {
    name.find("___").map_or(name, |i| &name[..i])
}

fn access_spec(s: &str) -> Result<Vec<u32>, CoreError> {
    s.split(':')
        .map(|p| {
            p.parse::<u32>()
                .map_err(|_| CoreError::BadAccess(s.to_string()))
        })
        .collect()
}

/// `n` elements of `size` bytes, in bits.
fn bits(n: u32, size: u64) -> Option<u64> {
    u64::from(n).checked_mul(size)?.checked_mul(8)
}

/// A field reached by an access path: bit offset, size, type, bitfield width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    bit_offset: u64,
    byte_size: u32,
    ty: TypeId,
    bitfield: u32,
}

/// Walks `path` (after the leading array index) through local types.
fn walk_local(
    btf: &Btf,
    root: TypeId,
    path: &[u32],
) -> Result<(Field, Vec<Option<String>>), CoreError> {
    let (first, rest) = path.split_first().ok_or(CoreError::EmptyAccess)?;
    let root_size = btf.size_of(root)?;
    let mut field = Field {
        bit_offset: bits(*first, root_size).ok_or(CoreError::Overflow)?,
        byte_size: root_size as u32,
        ty: root,
        bitfield: 0,
    };
    let mut names = Vec::new();
    for &idx in rest {
        let t = btf.skip_mods_and_typedefs(field.ty)?;
        match &btf.ty(t).kind {
            BtfKind::Struct { members, .. } | BtfKind::Union { members, .. } => {
                let m = members
                    .get(idx as usize)
                    .ok_or_else(|| CoreError::NoMember {
                        index: idx,
                        ty: btf.display(t),
                    })?;
                field.bit_offset = field
                    .bit_offset
                    .checked_add(u64::from(m.bit_offset))
                    .ok_or(CoreError::Overflow)?;
                field.ty = m.ty;
                field.bitfield = m.bitfield_size;
                field.byte_size = btf.size_of(m.ty)? as u32;
                names.push(Some(m.name.clone()));
            }
            BtfKind::Array { elem, .. } => {
                let esize = btf.size_of(*elem)?;
                field.bit_offset = bits(idx, esize)
                    .and_then(|b| field.bit_offset.checked_add(b))
                    .ok_or(CoreError::Overflow)?;
                field.ty = *elem;
                field.byte_size = esize as u32;
                field.bitfield = 0;
                names.push(None);
            }
            _ => {
                return Err(CoreError::NoMembers(btf.display(t)));
            }
        }
    }
    Ok((field, names))
}

/// Finds member `name` of struct/union `t`, looking into anonymous members.
fn find_member(btf: &Btf, t: TypeId, name: &str, depth: usize) -> Option<(u64, TypeId, u32)> {
    if depth > 8 {
        return None;
    }
    let t = btf.skip_mods_and_typedefs(t).ok()?;
    let (BtfKind::Struct { members, .. } | BtfKind::Union { members, .. }) = &btf.ty(t).kind else {
        return None;
    };
    for m in members {
        if m.name == name {
            return Some((u64::from(m.bit_offset), m.ty, m.bitfield_size));
        }
        if m.name.is_empty()
            && let Some((off, ty, bf)) = find_member(btf, m.ty, name, depth + 1)
        {
            return Some((u64::from(m.bit_offset) + off, ty, bf));
        }
    }
    None
}

/// Whether two field types can stand for each other (libbpf's rules:
/// same kind family; structs and enums need not match in size).
fn compatible(local: &Btf, l: TypeId, target: &Btf, t: TypeId) -> bool {
    let (Ok(l), Ok(t)) = (
        local.skip_mods_and_typedefs(l),
        target.skip_mods_and_typedefs(t),
    ) else {
        return false;
    };
    matches!(
        (&local.ty(l).kind, &target.ty(t).kind),
        (
            BtfKind::Int { .. } | BtfKind::Enum { .. },
            BtfKind::Int { .. } | BtfKind::Enum { .. }
        ) | (BtfKind::Ptr(_), BtfKind::Ptr(_))
            | (BtfKind::Struct { .. }, BtfKind::Struct { .. })
            | (BtfKind::Union { .. }, BtfKind::Union { .. })
            | (BtfKind::Array { .. }, BtfKind::Array { .. })
            | (BtfKind::Float { .. }, BtfKind::Float { .. })
            | (BtfKind::Fwd { .. }, _)
            | (_, BtfKind::Fwd { .. })
    )
}

/// Walks the same path by member names through a target candidate.
fn walk_target(
    local: &Btf,
    root: TypeId,
    path: &[u32],
    names: &[Option<String>],
    target: &Btf,
    cand: TypeId,
) -> Option<Field> {
    let size = target.size_of(cand).ok()?;
    let mut field = Field {
        bit_offset: bits(path[0], size)?,
        byte_size: size as u32,
        ty: cand,
        bitfield: 0,
    };
    let mut local_ty = root;
    for (i, name) in names.iter().enumerate() {
        let idx = path[i + 1];
        let lt = local.skip_mods_and_typedefs(local_ty).ok()?;
        local_ty = match (&local.ty(lt).kind, name) {
            (BtfKind::Struct { members, .. } | BtfKind::Union { members, .. }, Some(_)) => {
                members.get(idx as usize)?.ty
            }
            (BtfKind::Array { elem, .. }, None) => *elem,
            _ => return None,
        };
        match name {
            // An anonymous struct or union is no step of its own: the next
            // member is looked up through it (and through the target's).
            Some(n) if n.is_empty() => {}
            Some(n) => {
                let (off, ty, bf) = find_member(target, field.ty, n, 0)?;
                field.bit_offset = field.bit_offset.checked_add(off)?;
                field.ty = ty;
                field.bitfield = bf;
                field.byte_size = target.size_of(ty).ok()? as u32;
            }
            None => {
                let t = target.skip_mods_and_typedefs(field.ty).ok()?;
                let BtfKind::Array { elem, nelems, .. } = target.ty(t).kind else {
                    return None;
                };
                if idx >= nelems && nelems != 0 {
                    return None;
                }
                let esize = target.size_of(elem).ok()?;
                field.bit_offset = field.bit_offset.checked_add(bits(idx, esize)?)?;
                field.ty = elem;
                field.byte_size = esize as u32;
                field.bitfield = 0;
            }
        }
    }
    compatible(local, local_ty, target, field.ty).then_some(field)
}

/// Target types that may stand for local type `local_id`: same essential
/// name, same kind.
fn candidates(local: &Btf, local_id: TypeId, target: &CoreTarget) -> Vec<TypeId> {
    let Ok(l) = local.skip_mods_and_typedefs(local_id) else {
        return Vec::new();
    };
    let lt = local.ty(l);
    let name = essential(&lt.name);
    if name.is_empty() {
        return Vec::new();
    }
    let same_kind = |id: &&TypeId| {
        std::mem::discriminant(&target.btf.ty(**id).kind) == std::mem::discriminant(&lt.kind)
    };
    target
        .by_name
        .get(name)
        .map(|ids| ids.iter().filter(same_kind).copied().collect())
        .unwrap_or_default()
}

/// The value a field relocation computes for a field.
fn field_value(btf: &Btf, f: Field, kind: u32) -> Result<u64, CoreError> {
    let signed = match &btf.ty(btf.skip_mods_and_typedefs(f.ty)?).kind {
        BtfKind::Int { signed, .. } | BtfKind::Enum { signed, .. } => *signed,
        _ => false,
    };
    let (byte_off, byte_size) = if f.bitfield != 0 {
        // A bitfield is read through its underlying integer, aligned to
        // its size, widened until the read covers every bit (libbpf's rule).
        let mut sz = u64::from(f.byte_size.max(1));
        let mut off = f.bit_offset / 8 / sz * sz;
        while f.bit_offset.saturating_add(u64::from(f.bitfield)) - off * 8 > sz * 8 {
            if sz >= 8 {
                return Err(CoreError::WideBitfield);
            }
            sz *= 2;
            off = f.bit_offset / 8 / sz * sz;
        }
        (off, sz)
    } else {
        (f.bit_offset / 8, u64::from(f.byte_size))
    };
    let bit_size = if f.bitfield != 0 {
        u64::from(f.bitfield)
    } else {
        byte_size * 8
    };
    Ok(match kind {
        kind::FIELD_BYTE_OFFSET => byte_off,
        kind::FIELD_BYTE_SIZE => byte_size,
        kind::FIELD_EXISTS => 1,
        kind::FIELD_SIGNED => u64::from(signed),
        kind::FIELD_LSHIFT_U64 | kind::FIELD_RSHIFT_U64 => {
            let shift = if kind == kind::FIELD_LSHIFT_U64 {
                f.bit_offset
                    .checked_add(bit_size)
                    .and_then(|e| e.checked_sub(byte_off * 8))
            } else {
                Some(bit_size)
            };
            shift
                .and_then(|s| 64u64.checked_sub(s))
                .ok_or(CoreError::NoShift(byte_size))?
        }
        k => return Err(CoreError::NotFieldKind(k)),
    })
}

/// Resolves one relocation against `target`.
pub(crate) fn resolve(
    local: &Btf,
    core_target: &CoreTarget,
    r: &CoreRelo,
) -> Result<Resolution, CoreError> {
    if local.get(r.type_id).is_none() {
        return Err(CoreError::NoType(r.type_id));
    }
    let path = access_spec(&r.access)?;
    let cands = candidates(local, r.type_id, core_target);
    let target = &core_target.btf;
    let unique = |values: Vec<(u64, u32)>, what: &str| -> Result<Option<(u64, u32)>, CoreError> {
        match values.as_slice() {
            [] => Ok(None),
            [first, rest @ ..] if rest.iter().all(|v| v == first) => Ok(Some(*first)),
            _ => Err(CoreError::Ambiguous {
                what: what.to_string(),
            }),
        }
    };
    match r.kind {
        kind::FIELD_BYTE_OFFSET..=kind::FIELD_RSHIFT_U64 => {
            let (lf, names) = walk_local(local, r.type_id, &path)?;
            let orig = field_value(local, lf, r.kind)?;
            let found: Vec<(u64, u32)> = cands
                .iter()
                .filter_map(|&c| walk_target(local, r.type_id, &path, &names, target, c))
                .map(|f| field_value(target, f, r.kind).map(|v| (v, f.byte_size)))
                .collect::<Result<_, _>>()?;
            let new = unique(found, &format!("field {}", r.access))?;
            // Bitfields keep their load width; only signedness is checked.
            let bitfield = lf.bitfield != 0;
            let validate = !bitfield || r.kind == kind::FIELD_SIGNED;
            let size = |sz: u32| if bitfield { 0 } else { sz };
            let (new, new_size) = match (r.kind, new) {
                (kind::FIELD_EXISTS, None) => (Some(0), lf.byte_size),
                (_, Some((v, sz))) => (Some(v), sz),
                (_, None) => (None, 0),
            };
            Ok(Resolution {
                orig,
                new,
                orig_size: size(lf.byte_size),
                new_size: size(new_size),
                validate,
            })
        }
        kind::TYPE_ID_LOCAL => Ok(Resolution {
            orig: u64::from(r.type_id),
            new: Some(u64::from(r.type_id)),
            orig_size: 0,
            new_size: 0,
            validate: true,
        }),
        kind::TYPE_ID_TARGET | kind::TYPE_EXISTS | kind::TYPE_SIZE | kind::TYPE_MATCHES => {
            let orig = match r.kind {
                kind::TYPE_ID_TARGET => u64::from(r.type_id),
                kind::TYPE_SIZE => local.size_of(r.type_id)?,
                _ => 1,
            };
            let found: Vec<(u64, u32)> = cands
                .iter()
                .map(|&c| match r.kind {
                    kind::TYPE_ID_TARGET => Ok((u64::from(c), 0)),
                    kind::TYPE_SIZE => target.size_of(c).map(|s| (s, 0)),
                    _ => Ok((1, 0)),
                })
                .collect::<Result<_, BtfError>>()?;
            // A type the target lacks has id 0, size 0 and does not exist
            // (libbpf's values; nothing is poisoned).
            let new = unique(found, "type")?;
            Ok(Resolution {
                orig,
                new: Some(new.map_or(0, |(v, _)| v)),
                orig_size: 0,
                new_size: 0,
                validate: true,
            })
        }
        kind::ENUMVAL_EXISTS | kind::ENUMVAL_VALUE => {
            let l = local.skip_mods_and_typedefs(r.type_id)?;
            let BtfKind::Enum { values, .. } = &local.ty(l).kind else {
                return Err(CoreError::NotEnum);
            };
            let idx = *path.first().ok_or(CoreError::EmptyAccess)? as usize;
            let (name, local_val) = values.get(idx).ok_or(CoreError::NoEnumerator(idx))?;
            let orig = if r.kind == kind::ENUMVAL_EXISTS {
                1
            } else {
                *local_val as u64
            };
            let found: Vec<(u64, u32)> = cands
                .iter()
                .filter_map(|&c| match &target.ty(c).kind {
                    BtfKind::Enum { values, .. } => values
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| (*v as u64, 0)),
                    _ => None,
                })
                .map(|(v, s)| {
                    if r.kind == kind::ENUMVAL_EXISTS {
                        (1, s)
                    } else {
                        (v, s)
                    }
                })
                .collect();
            let new = unique(found, &format!("enumerator {name}"))?;
            Ok(Resolution {
                orig,
                new: new
                    .map(|(v, _)| v)
                    .or((r.kind == kind::ENUMVAL_EXISTS).then_some(0)),
                orig_size: 0,
                new_size: 0,
                validate: true,
            })
        }
        k => Err(CoreError::UnknownKind(k)),
    }
}

/// Patches the instruction at `code[pc]` with a resolution (or poisons it).
pub(crate) fn patch(code: &mut [RawInsn], pc: usize, res: &Resolution) -> Result<(), CoreError> {
    use isa::opcode::{class, mode, size};
    let insn = code[pc];
    let Some(new) = res.new else {
        // Poison: a call that faults when executed, as libbpf does.
        let is_lddw = insn.code == isa::opcode::LDDW;
        code[pc] = RawInsn {
            code: isa::opcode::CALL,
            imm: 0x0bad_2310,
            ..RawInsn::default()
        };
        if is_lddw && pc + 1 < code.len() {
            // The second half becomes a jump over nothing.
            code[pc + 1] = RawInsn {
                code: isa::opcode::JA,
                ..RawInsn::default()
            };
        }
        return Ok(());
    };
    let check = |have: i64| -> Result<(), CoreError> {
        if res.validate && have != res.orig as i64 {
            return Err(CoreError::Mismatch {
                have,
                expected: res.orig,
            });
        }
        Ok(())
    };
    match insn.code & class::MASK {
        class::ALU | class::ALU64 => {
            check(insn.imm.into())?;
            code[pc].imm = i32::try_from(new as i64).map_err(|_| CoreError::Immediate(new))?;
        }
        class::LDX | class::ST | class::STX => {
            check(insn.off.into())?;
            code[pc].off = i16::try_from(new).map_err(|_| CoreError::Offset(new))?;
            // A load of the whole field follows the field's size.
            if insn.code & class::MASK == class::LDX
                && insn.code & mode::MASK == mode::MEM
                && res.orig_size != res.new_size
                && res.new_size != 0
            {
                let cur = match insn.code & size::MASK {
                    size::B => 1,
                    size::H => 2,
                    size::W => 4,
                    _ => 8,
                };
                if cur == res.orig_size {
                    let sz = match res.new_size {
                        1 => size::B,
                        2 => size::H,
                        4 => size::W,
                        8 => size::DW,
                        n => return Err(CoreError::LoadSize(n)),
                    };
                    code[pc].code = (insn.code & !size::MASK) | sz;
                }
            }
        }
        class::LD if insn.code == isa::opcode::LDDW && pc + 1 < code.len() => {
            let have = (insn.imm as u32 as u64) | ((code[pc + 1].imm as u32 as u64) << 32);
            check(have as i64)?;
            code[pc].imm = new as u32 as i32;
            code[pc + 1].imm = (new >> 32) as u32 as i32;
        }
        _ => return Err(CoreError::Opcode(insn.code)),
    }
    Ok(())
}

/// One function as laid out in a linked program.
pub(crate) struct Placement<'a> {
    pub section: &'a str,
    /// First instruction of the function in its section.
    pub start: usize,
    pub len: usize,
    /// Slot where the function starts in the linked code.
    pub at: usize,
}

/// What applying a program's relocations did.
#[derive(Default)]
pub(crate) struct Applied {
    pub count: usize,
    /// Slots poisoned because the target lacks what they refer to.
    pub poisoned: Vec<(usize, String)>,
}

fn describe(local: &Btf, r: &CoreRelo) -> String {
    let what = match r.kind {
        kind::FIELD_BYTE_OFFSET => "field offset",
        kind::FIELD_BYTE_SIZE => "field size",
        kind::FIELD_EXISTS => "field exists",
        kind::FIELD_SIGNED => "field signedness",
        kind::FIELD_LSHIFT_U64 | kind::FIELD_RSHIFT_U64 => "bitfield shift",
        kind::TYPE_ID_LOCAL | kind::TYPE_ID_TARGET => "type id",
        kind::TYPE_EXISTS | kind::TYPE_MATCHES => "type exists",
        kind::TYPE_SIZE => "type size",
        kind::ENUMVAL_EXISTS => "enumerator exists",
        kind::ENUMVAL_VALUE => "enumerator value",
        _ => "relocation",
    };
    let ty = if local.get(r.type_id).is_some() {
        local.display(r.type_id)
    } else {
        format!("type {}", r.type_id)
    };
    format!("{what} of {ty} (access {})", r.access)
}

/// Applies the CO-RE relocations of every placed function to `code`.
pub(crate) fn apply(
    code: &mut [RawInsn],
    placed: &[Placement],
    relos: &HashMap<String, Vec<CoreRelo>>,
    local: &Btf,
    target: &CoreTarget,
) -> Result<Applied, String> {
    let mut out = Applied::default();
    for p in placed {
        for r in relos.get(p.section).into_iter().flatten() {
            if !(p.start..p.start + p.len).contains(&r.insn) {
                continue;
            }
            let pc = p.at + r.insn - p.start;
            let res = resolve(local, target, r)
                .map_err(|e| format!("CO-RE {} at slot {pc}: {e}", describe(local, r)))?;
            patch(code, pc, &res)
                .map_err(|e| format!("CO-RE {} at slot {pc}: {e}", describe(local, r)))?;
            if res.new.is_none() {
                out.poisoned.push((
                    pc,
                    format!("{} is not in {}", describe(local, r), target.origin()),
                ));
            }
            out.count += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_file_and_the_access() {
        let e = CoreTarget::from_bytes(b"junk", "f.o").unwrap_err();
        assert_eq!(
            e,
            CoreTargetError::NotBtf {
                origin: "f.o".into()
            }
        );
        assert_eq!(e.to_string(), "f.o is neither raw BTF nor an ELF object");
        let e = CoreTarget::from_bytes(&[0x9f, 0xeb, 1], "vmlinux").unwrap_err();
        assert!(
            matches!(&e, CoreTargetError::Btf { origin, .. } if origin == "vmlinux"),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("vmlinux: .BTF"), "{e}");
        let e = access_spec("0:x").unwrap_err();
        assert_eq!(e, CoreError::BadAccess("0:x".into()));
        assert_eq!(e.to_string(), "bad access string `0:x`");
    }
}
