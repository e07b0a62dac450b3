//! [`FilterResult`]: what `Filter.run` (and `Filter.merge`) gives: the
//! report of `sluice filter --json` and the matching packets as an Arrow
//! table.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, TimestampNanosecondArray, UInt32Array, UInt64Array};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, TimeUnit};
use engine::{FilterReport, MatchTable};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::table::PacketStream;

/// The result of :meth:`Filter.run`.
#[pyclass(module = "sluice", frozen)]
pub struct FilterResult {
    /// The report as `sluice filter --json` prints it.
    json: String,
    read: u64,
    matched: u64,
    stopped: bool,
    table: RecordBatch,
}

impl FilterResult {
    pub(crate) fn new(mut report: FilterReport) -> PyResult<FilterResult> {
        let table = match_batch(std::mem::take(&mut report.matches))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let json =
            serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(FilterResult {
            json,
            read: report.read,
            matched: report.matched,
            stopped: report.stopped,
            table,
        })
    }
}

/// The matching packets' columns as one record batch (the vectors moved).
fn match_batch(t: MatchTable) -> Result<RecordBatch, ArrowError> {
    let rows = t.len();
    let utc = Some("UTC".into());
    let schema = Schema::new(vec![
        Field::new("index", DataType::UInt64, false),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Nanosecond, utc),
            false,
        ),
        Field::new("length", DataType::UInt32, false),
        Field::new("wire_length", DataType::UInt32, false),
    ]);
    let ts = ScalarBuffer::<i64>::new(Buffer::from_vec(t.timestamp_ns), 0, rows);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::new(t.index.into(), None)),
        Arc::new(TimestampNanosecondArray::new(ts, None).with_timezone("UTC")),
        Arc::new(UInt32Array::new(t.length.into(), None)),
        Arc::new(UInt32Array::new(t.wire_length.into(), None)),
    ];
    RecordBatch::try_new(Arc::new(schema), columns)
}

#[pymethods]
impl FilterResult {
    /// The report as a dict: what ``sluice filter -r F EXPR --json``
    /// prints (input, expression, engine, read, matched, written,
    /// programs per link type, ...).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.json,))
    }

    /// Packets read.
    #[getter]
    fn read(&self) -> u64 {
        self.read
    }

    /// Packets the filter matched.
    #[getter]
    fn matched(&self) -> u64 {
        self.matched
    }

    /// Whether a signal (Ctrl-C) stopped it before the source's end.
    #[getter]
    fn stopped(&self) -> bool {
        self.stopped
    }

    /// The matching packets, a ``pyarrow.Table``: ``index`` (the packet's
    /// position in the source, from 1), ``timestamp``, ``length`` (bytes
    /// filtered, as captured) and ``wire_length``.
    #[getter]
    fn packets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = PacketStream::new(self.table.clone());
        py.import("pyarrow")?.call_method1("table", (stream,))
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.FilterResult(read={}, matched={})",
            self.read, self.matched
        )
    }
}
