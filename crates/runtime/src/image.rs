//! An object made runnable: its maps created and initialised, its programs
//! resolved against them.

use std::collections::HashMap;
use std::sync::Arc;

use isa::{Insn, Lddw};
use maps::{Map, MapType};
use obj::{InitialRef, MapOrigin, Object, ProgramKind};

use crate::handles::map_handle;

/// Why an object cannot be made runnable.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{0}")]
    Map(#[from] maps::MapError),
    #[error("map {map}: {reason}")]
    MapSetup { map: String, reason: String },
    #[error(
        "{} max_entries 0 (libbpf programs set it at load time): give {} with {}, or one size for all with --map-size-default N",
        plural_maps(.0),
        if .0.len() == 1 { "it" } else { "them" },
        .0.iter().map(|m| format!("--map-size {m}=N")).collect::<Vec<_>>().join(" ")
    )]
    Unsized(Vec<String>),
    #[error("--set {name}: {reason}")]
    Global { name: String, reason: String },
    #[error("program {program}: {reason}")]
    Program { program: String, reason: String },
}

fn plural_maps(maps: &[String]) -> String {
    match maps {
        [one] => format!("map {one} has"),
        _ => format!("maps {} have", maps.join(", ")),
    }
}

/// Choices made when loading, as a user gives them on the command line.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Simulated CPUs (per-CPU maps keep one copy each).
    pub ncpus: u32,
    /// `--map-size NAME=N`: overrides `max_entries`.
    pub map_sizes: HashMap<String, u32>,
    /// `--map-size-default N`: `max_entries` of the maps that declare 0
    /// and have no `--map-size` of their own.
    pub map_size_default: Option<u32>,
    /// `--set NAME=VALUE`: initial values of global variables.
    pub globals: Vec<(String, i128)>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            ncpus: 1,
            map_sizes: HashMap::new(),
            map_size_default: None,
            globals: Vec::new(),
        }
    }
}

/// A loaded object. Clones share the maps: hooks made from them (or
/// [`crate::Hook::sibling`]s) see one another's updates, as the kernel's
/// CPUs do.
#[derive(Clone)]
pub struct Image {
    pub object: Object,
    pub maps: Arc<[Map]>,
    /// Per object program: the resolved VM program, or why it cannot run.
    pub programs: Vec<Result<vm::Program, String>>,
}

impl Image {
    pub fn load(object: Object, opts: &LoadOptions) -> Result<Image, ImageError> {
        let mut specs = Vec::with_capacity(object.maps.len());
        let mut no_size = Vec::new();
        for def in &object.maps {
            let mut spec = def.spec.clone();
            if let Some(&n) = opts.map_sizes.get(def.name()) {
                spec.max_entries = n;
            }
            if spec.max_entries == 0 && spec.map_type == MapType::PerfEventArray {
                spec.max_entries = opts.ncpus;
            }
            // Socket storage has no size: one value per socket.
            let sized = spec.map_type != MapType::SkStorage;
            if spec.max_entries == 0
                && sized
                && let Some(n) = opts.map_size_default
            {
                spec.max_entries = n;
            }
            if spec.max_entries == 0 && sized {
                no_size.push(def.name().to_string());
            }
            specs.push(spec);
        }
        // Every map left without a size at once, not one per attempt.
        if !no_size.is_empty() {
            return Err(ImageError::Unsized(no_size));
        }
        let mut maps = Vec::with_capacity(object.maps.len());
        for (def, spec) in object.maps.iter().zip(specs) {
            let map = Map::new(spec, opts.ncpus)?;
            if let Some(data) = &def.data {
                map.user_update(
                    &0u32.to_le_bytes(),
                    &pad_for_percpu(&map, data),
                    maps::update::ANY,
                )
                .map_err(|e| ImageError::MapSetup {
                    map: def.name().to_string(),
                    reason: format!("initial data: {e}"),
                })?;
            }
            maps.push(map);
        }
        for (name, value) in &opts.globals {
            let var = object.global_var(name).ok_or_else(|| ImageError::Global {
                name: name.clone(),
                reason: "no such global variable in the object's .rodata/.data/.bss".into(),
            })?;
            let bits = var.size * 8;
            let fits =
                bits >= 128 || (*value >= -(1i128 << (bits - 1)) && *value < (1i128 << bits));
            if !fits || !(1..=8).contains(&var.size) {
                return Err(ImageError::Global {
                    name: name.clone(),
                    reason: format!(
                        "{value} does not fit the {}-byte {}",
                        var.size, var.type_name
                    ),
                });
            }
            let map = &maps[var.map];
            let mut data = map
                .user_lookup(&0u32.to_le_bytes())
                .expect("data maps have element 0");
            data[var.offset..var.offset + var.size]
                .copy_from_slice(&value.to_le_bytes()[..var.size]);
            map.user_update(&0u32.to_le_bytes(), &data, maps::update::ANY)
                .expect("writable before freezing");
        }
        // Initial slots of program arrays and maps of maps.
        for (i, def) in object.maps.iter().enumerate() {
            for (slot, init) in &def.initial {
                // Programs are referred to by id: index + 1 (0 is "none").
                let value = match init {
                    InitialRef::Program(p) => object
                        .programs
                        .iter()
                        .position(|q| q.name == *p)
                        .map(|i| i + 1),
                    InitialRef::Map(m) => object.map_index(m),
                }
                .ok_or_else(|| ImageError::MapSetup {
                    map: def.name().to_string(),
                    reason: format!("initial value {init:?} names nothing in the object"),
                })? as u32;
                maps[i]
                    .user_update(&slot.to_le_bytes(), &value.to_le_bytes(), maps::update::ANY)
                    .map_err(|e| ImageError::MapSetup {
                        map: def.name().to_string(),
                        reason: format!("initial slot {slot}: {e}"),
                    })?;
            }
            if let MapOrigin::Data { readonly: true, .. } = def.origin {
                maps[i].freeze();
            }
        }
        let programs = object.programs.iter().map(|p| resolve(p, &maps)).collect();
        Ok(Image {
            object,
            maps: maps.into(),
            programs,
        })
    }

    /// The id maps use for program `index` (prog arrays, devmap and cpumap
    /// entries): `index + 1`, so that 0 means "no program".
    pub fn program_id(index: usize) -> u32 {
        index as u32 + 1
    }

    /// The index of the program named `name` (or the only runnable one).
    pub fn find_program(&self, name: Option<&str>) -> Result<usize, FindProgramError> {
        let runnable: Vec<usize> = (0..self.programs.len())
            .filter(|&i| self.programs[i].is_ok())
            .collect();
        match name {
            Some(n) => {
                let i = self
                    .object
                    .programs
                    .iter()
                    .position(|p| p.name == n)
                    .ok_or_else(|| FindProgramError::NoSuch {
                        name: n.to_string(),
                        programs: self.program_list(),
                    })?;
                self.programs[i]
                    .as_ref()
                    .map_err(|why| FindProgramError::NotRunnable {
                        name: n.to_string(),
                        reason: why.clone(),
                    })?;
                Ok(i)
            }
            None => match runnable.as_slice() {
                [only] => Ok(*only),
                [] => Err(FindProgramError::NoneRunnable(self.program_list())),
                _ => Err(FindProgramError::Several(self.program_list())),
            },
        }
    }

    fn program_list(&self) -> String {
        self.object
            .programs
            .iter()
            .map(|p| format!("{} ({})", p.name, p.section))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why [`Image::find_program`] found no program to run; `programs` lists
/// the object's programs as `name (section)`.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum FindProgramError {
    #[error("no program `{name}`; the object has: {programs}")]
    NoSuch { name: String, programs: String },
    /// The program exists but cannot run (`reason` says why).
    #[error("program `{name}`: {reason}")]
    NotRunnable { name: String, reason: String },
    #[error("no runnable program in the object ({0})")]
    NoneRunnable(String),
    /// Several programs can run and none was chosen.
    #[error("the object has several programs, choose one with --prog: {0}")]
    Several(String),
}

/// A per-CPU data map would take one copy per CPU; data maps are plain arrays.
fn pad_for_percpu(map: &Map, data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    v.resize(map.user_value_len(), 0);
    v
}

/// Replaces map references by handles and value addresses.
fn resolve(p: &obj::Program, maps: &[Map]) -> Result<vm::Program, String> {
    if let ProgramKind::Unsupported(why) = &p.kind {
        return Err(why.clone());
    }
    if let Some((pc, name)) = p.kfuncs.first() {
        return Err(format!(
            "instruction {pc} calls the kernel function {name}, which sluice does not provide"
        ));
    }
    let insns = p
        .insns
        .iter()
        .map(|insn| match *insn {
            Insn::Lddw {
                dst,
                value: Lddw::MapIdx(i),
            } => {
                let i = i as usize;
                if i >= maps.len() {
                    return Err(format!(
                        "reference to map {i}, but the object has {}",
                        maps.len()
                    ));
                }
                Ok(Insn::Lddw {
                    dst,
                    value: Lddw::Imm(map_handle(i)),
                })
            }
            Insn::Lddw {
                dst,
                value: Lddw::MapIdxValue { idx, off },
            } => {
                let map = maps
                    .get(idx as usize)
                    .ok_or_else(|| format!("reference to map {idx}, which does not exist"))?;
                let (addr, len) = map.value_region().ok_or_else(|| {
                    format!(
                        "direct value access to map {}, which has no values",
                        map.name()
                    )
                })?;
                if off < 0 || off as usize >= len {
                    return Err(format!(
                        "offset {off} is outside map {}'s {len}-byte value",
                        map.name()
                    ));
                }
                Ok(Insn::Lddw {
                    dst,
                    value: Lddw::Imm(addr + off as u64),
                })
            }
            other => Ok(other),
        })
        .collect::<Result<Vec<_>, _>>()?;
    vm::Program::new(insns).map_err(|e| e.to_string())
}
