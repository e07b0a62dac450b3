//! eBPF ELF objects as clang (`-target bpf`) writes them.
//!
//! This crate reads the executable sections of an object (one per program
//! section, plus `.text` for subprograms) and the function symbols in them.
//! Maps, BTF, global data and relocations are the object-loading issue's
//! work; until then [`ElfObject::programs`] returns instructions as they are
//! in the file.

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};

/// Why an object cannot be read; each names the part of the file at fault.
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
}

/// One executable section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramSection {
    /// Section name, e.g. `xdp` or `.text`.
    pub name: String,
    /// The section's bytes, a whole number of instructions.
    pub bytes: Vec<u8>,
    /// Function symbols in the section: name and instruction index.
    pub functions: Vec<(String, usize)>,
}

/// A parsed object.
#[derive(Clone, Debug)]
pub struct ElfObject {
    programs: Vec<ProgramSection>,
}

/// Whether `data` starts like an ELF file.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

impl ElfObject {
    pub fn parse(data: &[u8]) -> Result<ElfObject, ObjError> {
        if !is_elf(data) {
            return Err(ObjError::NotElf);
        }
        let file = object::File::parse(data).map_err(|e| ObjError::Malformed(e.to_string()))?;
        if file.architecture() != object::Architecture::Bpf {
            return Err(ObjError::WrongMachine(format!("{:?}", file.architecture())));
        }
        if !file.is_little_endian() {
            return Err(ObjError::BigEndian);
        }
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
