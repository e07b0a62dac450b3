//! [`Object`]: an eBPF ELF object (a path, or its bytes), parsed once to
//! list its programs; [`Object::program`] picks one as `--prog` does.

use std::path::PathBuf;

use std::collections::HashMap;

use engine::{HookSpec, MapInfo, MapValue, ObjectError, ObjectSource, Value};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict};

use crate::errors::{self, MapError};
use crate::maps::info_dict;
use crate::program::Program;
use crate::values::{from_py, map_value_from_py};

/// An eBPF object file built by ``clang -target bpf``.
///
/// ``Object(path)`` reads the file (a ``str`` or ``os.PathLike``);
/// ``Object(data, name="prog.o")`` takes its bytes (``bytes`` or
/// ``bytearray``), ``name`` naming it in reports and errors. A file that
/// is not an eBPF ELF object raises ``sluice.ObjectError`` with the
/// message of the ``sluice`` command line.
#[pyclass(module = "sluice", frozen)]
pub struct Object {
    source: ObjectSource,
    programs: Vec<String>,
    maps: Vec<MapInfo>,
}

#[pymethods]
impl Object {
    #[new]
    #[pyo3(signature = (source, name = None))]
    fn new(py: Python<'_>, source: &Bound<'_, PyAny>, name: Option<String>) -> PyResult<Object> {
        let source = if let Ok(b) = source.cast::<PyBytes>() {
            bytes_source(name, b.as_bytes().to_vec())
        } else if let Ok(b) = source.cast::<PyByteArray>() {
            bytes_source(name, b.to_vec())
        } else {
            ObjectSource::Path(source.extract::<PathBuf>()?)
        };
        let (programs, maps) = py
            .detach(|| contents(&source))
            .map_err(errors::object_error)?;
        Ok(Object {
            source,
            programs,
            maps,
        })
    }

    /// What reports and errors call the object: its path, or the name given
    /// with its bytes.
    #[getter]
    fn name(&self) -> String {
        self.source.name()
    }

    /// The names of the object's programs (its functions in program
    /// sections), in the object's order.
    #[getter]
    fn programs(&self) -> Vec<String> {
        self.programs.clone()
    }

    /// The object's maps as it declares them, in its order: dicts
    /// ``{"name", "type" (as bpftool names it), "key_size", "value_size",
    /// "max_entries" (before ``map_size=``), "flags", "cpus"}``.
    #[getter]
    fn maps<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.maps.iter().map(|m| info_dict(py, m)).collect()
    }

    /// The program ``name``, loaded with its maps; without a name, the
    /// object's only runnable program. Raises ``sluice.ObjectError`` when
    /// there is no such program, or several and none named (the command
    /// line's ``--prog`` messages).
    ///
    /// Before loading, as ``sluice run`` takes them: ``set`` sets globals
    /// (``{"rate_pps": 1000}``: ``--set NAME=VALUE``), ``map_size`` maps'
    /// max_entries (``{"flows": 4096}``: ``--map-size NAME=N``),
    /// ``map_size_default`` the size of maps that declare 0
    /// (``--map-size-default``); a global or map the object lacks raises
    /// ``sluice.ObjectError`` with the command line's message. ``maps``:
    /// contents written after loading (``{"map": {key: value}}``, keys and
    /// values as :class:`Map` takes them; ``sluice.MapError`` when one does
    /// not fit). ``cpus``: the CPUs per-CPU maps hold a value for.
    #[pyo3(signature = (
        name = None, *, set = None, map_size = None, map_size_default = None, maps = None,
        cpus = 1
    ))]
    #[allow(clippy::too_many_arguments)]
    fn program(
        &self,
        py: Python<'_>,
        name: Option<String>,
        set: Option<HashMap<String, i128>>,
        map_size: Option<HashMap<String, i128>>,
        map_size_default: Option<u32>,
        maps: Option<&Bound<'_, PyDict>>,
        cpus: u32,
    ) -> PyResult<Program> {
        let mut hook = HookSpec::with_object(self.source.clone());
        hook.program = name;
        hook.cpus = cpus.max(1);
        let pairs = |m: Option<HashMap<String, i128>>| -> Vec<String> {
            let mut v: Vec<String> = m
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            v.sort();
            v
        };
        hook.settings.set = pairs(set);
        hook.settings.map_size = pairs(map_size);
        hook.settings.map_size_default = map_size_default;
        let initial = initial_contents(maps)?;
        py.detach(|| Program::new(hook, initial))
    }

    fn __repr__(&self) -> String {
        format!("sluice.Object({:?})", self.source.name())
    }
}

fn bytes_source(name: Option<String>, bytes: Vec<u8>) -> ObjectSource {
    let name = name.unwrap_or_else(|| "<bytes>".to_string());
    ObjectSource::Bytes { name, bytes }
}

/// The names of the programs of the object `source` holds, and its maps.
fn contents(source: &ObjectSource) -> Result<(Vec<String>, Vec<MapInfo>), engine::Error> {
    let data = source.bytes(None)?;
    let object = engine::Object::parse(&data).map_err(|e| engine::Error::Object {
        name: source.name(),
        cause: ObjectError::Parse(e),
    })?;
    let programs = object.programs.iter().map(|p| p.name.clone()).collect();
    Ok((programs, MapInfo::of_object(&object)))
}

/// `maps=`: `{map: {key: value}}`, converted (per-CPU or not is known
/// only once loaded: a list is taken as per-CPU values there).
fn initial_contents(maps: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Value, MapValue)>> {
    let mut out = Vec::new();
    let Some(maps) = maps else {
        return Ok(out);
    };
    for (name, entries) in maps.iter() {
        let name: String = name.extract()?;
        let entries = entries.cast_into::<PyDict>().map_err(|_| {
            MapError::new_err(format!(
                "maps={{{name:?}: ...}}: the entries are a dict {{key: value}}"
            ))
        })?;
        for (k, v) in entries.iter() {
            out.push((name.clone(), from_py(&k)?, map_value_from_py(&v, true)?));
        }
    }
    Ok(out)
}
