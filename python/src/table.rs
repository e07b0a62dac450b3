//! The per-packet table as Arrow: [`record_batch`] wraps the engine's
//! [`PacketTable`] columns in Arrow arrays without copying them (a `Vec`
//! becomes an Arrow buffer as it is), and [`PacketStream`] hands them to
//! pyarrow (or polars, DuckDB: any reader of the Arrow PyCapsule
//! interface) through the Arrow C stream interface.

use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::types::{UInt8Type, UInt16Type, UInt32Type};
use arrow_array::{
    ArrayRef, DictionaryArray, RecordBatch, RecordBatchIterator, StringArray,
    TimestampNanosecondArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, TimeUnit};
use engine::PacketTable;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// The columns, in order: name, type, nullable; `regions` the kinds of
/// region memory accesses were counted in (none without counting), each
/// giving `REGION_loads` and `REGION_stores` after `helper_calls`.
fn schema(regions: &[&str]) -> Schema {
    let dict = |key: DataType| DataType::Dictionary(Box::new(key), Box::new(DataType::Utf8));
    let utc = Some("UTC".into());
    Schema::new(
        vec![
            Field::new("index", DataType::UInt64, false),
            Field::new(
                "timestamp",
                DataType::Timestamp(TimeUnit::Nanosecond, utc),
                false,
            ),
            Field::new("length", DataType::UInt32, false),
            Field::new("verdict", dict(DataType::UInt8), false),
            Field::new("redirect", dict(DataType::UInt16), true),
            Field::new("instructions", DataType::UInt64, false),
            Field::new("helper_calls", DataType::UInt64, false),
        ]
        .into_iter()
        .chain(regions.iter().flat_map(|r| {
            [
                Field::new(format!("{r}_loads"), DataType::UInt64, false),
                Field::new(format!("{r}_stores"), DataType::UInt64, false),
            ]
        }))
        .chain([Field::new("error", dict(DataType::UInt32), true)])
        .collect::<Vec<_>>(),
    )
}

/// `t` as one record batch; the numeric columns are `t`'s vectors,
/// moved, not copied.
pub(crate) fn record_batch(t: PacketTable) -> Result<RecordBatch, ArrowError> {
    let rows = t.len();
    // Timestamps are u64 ns; Arrow's are i64: the same buffer, reinterpreted.
    let ts = ScalarBuffer::<i64>::new(Buffer::from_vec(t.timestamp_ns), 0, rows);
    let verdict = DictionaryArray::<UInt8Type>::try_new(
        UInt8Array::new(t.verdict.into(), None),
        Arc::new(StringArray::from(t.verdict_names)),
    )?;
    let redirect = DictionaryArray::<UInt16Type>::try_new(
        UInt16Array::from(t.redirect),
        Arc::new(StringArray::from(t.redirect_names)),
    )?;
    let error = DictionaryArray::<UInt32Type>::try_new(
        UInt32Array::from(t.error),
        Arc::new(StringArray::from(t.error_messages)),
    )?;
    let regions: Vec<&str> = t.memory.iter().map(|m| m.region).collect();
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::new(t.index.into(), None)),
        Arc::new(TimestampNanosecondArray::new(ts, None).with_timezone("UTC")),
        Arc::new(UInt32Array::new(t.length.into(), None)),
        Arc::new(verdict),
        Arc::new(redirect),
        Arc::new(UInt64Array::new(t.instructions.into(), None)),
        Arc::new(UInt64Array::new(t.helper_calls.into(), None)),
    ];
    for m in t.memory {
        columns.push(Arc::new(UInt64Array::new(m.loads.into(), None)));
        columns.push(Arc::new(UInt64Array::new(m.stores.into(), None)));
    }
    columns.push(Arc::new(error));
    RecordBatch::try_new(Arc::new(schema(&regions)), columns)
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

/// A run's per-packet table, readable through the Arrow PyCapsule
/// interface (``pyarrow.table(stream)``). Each read shares the same
/// buffers: nothing is copied.
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
