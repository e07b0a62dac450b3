//! [`Object`]: an eBPF ELF object (a path, or its bytes), parsed once to
//! list its programs; [`Object::program`] picks one as `--prog` does.

use std::path::PathBuf;

use engine::{HookSpec, ObjectError, ObjectSource};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::errors;
use crate::program::Program;

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
        let programs = py
            .detach(|| program_names(&source))
            .map_err(errors::object_error)?;
        Ok(Object { source, programs })
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

    /// The program ``name``; without a name, the object's only runnable
    /// program. Raises ``sluice.ObjectError`` when there is no such
    /// program, or several and none named (the command line's
    /// ``--prog`` messages).
    #[pyo3(signature = (name = None))]
    fn program(&self, py: Python<'_>, name: Option<String>) -> PyResult<Program> {
        let mut hook = HookSpec::with_object(self.source.clone());
        hook.program = name;
        let chosen = py
            .detach(|| hook.load().map(|built| built.hook.program().name.clone()))
            .map_err(errors::object_error)?;
        hook.program = Some(chosen);
        Ok(Program::new(hook))
    }

    fn __repr__(&self) -> String {
        format!("sluice.Object({:?})", self.source.name())
    }
}

fn bytes_source(name: Option<String>, bytes: Vec<u8>) -> ObjectSource {
    let name = name.unwrap_or_else(|| "<bytes>".to_string());
    ObjectSource::Bytes { name, bytes }
}

/// The names of the programs of the object `source` holds.
fn program_names(source: &ObjectSource) -> Result<Vec<String>, engine::Error> {
    let data = source.bytes(None)?;
    let object = engine::Object::parse(&data).map_err(|e| engine::Error::Object {
        name: source.name(),
        cause: ObjectError::Parse(e),
    })?;
    Ok(object.programs.iter().map(|p| p.name.clone()).collect())
}
