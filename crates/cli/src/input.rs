//! Reading a program from a file: assembly text, raw bytecode or an ELF
//! object (one of its executable sections).

use std::path::Path;

use isa::Insn;

/// A program read from a file, with where it came from.
pub struct LoadedCode {
    pub insns: Vec<Insn>,
    /// ELF section name, when the file was an object.
    pub section: Option<String>,
    /// Function symbols (name, slot) from the object.
    pub functions: Vec<(String, usize)>,
}

/// What kind of file a path holds: ELF by its magic, assembly by its
/// extension (`.s`, `.asm`), raw bytecode otherwise.
pub enum FileKind {
    Elf,
    Assembly,
    Bytecode,
}

pub fn kind_of(path: &Path, data: &[u8]) -> FileKind {
    if obj::is_elf(data) {
        FileKind::Elf
    } else if path.extension().is_some_and(|e| e == "s" || e == "asm") {
        FileKind::Assembly
    } else {
        FileKind::Bytecode
    }
}

pub fn read(path: &Path) -> Result<Vec<u8>, String> {
    crate::files::object(path)
}

/// All programs in a file: one for assembly and bytecode, one per
/// executable section for an ELF object.
pub fn load_all(path: &Path) -> Result<Vec<LoadedCode>, String> {
    let data = read(path)?;
    let at = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    match kind_of(path, &data) {
        FileKind::Assembly => {
            let text = String::from_utf8(data).map_err(|_| at(&"assembly file is not UTF-8"))?;
            let insns = isa::assemble(&text).map_err(|e| at(&e))?;
            Ok(vec![LoadedCode {
                insns,
                section: None,
                functions: Vec::new(),
            }])
        }
        FileKind::Bytecode => Ok(vec![LoadedCode {
            insns: isa::decode(&data).map_err(|e| at(&e))?,
            section: None,
            functions: Vec::new(),
        }]),
        FileKind::Elf => {
            let object = obj::ElfObject::parse(&data).map_err(|e| at(&e))?;
            object
                .programs()
                .iter()
                .map(|p| {
                    let insns = isa::decode(&p.bytes)
                        .map_err(|e| at(&format!("section {}: {e}", p.name)))?;
                    Ok(LoadedCode {
                        insns,
                        section: Some(p.name.clone()),
                        functions: p.functions.clone(),
                    })
                })
                .collect()
        }
    }
}

/// One program: the only one, or the section named `section`.
pub fn load_one(path: &Path, section: Option<&str>) -> Result<LoadedCode, String> {
    let all = load_all(path)?;
    match section {
        Some(name) => {
            let names: Vec<String> = all.iter().filter_map(|c| c.section.clone()).collect();
            all.into_iter()
                .find(|c| c.section.as_deref() == Some(name))
                .ok_or_else(|| {
                    format!(
                        "{}: no section `{name}` (sections: {})",
                        path.display(),
                        names.join(", ")
                    )
                })
        }
        None => {
            if all.len() > 1 {
                let names: Vec<String> = all.iter().filter_map(|c| c.section.clone()).collect();
                return Err(format!(
                    "{}: the object has {} program sections ({}); pick one with --section",
                    path.display(),
                    all.len(),
                    names.join(", ")
                ));
            }
            all.into_iter()
                .next()
                .ok_or_else(|| format!("{}: no program in the file", path.display()))
        }
    }
}
