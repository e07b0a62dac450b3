//! Shards from Python: [`plan`] cuts a capture list into [`Shard`]s
//! (whole files and byte ranges, docs/shards.md), [`check`] lists the
//! ranges whose start is not proven by the range before ([`Redo`]s, to
//! read again from their proven position). Shards, redos and positions
//! pickle (to bytes and back), to travel to a cluster's workers; a run
//! over one is `Program.run_shard` ([`crate::shard_result`]).

use engine::shards::{Boundary, Position, ShardError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use serde::{Deserialize, Serialize};

use crate::errors;

/// A piece of work over a capture list, from :func:`sluice.plan`.
#[pyclass(module = "sluice", frozen, eq)]
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Shard {
    pub(crate) shard: engine::shards::Shard,
    /// Its place in the plan.
    pub(crate) index: usize,
}

/// The function `name` of the native module, to rebuild a pickled object.
pub(crate) fn rebuild<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("sluice._sluice")?.getattr(name)
}

/// `(module function, (bytes,))`: what `__reduce__` gives.
pub(crate) fn reduce<'py>(
    py: Python<'py>,
    name: &str,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyTuple>> {
    let args = PyTuple::new(py, [PyBytes::new(py, bytes)])?;
    PyTuple::new(py, [rebuild(py, name)?, args.into_any()])
}

/// A `sluice.Error` for bytes that are not what `what` pickles to.
pub(crate) fn not_pickled(what: &str, e: impl std::fmt::Display) -> PyErr {
    errors::Error::new_err(format!("not a pickled {what}: {e}"))
}

/// `value` as a Python object, through JSON.
pub(crate) fn to_py_json<'py, T: Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| errors::Error::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

#[pymethods]
impl Shard {
    /// The records of ``path`` whose first byte lies in ``[start, end)``;
    /// ``size``: the file's size when planned; ``index``: its place in the plan.
    #[new]
    #[pyo3(signature = (path, start, end, size, index = 0))]
    fn new(path: std::path::PathBuf, start: u64, end: u64, size: u64, index: usize) -> Shard {
        Shard {
            shard: engine::shards::Shard {
                path,
                start,
                end,
                size,
            },
            index,
        }
    }

    /// The capture file.
    #[getter]
    fn path(&self) -> String {
        self.shard.path.display().to_string()
    }

    /// The first byte of the range.
    #[getter]
    fn start(&self) -> u64 {
        self.shard.start
    }

    /// The byte after the range.
    #[getter]
    fn end(&self) -> u64 {
        self.shard.end
    }

    /// The file's size when planned.
    #[getter]
    fn size(&self) -> u64 {
        self.shard.size
    }

    /// The shard's place in the plan (the part number of its outputs).
    #[getter]
    fn index(&self) -> usize {
        self.index
    }

    /// Whether the shard is its whole file.
    #[getter]
    fn whole(&self) -> bool {
        self.shard.is_whole()
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let bytes = serde_json::to_vec(self).map_err(|e| errors::Error::new_err(e.to_string()))?;
        reduce(py, "_shard_from_bytes", &bytes)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Shard({:?}, index={})",
            self.shard.describe(),
            self.index
        )
    }
}

/// A shard from a pickle's bytes.
#[pyfunction]
pub(crate) fn _shard_from_bytes(bytes: &[u8]) -> PyResult<Shard> {
    serde_json::from_slice(bytes).map_err(|e| not_pickled("sluice.Shard", e))
}

/// A shard argument: a :class:`Shard`, or any object (or dict) with
/// ``path``, ``start``, ``end``, ``size`` and ``index``.
pub(crate) fn shard_arg(obj: &Bound<'_, PyAny>) -> PyResult<Shard> {
    if let Ok(s) = obj.cast::<Shard>() {
        return Ok(s.get().clone());
    }
    let field = |name: &str| -> PyResult<Bound<'_, PyAny>> {
        match obj.cast::<PyDict>() {
            Ok(d) => d.get_item(name)?.ok_or_else(|| {
                errors::Error::new_err(format!(
                    "shard: no `{name}` (path, start, end, size, index)"
                ))
            }),
            Err(_) => obj.getattr(name),
        }
    };
    let path: std::path::PathBuf = field("path")?.extract()?;
    let index = match field("index") {
        Ok(i) => i.extract()?,
        Err(_) => 0,
    };
    Ok(Shard::new(
        path,
        field("start")?.extract()?,
        field("end")?.extract()?,
        field("size")?.extract()?,
        index,
    ))
}

/// A position argument (``proven=``): ``None``, a dict as
/// :attr:`Redo.position` gives it, or its JSON text.
pub(crate) fn position_arg(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Position>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    let text: String = match obj.cast::<PyString>() {
        Ok(s) => s.to_string(),
        Err(_) => obj
            .py()
            .import("json")?
            .call_method1("dumps", (obj,))?
            .extract()?,
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        errors::Error::new_err(format!(
            "proven=: not a position (a dict as Redo.position gives it): {e}"
        ))
    })
}

/// A range to read again, from :func:`sluice.check`: run
/// ``prog.run_shard(redo.shard, proven=redo.position)``.
#[pyclass(module = "sluice", frozen)]
#[derive(Clone, Serialize, Deserialize)]
pub struct Redo {
    shard: Shard,
    position: Position,
}

#[pymethods]
impl Redo {
    /// The range's place in the plan.
    #[getter]
    fn index(&self) -> usize {
        self.shard.index
    }

    /// The range, a :class:`Shard`.
    #[getter]
    fn shard(&self) -> Shard {
        self.shard.clone()
    }

    /// The proven position to read it from (where the range before it
    /// ended): a dict of ``offset`` and ``state``.
    #[getter]
    fn position<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py_json(py, &self.position)
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let bytes = serde_json::to_vec(self).map_err(|e| errors::Error::new_err(e.to_string()))?;
        reduce(py, "_redo_from_bytes", &bytes)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Redo({:?}, index={}, from offset {})",
            self.shard.shard.describe(),
            self.shard.index,
            self.position.offset
        )
    }
}

/// A redo from a pickle's bytes.
#[pyfunction]
pub(crate) fn _redo_from_bytes(bytes: &[u8]) -> PyResult<Redo> {
    serde_json::from_slice(bytes).map_err(|e| not_pickled("sluice.Redo", e))
}

/// The exception for a capture list not planned or boundaries not checked.
fn shard_error(e: ShardError) -> PyErr {
    match e {
        ShardError::BadSplit { .. } | ShardError::NotContiguous { .. } => {
            errors::Error::new_err(e.to_string())
        }
        _ => errors::SourceError::new_err(e.to_string()),
    }
}

/// Cuts a capture list into shards, as ``sluice shards`` does: ``inputs``
/// a path or glob pattern (``"traces/*.pcap"``), or a list of them, in
/// that order (a pattern's matches sorted); each file of at most
/// ``split`` bytes one shard, a larger one byte ranges of about that size
/// (``split``: bytes, or text such as ``"64M"``; ``None``: whole files).
/// Returns a list of :class:`Shard`, each with its ``index``. Raises
/// ``sluice.SourceError`` for a file not found or not a regular file, a
/// pattern matching nothing.
#[pyfunction]
#[pyo3(signature = (inputs, split = None))]
pub(crate) fn plan(
    py: Python<'_>,
    inputs: &Bound<'_, PyAny>,
    split: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<Shard>> {
    let os = py.import("os")?;
    let one =
        |o: &Bound<'_, PyAny>| -> PyResult<String> { os.call_method1("fspath", (o,))?.extract() };
    let names: Vec<String> = match one(inputs) {
        Ok(name) => vec![name],
        Err(_) => inputs
            .try_iter()?
            .map(|o| one(&o?))
            .collect::<PyResult<_>>()?,
    };
    let split = match split {
        None => u64::MAX,
        Some(s) if s.is_none() => u64::MAX,
        Some(s) => match s.extract::<String>() {
            Ok(text) => engine::shards::parse_split(&text).map_err(shard_error)?,
            Err(_) => match s.extract::<u64>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(errors::Error::new_err(
                        "split=: bytes (more than 0), or text such as \"64M\"",
                    ));
                }
            },
        },
    };
    let shards = py
        .detach(|| engine::shards::plan(&names, split))
        .map_err(shard_error)?;
    Ok(shards
        .into_iter()
        .enumerate()
        .map(|(index, shard)| Shard { shard, index })
        .collect())
}

/// Checks that every range of a plan was read exactly: ``results`` (the
/// runs over every shard, in plan order: :class:`ShardResult`, or any
/// result with a ``_boundary_bytes()``: the range's boundary as JSON or
/// CBOR) each begin where the range before
/// them ended. Returns the :class:`Redo` of each range that did not (its
/// proven position: read it again with ``proven=``), empty when every
/// range is proven; check again after the re-reads.
#[pyfunction]
pub(crate) fn check(results: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<Redo>> {
    let mut boundaries = Vec::with_capacity(results.len());
    let mut indexes = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        let bytes: Vec<u8> = r.call_method0("_boundary_bytes")?.extract()?;
        // JSON, as this module's results give it; CBOR as another's may.
        let b: Boundary = match serde_json::from_slice(&bytes) {
            Ok(b) => b,
            Err(e) => ciborium::from_reader(&bytes[..]).map_err(|_| not_pickled("boundary", e))?,
        };
        boundaries.push(b);
        indexes.push(match r.getattr("index") {
            Ok(index) => index.extract()?,
            Err(_) => i,
        });
    }
    let redo = engine::shards::check(&boundaries).map_err(shard_error)?;
    Ok(redo
        .into_iter()
        .map(|r| Redo {
            shard: Shard {
                shard: r.shard,
                index: indexes[r.index],
            },
            position: r.from,
        })
        .collect())
}
