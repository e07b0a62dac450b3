//! The per-packet table of a run (`sluice run --out-table`, Python's
//! `RunResult.packets`): [`packets`] wraps the engine's [`PacketTable`]
//! columns in Arrow arrays without copying them (a `Vec` becomes an Arrow
//! buffer as it is).
//!
//! To add a column: a field in [`schema`] and its array, in the same
//! place, in [`packets`].

use std::sync::Arc;

use arrow_array::types::{UInt8Type, UInt16Type};
use arrow_array::{
    ArrayRef, DictionaryArray, RecordBatch, StringArray, TimestampNanosecondArray, UInt8Array,
    UInt16Array, UInt32Array, UInt64Array,
};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use engine::PacketTable;

use crate::TableError;

/// A dictionary of strings keyed by `key`.
pub(crate) fn dict(key: DataType) -> DataType {
    DataType::Dictionary(Box::new(key), Box::new(DataType::Utf8))
}

/// A timestamp in `unit`, UTC.
pub(crate) fn utc(unit: TimeUnit) -> DataType {
    DataType::Timestamp(unit, Some("UTC".into()))
}

/// The columns, in order: name, type, nullable.
pub fn schema() -> Schema {
    Schema::new(vec![
        Field::new("index", DataType::UInt64, false),
        Field::new("timestamp", utc(TimeUnit::Nanosecond), false),
        Field::new("length", DataType::UInt32, false),
        Field::new("verdict", dict(DataType::UInt8), false),
        Field::new("redirect", dict(DataType::UInt16), true),
        Field::new("instructions", DataType::UInt64, false),
        Field::new("helper_calls", DataType::UInt64, false),
    ])
}

/// `t` as one record batch: `index` (from 1), `timestamp` (ns, UTC),
/// `length`, `verdict`, `redirect` (null without one), `instructions`,
/// `helper_calls`. The numeric columns are `t`'s vectors, moved, not
/// copied.
pub fn packets(t: PacketTable) -> Result<RecordBatch, TableError> {
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
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::new(t.index.into(), None)),
        Arc::new(TimestampNanosecondArray::new(ts, None).with_timezone("UTC")),
        Arc::new(UInt32Array::new(t.length.into(), None)),
        Arc::new(verdict),
        Arc::new(redirect),
        Arc::new(UInt64Array::new(t.instructions.into(), None)),
        Arc::new(UInt64Array::new(t.helper_calls.into(), None)),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema()), columns)?)
}
