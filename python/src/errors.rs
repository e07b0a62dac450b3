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
    FilterError,
    Error,
    "A tcpdump expression did not compile (libpcap's message), or packets could not be filtered."
);
create_exception!(
    sluice,
    TcError,
    Error,
    "A tc configuration did not load: a line tc would refuse, no qdisc, no device to take packets."
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

// Runs over shards (Program.merge).
create_exception!(
    sluice,
    MergeError,
    Error,
    "Runs over shards not merged: a range whose start is not proven (sluice.check lists it), a range missing, a policy for no map or not a policy."
);

/// Adds the exceptions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ObjectError", py.get_type::<ObjectError>())?;
    m.add("SourceError", py.get_type::<SourceError>())?;
    m.add("VerifierError", py.get_type::<VerifierError>())?;
    m.add("MapError", py.get_type::<MapError>())?;
    m.add("FilterError", py.get_type::<FilterError>())?;
    m.add("TcError", py.get_type::<TcError>())?;
    m.add("MergeError", py.get_type::<MergeError>())?;
    Ok(())
}

/// The exception for `e`.
pub(crate) fn to_py(e: engine::Error) -> PyErr {
    let message = e.to_string();
    match e {
        engine::Error::Object { .. } => ObjectError::new_err(message),
        engine::Error::Rejected(r) => rejected(&r, message),
        engine::Error::Source(_) => SourceError::new_err(message),
        engine::Error::Filter { .. } | engine::Error::Expr { .. } | engine::Error::FilterRun(_) => {
            FilterError::new_err(message)
        }
        engine::Error::Tc(_) => TcError::new_err(message),
        engine::Error::Merge(_) => MergeError::new_err(message),
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

/// The command line's message for a capture that ended early (a cut or
/// corrupt record) after `packets` packets: `None` when it did not.
pub(crate) fn ended_early(source_error: Option<&str>, packets: u64) -> Option<String> {
    source_error.map(|e| format!("the capture ended early after {packets} packets: {e}"))
}

/// The end of a run: its result `T`, or the exception to raise. A signal
/// handler's exception (`KeyboardInterrupt`) comes first, with the partial
/// result as its `result` when the run gave one; then a capture that
/// ended early (`early`, the message): a `SourceError`, the result of the
/// packets before it as its `result`.
pub(crate) fn finish<T>(
    py: Python<'_>,
    result: PyResult<(T, Option<String>)>,
    interrupt: Option<PyErr>,
) -> PyResult<Py<T>>
where
    T: pyo3::PyClass + Into<pyo3::PyClassInitializer<T>>,
{
    let attach = |e: PyErr, obj: &Py<T>| {
        let _ = e.value(py).setattr("result", obj.clone_ref(py));
        e
    };
    match (result, interrupt) {
        (Err(_), Some(interrupt)) => Err(interrupt),
        (Err(e), None) => Err(e),
        (Ok((value, early)), interrupt) => {
            let obj = Py::new(py, value)?;
            if let Some(interrupt) = interrupt {
                return Err(attach(interrupt, &obj));
            }
            match early {
                Some(message) => Err(attach(SourceError::new_err(message), &obj)),
                None => Ok(obj),
            }
        }
    }
}

/// The exception for `e`, a table not made or not written.
pub(crate) fn table_error(e: tables::TableError) -> PyErr {
    Error::new_err(e.to_string())
}
