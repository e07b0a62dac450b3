//! The package's exceptions, and [`engine::Error`]s made into them: the
//! message is the one `sluice` prints after `sluice: `; the class says
//! what failed (the object, the packets' source, the verifier).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    sluice,
    Error,
    PyException,
    "An error of sluice's engine; its message is the one the `sluice` command line prints."
);
create_exception!(
    sluice,
    ObjectError,
    Error,
    "The object did not read or parse, or has no such program."
);
create_exception!(
    sluice,
    SourceError,
    Error,
    "The packets' source did not open: a capture not read, a generator spec refused."
);
create_exception!(
    sluice,
    VerifierError,
    Error,
    "The verifier rejected the program; the message says where and why. Attributes: ``program``, ``insn`` (the instruction at fault), ``line`` (its source line, ``FILE:LINE``, or None), ``explanation`` (why, with what to do), ``kernel_message`` (the kernel verifier's words)."
);

// Maps (prog.maps).
create_exception!(
    sluice,
    MapError,
    Error,
    "A map operation failed: no such map, a key or value that does not fit the map's layout (an unknown BTF field, a value too big), an update the map refuses (full, read-only), a run with more threads than the maps have CPUs."
);

/// Adds the exceptions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ObjectError", py.get_type::<ObjectError>())?;
    m.add("SourceError", py.get_type::<SourceError>())?;
    m.add("VerifierError", py.get_type::<VerifierError>())?;
    m.add("MapError", py.get_type::<MapError>())?;
    Ok(())
}

/// The exception for `e`.
pub(crate) fn to_py(e: engine::Error) -> PyErr {
    let message = e.to_string();
    match e {
        engine::Error::Object { .. } => ObjectError::new_err(message),
        engine::Error::Rejected(r) => rejected(&r, message),
        engine::Error::Source(_) => SourceError::new_err(message),
        _ => Error::new_err(message),
    }
}

/// The exception for `e`, an error reading or parsing the object itself.
pub(crate) fn object_error(e: engine::Error) -> PyErr {
    match e {
        engine::Error::Rejected(_) => to_py(e),
        _ => ObjectError::new_err(e.to_string()),
    }
}

/// A `sluice.VerifierError` for `r`, its fields as attributes.
fn rejected(r: &engine::Rejection, message: String) -> PyErr {
    Python::attach(|py| {
        let e = VerifierError::new_err(message);
        let value = e.value(py);
        let set = || -> PyResult<()> {
            value.setattr("program", &r.program)?;
            value.setattr("insn", r.insn)?;
            value.setattr("line", r.line.clone())?;
            value.setattr("explanation", &r.reason)?;
            value.setattr("kernel_message", &r.kernel)?;
            Ok(())
        };
        match set() {
            Ok(()) => e,
            Err(err) => err,
        }
    })
}

/// The `sluice.MapError` for `e`.
pub(crate) fn map_error(e: engine::MapError) -> PyErr {
    MapError::new_err(e.to_string())
}

/// The exception for `e`, a table not made or not written.
pub(crate) fn table_error(e: tables::TableError) -> PyErr {
    Error::new_err(e.to_string())
}
