//! Trajectory sampling's records as a table (`sluice monitor sample
//! --out-table`, Python's `sluice.sample(...).records`): one row per
//! record, in the order they came, the columns named as `sluice monitor
//! sample --json`'s lines name them. `record` says which kind a row is:
//! `flow` (a label's 5-tuple, before the label's first sample: `label`,
//! `src`, `dst`, `protocol`, `src_port`, `dst_port`; the rest null) or
//! `sample` (a sampled packet: `label`, `hash`, `time_ns`; the rest null).

use std::sync::Arc;

use arrow_array::{
    ArrayRef, RecordBatch, StringArray, UInt8Array, UInt16Array, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use engine::{FlowKey, SampleRecord};

use crate::TableError;

/// The columns, in order: name, type, nullable.
pub fn schema() -> Schema {
    Schema::new(vec![
        Field::new("record", DataType::Utf8, false),
        Field::new("label", DataType::UInt32, false),
        Field::new("hash", DataType::UInt32, true),
        Field::new("time_ns", DataType::UInt64, true),
        Field::new("src", DataType::Utf8, true),
        Field::new("dst", DataType::Utf8, true),
        Field::new("protocol", DataType::UInt8, true),
        Field::new("src_port", DataType::UInt16, true),
        Field::new("dst_port", DataType::UInt16, true),
    ])
}

/// A flow record's key, `None` for a sample.
fn flow(r: &SampleRecord) -> Option<&FlowKey> {
    match r {
        SampleRecord::Flow(f) => Some(&f.flow),
        SampleRecord::Sample(_) => None,
    }
}

/// `records` as one record batch, in the order given.
pub fn samples(records: &[SampleRecord]) -> Result<RecordBatch, TableError> {
    let sample = |r: &SampleRecord| match r {
        SampleRecord::Sample(s) => Some(*s),
        SampleRecord::Flow(_) => None,
    };
    let kind = records.iter().map(|r| match r {
        SampleRecord::Flow(_) => "flow",
        SampleRecord::Sample(_) => "sample",
    });
    let label = records.iter().map(|r| match r {
        SampleRecord::Flow(f) => f.label,
        SampleRecord::Sample(s) => s.label,
    });
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(kind)),
        Arc::new(UInt32Array::from_iter_values(label)),
        Arc::new(UInt32Array::from_iter(
            records.iter().map(|r| sample(r).map(|s| s.hash)),
        )),
        Arc::new(UInt64Array::from_iter(
            records.iter().map(|r| sample(r).map(|s| s.time_ns)),
        )),
        Arc::new(StringArray::from_iter(
            records.iter().map(|r| flow(r).map(|k| k.src.to_string())),
        )),
        Arc::new(StringArray::from_iter(
            records.iter().map(|r| flow(r).map(|k| k.dst.to_string())),
        )),
        Arc::new(UInt8Array::from_iter(
            records.iter().map(|r| flow(r).map(|k| k.protocol)),
        )),
        Arc::new(UInt16Array::from_iter(
            records.iter().map(|r| flow(r).map(|k| k.src_port)),
        )),
        Arc::new(UInt16Array::from_iter(
            records.iter().map(|r| flow(r).map(|k| k.dst_port)),
        )),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema()), columns)?)
}
