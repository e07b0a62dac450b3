//! eBPF ELF objects as clang (`-target bpf`) writes them and libbpf reads
//! them: program sections and their types, BTF, BTF-defined and legacy
//! maps, global data, relocations, subprogram linking and line info.
//!
//! [`Object::parse`] gives every program of an object linked and ready for
//! a VM; [`ElfObject`] gives the raw executable sections (for disassembly).

mod btf;
mod btf_ext;
mod core;
mod kind;
mod load;
mod mapdef;
mod reader;

pub use btf::{Btf, BtfError, BtfKind, Member, TypeId};
pub use btf_ext::{BtfExt, BtfExtError, CoreRelo, LineRecord};
pub use core::{CoreTarget, CoreTargetError};
pub use kind::{ProgramKind, ProgramTypeError, TYPE_NAMES, XdpAttach};
pub use load::{GlobalVar, Line, Object, Program};
pub use mapdef::{InitialRef, MapDef, MapOrigin};

use object::{Object as _, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};

/// Why an object cannot be loaded; each names the part of the file at fault.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ObjError {
    #[error("not an ELF file (bad magic)")]
    NotElf,
    #[error("malformed ELF: {0}")]
    Malformed(String),
    #[error("ELF machine is {0}, not BPF (was the object built with clang -target bpf?)")]
    WrongMachine(String),
    #[error("big-endian BPF objects (bpfeb) are not supported; build with -target bpf or bpfel")]
    BigEndian,
    #[error("section {section}: {size} bytes is not a whole number of 8-byte instructions")]
    RaggedSection { section: String, size: usize },
    #[error("{0}")]
    Btf(#[from] BtfError),
    #[error(".BTF.ext: {0}")]
    BtfExt(BtfExtError),
    #[error("map {name}: {reason}")]
    Map { name: String, reason: String },
    #[error("relocation at offset {offset} of section {section}: {reason}")]
    Relocation {
        section: String,
        offset: u64,
        reason: String,
    },
    #[error("program {name} (section {section}): {reason}")]
    Program {
        section: String,
        name: String,
        reason: String,
    },
    #[error("the object has no programs")]
    NoPrograms,
}

/// Whether `data` starts like an ELF file.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

fn check_machine(file: &object::File) -> Result<(), ObjError> {
    if file.architecture() != object::Architecture::Bpf {
        return Err(ObjError::WrongMachine(format!("{:?}", file.architecture())));
    }
    if !file.is_little_endian() {
        return Err(ObjError::BigEndian);
    }
    Ok(())
}

impl Object {
    /// Loads an object: every program linked, every map described.
    ///
    /// CO-RE relocations are resolved against the running kernel's BTF
    /// when it has one, else against the Linux UAPI types built into
    /// sluice ([`CoreTarget::default_target`]).
    pub fn parse(data: &[u8]) -> Result<Object, ObjError> {
        if !is_elf(data) {
            return Err(ObjError::NotElf);
        }
        load::parse(data, load::Target::Default)
    }

    /// Loads an object resolving CO-RE relocations against `target`
    /// (`None`: the object's own BTF).
    pub fn parse_with(data: &[u8], target: Option<&CoreTarget>) -> Result<Object, ObjError> {
        if !is_elf(data) {
            return Err(ObjError::NotElf);
        }
        load::parse(data, target.map_or(load::Target::Own, load::Target::Given))
    }
}

/// One executable section as it is in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramSection {
    /// Section name, e.g. `xdp` or `.text`.
    pub name: String,
    /// The section's bytes, a whole number of instructions.
    pub bytes: Vec<u8>,
    /// Function symbols in the section: name and instruction index.
    pub functions: Vec<(String, usize)>,
}

/// The executable sections of an object, unlinked.
#[derive(Clone, Debug)]
pub struct ElfObject {
    programs: Vec<ProgramSection>,
}

impl ElfObject {
    pub fn parse(data: &[u8]) -> Result<ElfObject, ObjError> {
        if !is_elf(data) {
            return Err(ObjError::NotElf);
        }
        let file = object::File::parse(data).map_err(|e| ObjError::Malformed(e.to_string()))?;
        check_machine(&file)?;
        let mut programs = Vec::new();
        for section in file.sections() {
            if section.kind() != SectionKind::Text {
                continue;
            }
            let name = section
                .name()
                .map_err(|e| ObjError::Malformed(format!("section {}: {e}", section.index().0)))?
                .to_string();
            let bytes = section
                .data()
                .map_err(|e| ObjError::Malformed(format!("section {name}: {e}")))?
                .to_vec();
            if bytes.is_empty() {
                continue;
            }
            if bytes.len() % 8 != 0 {
                return Err(ObjError::RaggedSection {
                    section: name,
                    size: bytes.len(),
                });
            }
            let mut functions: Vec<(String, usize)> = file
                .symbols()
                .filter(|s| {
                    s.kind() == SymbolKind::Text && s.section_index() == Some(section.index())
                })
                .filter_map(|s| Some((s.name().ok()?.to_string(), (s.address() / 8) as usize)))
                .filter(|(n, _)| !n.is_empty())
                .collect();
            functions.sort_by_key(|(_, at)| *at);
            programs.push(ProgramSection {
                name,
                bytes,
                functions,
            });
        }
        Ok(ElfObject { programs })
    }

    /// Executable sections in file order.
    pub fn programs(&self) -> &[ProgramSection] {
        &self.programs
    }
}
