//! [`HookSpec`]: a program to run, described as data (the object, the
//! program, the BTF its CO-RE relocations resolve against, settings, map
//! contents, forwarding table, pins, engine, verification), and
//! [`HookSpec::build`], which makes it a ready [`Hook`].

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use runtime::{Hook, Image, LoadOptions};
use serde::{Deserialize, Serialize};

use crate::contents::Contents;
use crate::error::{Error, ObjectError};
use crate::settings::Settings;

/// Where the object comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectSource {
    /// An ELF object file built by `clang -target bpf` (`-`: standard input).
    Path(PathBuf),
    /// The object's bytes; `name` names it in reports and errors.
    Bytes { name: String, bytes: Vec<u8> },
}

impl ObjectSource {
    /// What reports and errors call the object: the path, or the name.
    pub fn name(&self) -> String {
        match self {
            ObjectSource::Path(p) => p.display().to_string(),
            ObjectSource::Bytes { name, .. } => name.clone(),
        }
    }

    /// The object's bytes (a file is read whole; with `stop`, reading
    /// ends once it is set).
    pub fn bytes(
        &self,
        stop: Option<&'static AtomicBool>,
    ) -> Result<std::borrow::Cow<'_, [u8]>, Error> {
        Ok(match self {
            ObjectSource::Path(p) => crate::files::object(p, stop)?.into(),
            ObjectSource::Bytes { bytes, .. } => bytes.as_slice().into(),
        })
    }
}

/// The types CO-RE relocations resolve against.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BtfTarget {
    /// The running kernel's BTF (sluice's bundled UAPI types without it),
    /// read only when the object has relocations.
    #[default]
    Kernel,
    /// sluice's bundled UAPI types.
    Bundled,
    /// Raw BTF (like /sys/kernel/btf/vmlinux) or an object's `.BTF`.
    File(PathBuf),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "profile::VmEngine", rename_all = "lowercase")]
enum EngineDef {
    Interpreter,
    Jit,
}

fn jit() -> profile::VmEngine {
    profile::VmEngine::Jit
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

/// A program of an object and everything it needs before its first packet.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HookSpec {
    pub object: ObjectSource,
    /// The program (a function name); needed when the object has several.
    #[serde(default)]
    pub program: Option<String>,
    #[serde(default)]
    pub btf: BtfTarget,
    /// Globals, map sizes, program types.
    #[serde(default)]
    pub settings: Settings,
    /// Map entries, routes, an ESP SA, written after loading.
    #[serde(default)]
    pub contents: Contents,
    /// Forwarding table for `bpf_fib_lookup`: `link`, `neigh` and route lines.
    #[serde(default)]
    pub fib: Option<PathBuf>,
    /// Maps pinned by name are restored from this directory at build, and
    /// saved into it by [`HookSpec::save_pins`].
    #[serde(default)]
    pub pin: Option<PathBuf>,
    /// The x86-64 JIT (the interpreter where it cannot run) or the interpreter.
    #[serde(default = "jit", with = "EngineDef")]
    pub engine: profile::VmEngine,
    /// Count memory accesses per region.
    #[serde(default)]
    pub count_memory: bool,
    /// Simulated CPUs (per-CPU maps keep one value per CPU).
    #[serde(default = "one")]
    pub cpus: u32,
    /// Verify before running: a verified program runs without per-access
    /// checks. Without, every access is checked at run time.
    #[serde(default = "yes")]
    pub verify: bool,
}

/// A hook built from a [`HookSpec`], with what building it noted (the JIT
/// unavailable, run-time checks kept): the command line prints these as
/// `sluice: note: ...`.
pub struct Built {
    pub hook: Hook,
    pub notes: Vec<String>,
}

impl HookSpec {
    /// The spec of the object at `path`, every other field at its default.
    pub fn new(path: impl Into<PathBuf>) -> HookSpec {
        HookSpec::with_object(ObjectSource::Path(path.into()))
    }

    /// The spec of an object in memory, `name` naming it.
    pub fn from_bytes(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> HookSpec {
        HookSpec::with_object(ObjectSource::Bytes {
            name: name.into(),
            bytes: bytes.into(),
        })
    }

    /// The spec of `object`, every other field at its default.
    pub fn with_object(object: ObjectSource) -> HookSpec {
        HookSpec {
            object,
            program: None,
            btf: BtfTarget::Kernel,
            settings: Settings::default(),
            contents: Contents::default(),
            fib: None,
            pin: None,
            engine: profile::VmEngine::Jit,
            count_memory: false,
            cpus: 1,
            verify: true,
        }
    }

    /// Loads the program and, with [`HookSpec::verify`], verifies it.
    pub fn build(&self) -> Result<Built, Error> {
        self.build_with(None)
    }

    /// [`HookSpec::build`], the files it reads (object, BTF, FIB, routes)
    /// read no more once `stop` is set (a front end's SIGINT or SIGTERM).
    pub fn build_with(&self, stop: Option<&'static AtomicBool>) -> Result<Built, Error> {
        let mut built = self.load_with(stop)?;
        if self.verify {
            built.verify()?;
        }
        Ok(built)
    }

    /// Loads the program, not verified yet ([`Built::verify`] does it):
    /// the object parsed, settings applied, maps made and filled, pinned
    /// maps restored, the engine chosen.
    pub fn load(&self) -> Result<Built, Error> {
        self.load_with(None)
    }

    /// [`HookSpec::load`], reading no more once `stop` is set.
    pub fn load_with(&self, stop: Option<&'static AtomicBool>) -> Result<Built, Error> {
        let name = self.object.name();
        let at = |cause: ObjectError| Error::Object {
            name: name.clone(),
            cause,
        };
        let data = self.object.bytes(stop)?;
        let custom = match &self.btf {
            BtfTarget::File(path) => {
                let bytes = crate::files::object(path, stop)?;
                let origin = path.display().to_string();
                Some(obj::CoreTarget::from_bytes(&bytes, &origin).map_err(Error::Btf)?)
            }
            BtfTarget::Kernel | BtfTarget::Bundled => None,
        };
        let mut object = match (&custom, &self.btf) {
            (Some(t), _) => obj::Object::parse_with(&data, Some(t)),
            (None, BtfTarget::Bundled) => {
                obj::Object::parse_with(&data, Some(obj::CoreTarget::bundled()))
            }
            // The kernel's BTF (or the bundled types), read only if needed.
            _ => obj::Object::parse(&data),
        }
        .map_err(|e| at(e.into()))?;
        let mut opts = LoadOptions {
            ncpus: self.cpus.max(1),
            ..LoadOptions::default()
        };
        self.settings.apply(&mut object, &mut opts)?;
        let image = Image::load(object, &opts).map_err(|e| at(e.into()))?;
        let prog = image
            .find_program(self.program.as_deref())
            .map_err(|e| at(ObjectError::Program(e)))?;
        let mut hook = Hook::new(image, prog, 0).map_err(|e| at(e.into()))?;
        hook.set_counting(self.count_memory);
        let mut notes = Vec::new();
        if self.engine == profile::VmEngine::Jit
            && let Err(e) = hook.enable_jit()
        {
            notes.push(e.to_string());
        }
        if let Some(fib) = &self.fib {
            let text = crate::files::text(fib, stop)?;
            hook.env_mut().fib = runtime::fib::Fib::parse(&text).map_err(|reason| Error::Fib {
                path: fib.clone(),
                reason,
            })?;
        }
        if let Some(dir) = &self.pin {
            crate::pin::load(&mut hook, dir)?;
        }
        self.contents.fill(&hook, stop)?;
        Ok(Built { hook, notes })
    }

    /// Saves the maps pinned by name into [`HookSpec::pin`] (nothing
    /// without it), for the next run to restore.
    pub fn save_pins(&self, hook: &Hook) -> Result<(), Error> {
        match &self.pin {
            Some(dir) => crate::pin::save(hook, dir),
            None => Ok(()),
        }
    }
}

impl Built {
    /// Verifies the programs the hook is about to run
    /// ([`Hook::verify_for_run`]): a verified program then runs without
    /// per-access checks; a note says why run-time checks stay, when they do.
    pub fn verify(&mut self) -> Result<(), Error> {
        if let Some(note) = self.hook.verify_for_run().map_err(Error::Rejected)? {
            self.notes.push(note);
        }
        Ok(())
    }
}
