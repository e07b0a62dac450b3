//! An object file as libbpf reads it: maps, programs, relocations and
//! subprogram linking.

use std::collections::{BTreeMap, HashMap};

use isa::{Insn, RawInsn};
use object::{
    Object as _, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SectionKind,
    SymbolKind,
};

use crate::ObjError;
use crate::btf::{Btf, BtfKind};
use crate::btf_ext::BtfExt;
use crate::core::{self, CoreTarget, Placement};
use crate::kind::{ProgramKind, ProgramTypeError};
use crate::mapdef::{self, InitialRef, MapDef};

const R_BPF_64_64: u32 = 1;
/// Largest global data section accepted (the kernel caps map values lower).
const MAX_DATA_SECTION: u64 = 1 << 30;
const R_BPF_64_ABS64: u32 = 2;
const R_BPF_64_ABS32: u32 = 3;
const R_BPF_64_NODYLD32: u32 = 4;
const R_BPF_64_32: u32 = 10;

/// A source line of a program instruction (from BTF line info).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub pc: usize,
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub source: String,
}

/// A program ready for a VM: its function and every subprogram it calls,
/// linked into one instruction stream. Map references are
/// `lddw map_idx(N)` / `map_idx_value(N)+OFF` with `N` an index into
/// [`Object::maps`].
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub section: String,
    pub kind: ProgramKind,
    pub insns: Vec<Insn>,
    /// Every linked function and the slot it starts at (the program first).
    pub functions: Vec<(String, usize)>,
    /// Source lines by slot, sorted.
    pub lines: Vec<Line>,
    /// Calls of kernel functions (kfuncs) by slot and name; a VM refuses
    /// the ones it lacks.
    pub kfuncs: Vec<(usize, String)>,
    /// CO-RE relocations applied while loading.
    pub core_relocations: usize,
    /// Slots poisoned by CO-RE (the target lacks the field or type they
    /// use) and why; running one is an error, as in the kernel.
    pub core_poisoned: Vec<(usize, String)>,
    /// The kind was given by the user ([`Object::set_program_type`]), not
    /// read from the section name: kernel loaders must set it too.
    pub type_given: bool,
    /// An expected attach type given by the user (`--attach-type`), as
    /// the kernel's id.
    pub attach_type: Option<u32>,
}

impl Program {
    /// The source line an instruction came from.
    pub fn line_at(&self, pc: usize) -> Option<&Line> {
        let i = self.lines.partition_point(|l| l.pc <= pc);
        i.checked_sub(1).map(|i| &self.lines[i])
    }

    /// The linked function that contains slot `pc`.
    pub fn function_at(&self, pc: usize) -> Option<&str> {
        self.functions
            .iter()
            .filter(|(_, at)| *at <= pc)
            .max_by_key(|(_, at)| *at)
            .map(|(n, _)| n.as_str())
    }
}

/// A parsed object.
#[derive(Clone, Debug)]
pub struct Object {
    pub license: String,
    pub kernel_version: Option<u32>,
    pub maps: Vec<MapDef>,
    pub programs: Vec<Program>,
    pub btf: Option<Btf>,
    /// What CO-RE relocations were resolved against (`None` when the
    /// object has none).
    pub core_target: Option<String>,
}

/// A global variable of a data section, for `--set NAME=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalVar {
    pub map: usize,
    pub offset: usize,
    pub size: usize,
    pub type_name: String,
    pub readonly: bool,
}

impl Object {
    pub fn program(&self, name: &str) -> Option<&Program> {
        self.programs.iter().find(|p| p.name == name)
    }

    /// Gives programs a type (`--type`, with `--attach-type`): program
    /// `prog`, or, without one, every program whose section names no
    /// type (neither libbpf nor sluice knows it: iproute2's `from-netdev`,
    /// tail-call targets like `2/0`). Returns how many programs it typed.
    pub fn set_program_type(
        &mut self,
        prog: Option<&str>,
        ty: &str,
        attach: Option<&str>,
    ) -> Result<usize, ProgramTypeError> {
        let (kind, attach_type) = ProgramKind::from_type_name(ty, attach)?;
        if let Some(p) = prog
            && self.program(p).is_none()
        {
            return Err(ProgramTypeError::NoProgram {
                prog: p.to_string(),
                ty: ty.to_string(),
                programs: self.programs.iter().map(|p| p.name.clone()).collect(),
            });
        }
        let mut typed = 0;
        for p in &mut self.programs {
            let chosen = match prog {
                Some(name) => p.name == name,
                None => !p.kind.is_runnable() && !ProgramKind::libbpf_knows(&p.section),
            };
            if chosen {
                p.kind = kind.clone();
                p.type_given = true;
                p.attach_type = attach_type;
                typed += 1;
            }
        }
        Ok(typed)
    }

    pub fn map_index(&self, name: &str) -> Option<usize> {
        self.maps.iter().position(|m| m.name() == name)
    }

    /// A global variable by name, from the BTF of the data sections.
    pub fn global_var(&self, name: &str) -> Option<GlobalVar> {
        let btf = self.btf.as_ref()?;
        for (map, def) in self.maps.iter().enumerate() {
            let mapdef::MapOrigin::Data { section, readonly } = &def.origin else {
                continue;
            };
            let Some(ds) = def.value_type else { continue };
            let BtfKind::Datasec { vars, .. } = &btf.ty(ds).kind else {
                continue;
            };
            debug_assert!(btf.ty(ds).name == *section);
            for v in vars {
                let var = btf.ty(v.ty);
                if var.name == name {
                    let ty = match var.kind {
                        BtfKind::Var { ty, .. } => btf.display(ty),
                        _ => String::new(),
                    };
                    return Some(GlobalVar {
                        map,
                        offset: v.offset as usize,
                        size: v.size as usize,
                        type_name: ty,
                        readonly: *readonly,
                    });
                }
            }
        }
        None
    }
}

/// What a relocated instruction refers to.
#[derive(Clone, Debug)]
enum Ref {
    Map(usize),
    MapValue(usize, i64),
    /// A call to, or the address of, slot `.1` of exec section `.0`.
    Call(usize, usize),
    FuncAddr(usize, usize),
    Kfunc(String),
}

struct Func {
    sec: usize,
    start: usize,
    len: usize,
    name: String,
    global: bool,
}

struct ExecSection {
    name: String,
    code: Vec<RawInsn>,
}

struct Sym {
    name: String,
    value: u64,
    kind: SymbolKind,
    section: Option<usize>,
    global: bool,
}

/// What CO-RE relocations are resolved against.
#[derive(Copy, Clone)]
pub(crate) enum Target<'t> {
    Given(&'t CoreTarget),
    /// The object's own BTF.
    Own,
    /// `CoreTarget::default_target()`, looked up (and the kernel's BTF
    /// read) only when the object has relocations.
    Default,
}

pub(crate) fn parse(data: &[u8], target: Target<'_>) -> Result<Object, ObjError> {
    let file = object::File::parse(data).map_err(|e| ObjError::Malformed(e.to_string()))?;
    crate::check_machine(&file)?;

    // Sections by kind.
    let mut exec: BTreeMap<usize, ExecSection> = BTreeMap::new();
    let mut data_secs: Vec<(usize, String, Vec<u8>)> = Vec::new();
    let mut named: HashMap<String, usize> = HashMap::new();
    let mut sec_data: HashMap<usize, &[u8]> = HashMap::new();
    for s in file.sections() {
        let idx = s.index().0;
        let name = s
            .name()
            .map_err(|e| ObjError::Malformed(format!("section {idx}: {e}")))?
            .to_string();
        let bytes = s
            .data()
            .map_err(|e| ObjError::Malformed(format!("section {name}: {e}")))?;
        named.insert(name.clone(), idx);
        sec_data.insert(idx, bytes);
        match s.kind() {
            SectionKind::Text if !bytes.is_empty() => {
                if bytes.len() % 8 != 0 {
                    return Err(ObjError::RaggedSection {
                        section: name,
                        size: bytes.len(),
                    });
                }
                let code = bytes
                    .chunks_exact(8)
                    .map(|c| RawInsn::from_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                exec.insert(idx, ExecSection { name, code });
            }
            _ if is_data_section(&name) => {
                if s.size() > MAX_DATA_SECTION {
                    return Err(ObjError::Malformed(format!(
                        "section {name} claims {} bytes; global data is limited to {MAX_DATA_SECTION}",
                        s.size()
                    )));
                }
                let contents = if name.starts_with(".bss") {
                    vec![0; s.size() as usize]
                } else {
                    bytes.to_vec()
                };
                if !contents.is_empty() {
                    data_secs.push((idx, name, contents));
                }
            }
            _ => {}
        }
    }

    let license = named
        .get("license")
        .and_then(|i| sec_data.get(i))
        .map(|b| String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(&[])).into_owned())
        .unwrap_or_default();
    let kernel_version = named
        .get("version")
        .and_then(|i| sec_data.get(i))
        .and_then(|b| b.get(..4))
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));

    // Symbols.
    let mut syms: Vec<Option<Sym>> = Vec::new();
    for s in file.symbols() {
        let idx = s.index().0;
        if syms.len() <= idx {
            syms.resize_with(idx + 1, || None);
        }
        syms[idx] = Some(Sym {
            name: s.name().unwrap_or("").to_string(),
            value: s.address(),
            kind: s.kind(),
            section: s.section_index().map(|i| i.0),
            global: s.is_global(),
        });
    }

    let mut btf = match named.get(".BTF").and_then(|i| sec_data.get(i)) {
        Some(b) => Some(Btf::parse(b)?),
        None => None,
    };
    let btf_ext = match (
        named.get(".BTF.ext").and_then(|i| sec_data.get(i)),
        named.get(".BTF").and_then(|i| sec_data.get(i)),
    ) {
        (Some(ext), Some(btf_bytes)) => {
            Some(BtfExt::parse(ext, btf_strings(btf_bytes)).map_err(ObjError::BtfExt)?)
        }
        _ => None,
    };

    // clang leaves DATASEC offsets and sizes zero: take them from the
    // symbols and sections, as libbpf does.
    if let Some(btf) = &mut btf {
        for s in file.sections() {
            let (idx, name) = (s.index().0, s.name().unwrap_or(""));
            if name != ".maps" && !is_data_section(name) {
                continue;
            }
            let offset_of = |var: &str| {
                syms.iter()
                    .flatten()
                    .find(|sym| sym.section == Some(idx) && sym.name == var)
                    .map(|sym| sym.value as u32)
            };
            btf.fixup_datasec(name, s.size() as u32, offset_of)
                .map_err(|e| ObjError::Map {
                    name: name.to_string(),
                    reason: e.to_string(),
                })?;
        }
    }

    // Maps.
    let mut maps: Vec<MapDef> = Vec::new();
    let mut map_at: HashMap<(usize, u64), usize> = HashMap::new();
    let mut values_at: Vec<(usize, u64, u32)> = Vec::new();
    if let Some(&maps_idx) = named.get(".maps") {
        let btf = btf.as_ref().ok_or_else(|| ObjError::Map {
            name: ".maps".into(),
            reason:
                "the object has a .maps section but no .BTF to describe it (build with clang -g)"
                    .into(),
        })?;
        let ds = btf.find(".maps", "datasec").ok_or_else(|| ObjError::Map {
            name: ".maps".into(),
            reason: ".BTF has no DATASEC for .maps".into(),
        })?;
        let BtfKind::Datasec { vars, .. } = &btf.ty(ds).kind else {
            unreachable!("found as a datasec")
        };
        for v in vars {
            let var = btf.ty(v.ty);
            let BtfKind::Var { ty, .. } = var.kind else {
                return Err(ObjError::Map {
                    name: var.name.clone(),
                    reason: "a .maps entry that is not a variable".into(),
                });
            };
            let parsed = mapdef::parse_btf_map(btf, &var.name, ty, false).map_err(|reason| {
                ObjError::Map {
                    name: var.name.clone(),
                    reason,
                }
            })?;
            if let Some(off) = parsed.values_offset {
                values_at.push((maps.len(), u64::from(v.offset), off));
            }
            map_at.insert((maps_idx, u64::from(v.offset)), maps.len());
            maps.push(parsed.def);
        }
    }
    if let Some(&legacy_idx) = named.get("maps") {
        let size = sec_data.get(&legacy_idx).map_or(0, |d| d.len());
        let mut defs: Vec<&Sym> = syms
            .iter()
            .flatten()
            .filter(|s| {
                s.section == Some(legacy_idx) && s.kind != SymbolKind::Section && !s.name.is_empty()
            })
            .collect();
        defs.sort_by_key(|s| s.value);
        if !defs.is_empty() {
            let def_size = size / defs.len();
            for s in defs {
                let start = s.value as usize;
                let bytes = sec_data[&legacy_idx]
                    .get(start..start + def_size)
                    .ok_or_else(|| ObjError::Map {
                        name: s.name.clone(),
                        reason: format!(
                            "definition at offset {start} runs past the maps section ({size} bytes)"
                        ),
                    })?;
                let def = mapdef::parse_legacy_map(&s.name, bytes).map_err(|e| ObjError::Map {
                    name: s.name.clone(),
                    reason: e.to_string(),
                })?;
                map_at.insert((legacy_idx, s.value), maps.len());
                maps.push(def);
            }
        }
    }
    let mut data_map_of: HashMap<usize, usize> = HashMap::new();
    for (idx, name, contents) in data_secs {
        let value_type = btf.as_ref().and_then(|b| b.find(&name, "datasec"));
        data_map_of.insert(idx, maps.len());
        let mut def = mapdef::data_map(&name, contents, value_type);
        // A global lock (`.data.A`), found as the kernel finds it.
        def.spec.spin_lock = btf
            .as_ref()
            .zip(value_type)
            .and_then(|(b, t)| b.spin_lock_offset(t));
        maps.push(def);
    }

    // Functions of every executable section.
    let mut funcs: Vec<Func> = Vec::new();
    for (&sec, es) in &exec {
        let mut in_sec: Vec<&Sym> = syms
            .iter()
            .flatten()
            .filter(|s| s.section == Some(sec) && s.kind == SymbolKind::Text && !s.name.is_empty())
            .collect();
        in_sec.sort_by_key(|s| s.value);
        if in_sec.is_empty() {
            funcs.push(Func {
                sec,
                start: 0,
                len: es.code.len(),
                name: es.name.clone(),
                global: true,
            });
            continue;
        }
        for (i, s) in in_sec.iter().enumerate() {
            let start = (s.value / 8) as usize;
            let end = in_sec
                .get(i + 1)
                .map_or(es.code.len(), |n| (n.value / 8) as usize);
            if start >= es.code.len() || end < start {
                return Err(ObjError::Program {
                    section: es.name.clone(),
                    name: s.name.clone(),
                    reason: format!("function symbol at byte {} is outside the section", s.value),
                });
            }
            funcs.push(Func {
                sec,
                start,
                len: end - start,
                name: s.name.clone(),
                global: s.global,
            });
        }
    }

    // Relocations.
    let mut refs: HashMap<(usize, usize), Ref> = HashMap::new();
    for s in file.sections() {
        let target_sec = s.index().0;
        let is_exec = exec.contains_key(&target_sec);
        let is_maps = named.get(".maps") == Some(&target_sec);
        if !is_exec && !is_maps {
            continue;
        }
        let sec_name = s.name().unwrap_or("?").to_string();
        for (offset, rel) in s.relocations() {
            let bad = |reason: String| ObjError::Relocation {
                section: sec_name.clone(),
                offset,
                reason,
            };
            let r_type = match rel.flags() {
                RelocationFlags::Elf { r_type } => r_type.0,
                other => return Err(bad(format!("unexpected relocation {other:?}"))),
            };
            let sym_idx = match rel.target() {
                RelocationTarget::Symbol(i) => i.0,
                other => return Err(bad(format!("relocation against {other:?}, not a symbol"))),
            };
            let sym = syms
                .get(sym_idx)
                .and_then(Option::as_ref)
                .ok_or_else(|| bad(format!("symbol {sym_idx} does not exist")))?;
            if is_maps {
                // `__array(values, ...)` initialisers.
                // clang before 14 wrote R_BPF_64_64 for these 8-byte
                // slots; libbpf takes any type here.
                if r_type != R_BPF_64_ABS64 && r_type != R_BPF_64_64 {
                    return Err(bad(format!(
                        "relocation type {r_type} in .maps (expected R_BPF_64_ABS64, or R_BPF_64_64 from older clang)"
                    )));
                }
                let (map, var_off, values_off) = values_at
                    .iter()
                    .copied()
                    .filter(|&(_, var_off, _)| var_off <= offset)
                    .max_by_key(|&(_, var_off, _)| var_off)
                    .ok_or_else(|| bad("relocation outside any map with `values`".into()))?;
                let rel_off = offset - var_off;
                if rel_off < u64::from(values_off) || (rel_off - u64::from(values_off)) % 8 != 0 {
                    return Err(bad(
                        "relocation does not land on an entry of `values`".into()
                    ));
                }
                let slot = ((rel_off - u64::from(values_off)) / 8) as u32;
                let init = match sym.section {
                    Some(sec) if Some(&sec) == named.get(".maps") => {
                        let m = map_at
                            .get(&(sec, sym.value))
                            .ok_or_else(|| bad(format!("`{}` is not a map", sym.name)))?;
                        InitialRef::Map(maps[*m].name().to_string())
                    }
                    Some(sec) if exec.contains_key(&sec) => InitialRef::Program(sym.name.clone()),
                    _ => {
                        return Err(bad(format!(
                            "`{}` is neither a map nor a program",
                            sym.name
                        )));
                    }
                };
                maps[map].initial.push((slot, init));
                continue;
            }
            let es = &exec[&target_sec];
            if offset % 8 != 0 || offset / 8 >= es.code.len() as u64 {
                return Err(bad(format!(
                    "offset is not an instruction of the section ({} instructions)",
                    es.code.len()
                )));
            }
            let pc = (offset / 8) as usize;
            let insn = es.code[pc];
            // As in libbpf, the instruction says what a relocation is for,
            // whichever of the two code relocation types a toolchain wrote.
            let kind = match r_type {
                R_BPF_64_64 | R_BPF_64_32 if insn.code == isa::opcode::LDDW => R_BPF_64_64,
                R_BPF_64_64 | R_BPF_64_32 if insn.code == isa::opcode::CALL => R_BPF_64_32,
                R_BPF_64_64 | R_BPF_64_32 => {
                    return Err(bad(format!(
                        "relocation type {r_type} on opcode {:#04x}, neither lddw nor call",
                        insn.code
                    )));
                }
                t => t,
            };
            let r = match kind {
                R_BPF_64_64 => {
                    if pc + 1 >= es.code.len() {
                        return Err(bad("lddw at the end of the section".into()));
                    }
                    let addend = i64::from(insn.imm);
                    match sym.section {
                        None => {
                            return Err(bad(format!(
                                "lddw of the extern `{}`: externs (__kconfig, __ksym) are not supported",
                                sym.name
                            )));
                        }
                        Some(sec)
                            if map_at.contains_key(&(sec, sym.value))
                                && (named.get(".maps") == Some(&sec)
                                    || named.get("maps") == Some(&sec)) =>
                        {
                            Ref::Map(map_at[&(sec, sym.value)])
                        }
                        Some(sec)
                            if named.get(".maps") == Some(&sec)
                                || named.get("maps") == Some(&sec) =>
                        {
                            return Err(bad(format!(
                                "`{}` at offset {} of the maps section is not a map",
                                sym.name, sym.value
                            )));
                        }
                        Some(sec) if data_map_of.contains_key(&sec) => {
                            Ref::MapValue(data_map_of[&sec], sym.value as i64 + addend)
                        }
                        Some(sec) if exec.contains_key(&sec) => {
                            let byte = sym.value as i64 + addend;
                            if byte < 0 || byte % 8 != 0 {
                                return Err(bad(format!(
                                    "function address {byte} is not an instruction boundary"
                                )));
                            }
                            Ref::FuncAddr(sec, (byte / 8) as usize)
                        }
                        Some(sec) => {
                            return Err(bad(format!(
                                "lddw of `{}` in section {sec}, which is neither maps, data nor code",
                                sym.name
                            )));
                        }
                    }
                }
                R_BPF_64_32 => match sym.section {
                    None => Ref::Kfunc(sym.name.clone()),
                    Some(sec) if exec.contains_key(&sec) => {
                        if insn.src != isa::opcode::pseudo::CALL_LOCAL {
                            return Err(bad("call relocation on a helper call".into()));
                        }
                        let target = (sym.value / 8) as i64 + i64::from(insn.imm) + 1;
                        if target < 0 {
                            return Err(bad(format!("call target {target} is before the section")));
                        }
                        Ref::Call(sec, target as usize)
                    }
                    Some(_) => {
                        return Err(bad(format!("call of `{}`, which is not code", sym.name)));
                    }
                },
                R_BPF_64_ABS64 | R_BPF_64_ABS32 | R_BPF_64_NODYLD32 => continue,
                t => return Err(bad(format!("unknown relocation type {t}"))),
            };
            refs.insert((target_sec, pc), r);
        }
    }

    if let Some(btf) = &btf {
        let text_idx = named.get(".text").copied();
        mapdef::tail_call_tags(btf, &mut maps, |name| {
            funcs
                .iter()
                .any(|f| f.global && Some(f.sec) != text_idx && f.name == name)
        })?;
    }

    // Programs: the global functions of every executable section but .text.
    let text_idx = named.get(".text").copied();
    let mut programs = Vec::new();
    let mut own_target: Option<CoreTarget> = None;
    let mut core_origin: Option<String> = None;
    for f in funcs.iter().filter(|f| Some(f.sec) != text_idx && f.global) {
        let section = exec[&f.sec].name.clone();
        let kind = ProgramKind::from_section(&section);
        let mut linked = link(f, &funcs, &exec, &refs).map_err(|reason| ObjError::Program {
            section: section.clone(),
            name: f.name.clone(),
            reason,
        })?;
        let mut core_applied = core::Applied::default();
        if let (Some(ext), Some(local)) = (&btf_ext, &btf)
            && ext.core.values().any(|v| !v.is_empty())
        {
            let target = match target {
                Target::Given(t) => t,
                Target::Default => CoreTarget::default_target(),
                // Indexed once for all the object's programs.
                Target::Own => own_target
                    .get_or_insert_with(|| CoreTarget::new(local.clone(), "the object's own BTF")),
            };
            let placed: Vec<Placement> = linked
                .placed
                .iter()
                .map(|&(fi, at)| Placement {
                    section: &exec[&funcs[fi].sec].name,
                    start: funcs[fi].start,
                    len: funcs[fi].len,
                    at,
                })
                .collect();
            core_origin = Some(target.origin().to_string());
            core_applied = core::apply(&mut linked.code, &placed, &ext.core, local, target)
                .map_err(|reason| ObjError::Program {
                    section: section.clone(),
                    name: f.name.clone(),
                    reason,
                })?;
        }
        let insns = isa::decode_raw(&linked.code).map_err(|e| ObjError::Program {
            section: section.clone(),
            name: f.name.clone(),
            reason: e.to_string(),
        })?;
        let mut lines = Vec::new();
        if let Some(ext) = &btf_ext {
            for &(fi, at) in &linked.placed {
                let func = &funcs[fi];
                let sec_name = &exec[&func.sec].name;
                for rec in ext.lines.get(sec_name).into_iter().flatten() {
                    if (func.start..func.start + func.len).contains(&rec.insn) {
                        lines.push(Line {
                            pc: at + rec.insn - func.start,
                            file: rec.file.clone(),
                            line: rec.line,
                            col: rec.col,
                            source: rec.source.clone(),
                        });
                    }
                }
            }
        }
        lines.sort_by_key(|l| l.pc);
        programs.push(Program {
            name: f.name.clone(),
            section,
            kind,
            insns,
            functions: linked
                .placed
                .iter()
                .map(|&(fi, at)| (funcs[fi].name.clone(), at))
                .collect(),
            lines,
            kfuncs: linked.kfuncs,
            core_relocations: core_applied.count,
            core_poisoned: core_applied.poisoned,
            type_given: false,
            attach_type: None,
        });
    }
    if programs.is_empty() {
        return Err(ObjError::NoPrograms);
    }
    Ok(Object {
        license,
        kernel_version,
        maps,
        programs,
        btf,
        core_target: core_origin,
    })
}

fn is_data_section(name: &str) -> bool {
    [".data", ".rodata", ".bss"]
        .iter()
        .any(|p| name == *p || name.strip_prefix(p).is_some_and(|r| r.starts_with('.')))
}

/// The string table of raw `.BTF` bytes (already validated by `Btf::parse`).
fn btf_strings(btf: &[u8]) -> &[u8] {
    let word =
        |at: usize| u32::from_le_bytes(btf[at..at + 4].try_into().expect("checked")) as usize;
    let hdr_len = word(4);
    let (str_off, str_len) = (word(16), word(20));
    &btf[hdr_len + str_off..hdr_len + str_off + str_len]
}

struct Linked {
    code: Vec<RawInsn>,
    /// (function index, slot where it starts).
    placed: Vec<(usize, usize)>,
    kfuncs: Vec<(usize, String)>,
}

/// Lays out `main` followed by every function it reaches, and resolves
/// calls, function addresses and map references.
fn link(
    main: &Func,
    funcs: &[Func],
    exec: &BTreeMap<usize, ExecSection>,
    refs: &HashMap<(usize, usize), Ref>,
) -> Result<Linked, String> {
    let func_of = |sec: usize, pc: usize| {
        funcs
            .iter()
            .position(|f| f.sec == sec && (f.start..f.start + f.len).contains(&pc))
    };
    let main_idx = funcs
        .iter()
        .position(|f| f.sec == main.sec && f.start == main.start)
        .expect("main is one of the functions");
    let mut code: Vec<RawInsn> = Vec::new();
    let mut placed: Vec<(usize, usize)> = Vec::new();
    let mut kfuncs = Vec::new();
    // (slot in `code`, target section, target slot, is a call).
    let mut fixups: Vec<(usize, usize, usize, bool)> = Vec::new();
    let mut queue = vec![main_idx];
    while let Some(fi) = queue.pop() {
        if placed.iter().any(|&(p, _)| p == fi) {
            continue;
        }
        let f = &funcs[fi];
        let at = code.len();
        placed.push((fi, at));
        let src = &exec[&f.sec].code[f.start..f.start + f.len];
        code.extend_from_slice(src);
        let mut i = 0;
        while i < f.len {
            let (sec_pc, out_pc) = (f.start + i, at + i);
            let raw = code[out_pc];
            let is_lddw = raw.code == isa::opcode::LDDW;
            match refs.get(&(f.sec, sec_pc)) {
                Some(Ref::Map(m)) => {
                    code[out_pc].src = isa::opcode::pseudo::MAP_IDX;
                    code[out_pc].imm = *m as i32;
                    code[out_pc + 1].imm = 0;
                }
                Some(Ref::MapValue(m, off)) => {
                    code[out_pc].src = isa::opcode::pseudo::MAP_IDX_VALUE;
                    code[out_pc].imm = *m as i32;
                    code[out_pc + 1].imm = i32::try_from(*off)
                        .map_err(|_| format!("data offset {off} out of range"))?;
                }
                Some(Ref::Call(sec, target)) => fixups.push((out_pc, *sec, *target, true)),
                Some(Ref::FuncAddr(sec, target)) => {
                    code[out_pc].src = isa::opcode::pseudo::FUNC;
                    code[out_pc + 1].imm = 0;
                    fixups.push((out_pc, *sec, *target, false));
                }
                Some(Ref::Kfunc(name)) => {
                    code[out_pc].src = isa::opcode::pseudo::CALL_KFUNC;
                    code[out_pc].imm = 0;
                    kfuncs.push((out_pc, name.clone()));
                }
                None if raw.code == isa::opcode::CALL
                    && raw.src == isa::opcode::pseudo::CALL_LOCAL =>
                {
                    // A call within the same section, resolved by the compiler.
                    let target = sec_pc as i64 + i64::from(raw.imm) + 1;
                    if target < 0 {
                        return Err(format!(
                            "call at {sec_pc} targets {target}, before the section"
                        ));
                    }
                    fixups.push((out_pc, f.sec, target as usize, true));
                }
                None if is_lddw && raw.src != 0 => {
                    return Err(format!(
                        "lddw at {sec_pc} of section {} has source {} but no relocation",
                        exec[&f.sec].name, raw.src
                    ));
                }
                None => {}
            }
            i += if is_lddw { 2 } else { 1 };
        }
        // Queue the functions this one reaches.
        for &(_, sec, target, _) in fixups.iter().filter(|&&(p, ..)| p >= at) {
            let callee = func_of(sec, target).ok_or_else(|| {
                format!(
                    "call into section {} at {target}, which is in no function",
                    exec[&sec].name
                )
            })?;
            queue.push(callee);
        }
    }
    for (out_pc, sec, target, is_call) in fixups {
        let callee = func_of(sec, target).expect("checked when queued");
        let f = &funcs[callee];
        if is_call && target != f.start {
            return Err(format!(
                "call into the middle of function {} (slot {} of {})",
                f.name,
                target - f.start,
                f.len
            ));
        }
        let base = placed
            .iter()
            .find(|&&(p, _)| p == callee)
            .expect("queued functions are placed")
            .1;
        let rel = (base + target - f.start) as i64 - (out_pc as i64 + 1);
        code[out_pc].imm = i32::try_from(rel).map_err(|_| "program too large".to_string())?;
    }
    Ok(Linked {
        code,
        placed,
        kfuncs,
    })
}
