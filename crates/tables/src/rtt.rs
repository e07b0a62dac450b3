//! RTT samples as a table (`sluice monitor rtt --out-table`, Python's
//! `sluice.rtt(...).records`): one row per sample, the columns named as
//! `sluice monitor rtt --json`'s sample lines name them.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt16Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use engine::RttSample;

use crate::TableError;

/// The columns, in order: name, type, nullable.
pub fn schema() -> Schema {
    Schema::new(vec![
        Field::new("src", DataType::Utf8, false),
        Field::new("dst", DataType::Utf8, false),
        Field::new("src_port", DataType::UInt16, false),
        Field::new("dst_port", DataType::UInt16, false),
        Field::new("method", DataType::Utf8, false),
        Field::new("rtt_ns", DataType::UInt64, false),
        Field::new("time_ns", DataType::UInt64, false),
    ])
}

/// `samples` as one record batch, in the order given: the flow of the
/// packet that completed each sample (`src`, `dst`, `src_port`,
/// `dst_port`), its `method` (`handshake` or `timestamp`), `rtt_ns`, and
/// `time_ns` (the completing packet's time, ns since the epoch).
pub fn rtt(samples: &[RttSample]) -> Result<RecordBatch, TableError> {
    let col = |f: fn(&RttSample) -> u64| UInt64Array::from_iter_values(samples.iter().map(f));
    let port = |f: fn(&RttSample) -> u16| UInt16Array::from_iter_values(samples.iter().map(f));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            samples.iter().map(|s| s.key.src.to_string()),
        )),
        Arc::new(StringArray::from_iter_values(
            samples.iter().map(|s| s.key.dst.to_string()),
        )),
        Arc::new(port(|s| s.key.src_port)),
        Arc::new(port(|s| s.key.dst_port)),
        Arc::new(StringArray::from_iter_values(
            samples.iter().map(|s| s.method.name()),
        )),
        Arc::new(col(|s| s.rtt_ns)),
        Arc::new(col(|s| s.time_ns)),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema()), columns)?)
}
