//! Tables handed to Python: the record batches the `tables` crate makes
//! (a run's packets, without copying the engine's columns; flows, RTT
//! samples, trajectory samples, a profile's packets) go to pyarrow (or
//! polars, DuckDB: any reader of the Arrow PyCapsule interface) through
//! the Arrow C stream interface ([`PacketStream`], [`pyarrow_table`]).

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// `batch` as a `pyarrow.Table` (its buffers shared, not copied).
pub(crate) fn pyarrow_table<'py>(
    py: Python<'py>,
    batch: &RecordBatch,
) -> PyResult<Bound<'py, PyAny>> {
    let stream = PacketStream::new(batch.clone());
    py.import("pyarrow")?.call_method1("table", (stream,))
}

/// Per column, the address of its values' buffer (for a dictionary column,
/// its codes'), where the Rust side allocated it: what pyarrow's
/// `Array.buffers()[1].address` gives when the table reached it uncopied.
pub(crate) fn buffer_addresses(batch: &RecordBatch) -> Vec<(String, usize)> {
    let schema = batch.schema();
    schema
        .fields()
        .iter()
        .zip(batch.columns())
        .filter_map(|(field, column)| {
            let data = column.to_data();
            let values = data.buffers().first()?;
            Some((field.name().clone(), values.as_ptr() as usize))
        })
        .collect()
}

/// A table (a run's packets, or any of sluice's tables), readable through
/// the Arrow PyCapsule interface (``pyarrow.table(stream)``). Each read
/// shares the same buffers: nothing is copied.
#[pyclass(module = "sluice", frozen)]
pub struct PacketStream {
    batch: RecordBatch,
}

impl PacketStream {
    pub(crate) fn new(batch: RecordBatch) -> PacketStream {
        PacketStream { batch }
    }
}

#[pymethods]
impl PacketStream {
    /// The table as an ``ArrowArrayStream`` PyCapsule (the Arrow PyCapsule
    /// interface). A requested schema other than the table's own is not
    /// supported.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batch = self.batch.clone();
        let reader = RecordBatchIterator::new([Ok(batch)], self.batch.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// Rows.
    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }
}
