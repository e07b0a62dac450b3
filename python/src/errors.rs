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
    "The verifier rejected the program; the message says where and why."
);

/// Adds the exceptions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ObjectError", py.get_type::<ObjectError>())?;
    m.add("SourceError", py.get_type::<SourceError>())?;
    m.add("VerifierError", py.get_type::<VerifierError>())?;
    Ok(())
}

/// The exception for `e`.
pub(crate) fn to_py(e: engine::Error) -> PyErr {
    let message = e.to_string();
    match e {
        engine::Error::Object { .. } => ObjectError::new_err(message),
        engine::Error::Rejected(_) => VerifierError::new_err(message),
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

/// The exception for `e`, a table not made or not written.
pub(crate) fn table_error(e: tables::TableError) -> PyErr {
    Error::new_err(e.to_string())
}
