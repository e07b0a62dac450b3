//! The per-packet table of a run (`sluice run --out-table`, Python's
//! `RunResult.packets`): [`packets`] wraps the engine's [`PacketTable`]
//! columns in Arrow arrays without copying them (a `Vec` becomes an Arrow
//! buffer as it is).
//!
//! To add a column: a field in [`schema`] and its array, in the same
//! place, in [`packets`].

use std::sync::Arc;

use arrow_array::types::{UInt8Type, UInt16Type, UInt32Type};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, DictionaryArray, PrimitiveArray, RecordBatch, StringArray,
    TimestampNanosecondArray, UInt8Array, UInt32Array, UInt64Array,
};
use arrow_buffer::{BooleanBufferBuilder, Buffer, NullBuffer, ScalarBuffer};
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

/// The columns, in order: name, type, nullable; `regions` the kinds of
/// region memory accesses were counted in (none without counting), each
/// giving `REGION_loads` and `REGION_stores` after `helper_calls`.
pub fn schema(regions: &[&str]) -> Schema {
    let fixed = [
        Field::new("index", DataType::UInt64, false),
        Field::new("timestamp", utc(TimeUnit::Nanosecond), false),
        Field::new("length", DataType::UInt32, false),
        Field::new("verdict", dict(DataType::UInt8), false),
        Field::new("redirect", dict(DataType::UInt16), true),
        Field::new("instructions", DataType::UInt64, false),
        Field::new("helper_calls", DataType::UInt64, false),
    ];
    let memory = regions.iter().flat_map(|r| {
        [
            Field::new(format!("{r}_loads"), DataType::UInt64, false),
            Field::new(format!("{r}_stores"), DataType::UInt64, false),
        ]
    });
    let error = Field::new("error", dict(DataType::UInt32), true);
    Schema::new(
        fixed
            .into_iter()
            .chain(memory)
            .chain([error])
            .collect::<Vec<_>>(),
    )
}

/// `t` as one record batch: `index` (from 1), `timestamp` (ns, UTC),
/// `length`, `verdict`, `redirect` (null without one), `instructions`,
/// `helper_calls`, with memory counting `REGION_loads`/`REGION_stores`
/// per region, and `error` (the message a packet's run stopped with, null
/// otherwise). The numeric columns are `t`'s vectors, moved, not copied.
pub fn packets(t: PacketTable) -> Result<RecordBatch, TableError> {
    let rows = t.len();
    // Timestamps are u64 ns; Arrow's are i64: the same buffer, reinterpreted.
    let ts = ScalarBuffer::<i64>::new(Buffer::from_vec(t.timestamp_ns), 0, rows);
    let verdict = DictionaryArray::<UInt8Type>::try_new(
        UInt8Array::new(t.verdict.into(), None),
        Arc::new(StringArray::from(t.verdict_names)),
    )?;
    let redirect = DictionaryArray::<UInt16Type>::try_new(
        sparse::<UInt16Type>(rows, &t.redirects),
        Arc::new(StringArray::from(t.redirect_names)),
    )?;
    let error = DictionaryArray::<UInt32Type>::try_new(
        sparse::<UInt32Type>(rows, &t.errors),
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
    Ok(RecordBatch::try_new(Arc::new(schema(&regions)), columns)?)
}

/// A column of `rows` codes, null but at the rows `entries` lists. The
/// values start as zeroed memory the system hands out untouched, so a
/// column of few entries costs about its validity bitmap (a bit a row).
fn sparse<K: ArrowPrimitiveType>(rows: usize, entries: &[(usize, K::Native)]) -> PrimitiveArray<K> {
    let mut values = vec![K::Native::default(); rows];
    let mut valid = BooleanBufferBuilder::new(rows);
    valid.append_n(rows, false);
    for &(row, code) in entries {
        if row < rows {
            values[row] = code;
            valid.set_bit(row, true);
        }
    }
    PrimitiveArray::new(values.into(), Some(NullBuffer::new(valid.finish())))
}
