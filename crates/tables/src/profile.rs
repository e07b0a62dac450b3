//! A profile's packets as a table (`sluice profile --out-table`, Python's
//! `Profile.packets`): one row per packet that ran to a verdict, the
//! columns named as `sluice profile --per-packet`'s CSV names them.

use std::sync::Arc;

use arrow_array::builder::StringDictionaryBuilder;
use arrow_array::types::UInt8Type;
use arrow_array::{ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use engine::{PacketCost, Profile};

use crate::TableError;
use crate::packets::dict;

/// The columns, in order: name, type, nullable.
pub fn schema() -> Schema {
    let count = |name: &str| Field::new(name, DataType::UInt64, false);
    Schema::new(vec![
        count("seq"),
        Field::new("len", DataType::UInt32, false),
        count("insns"),
        count("branches"),
        count("taken"),
        count("helper_calls"),
        count("loads"),
        count("stores"),
        count("helper_reads"),
        count("helper_writes"),
        Field::new("verdict", dict(DataType::UInt8), false),
    ])
}

/// `p`'s packets as one record batch, in source order: `seq` (the
/// packet's position in the source, from 1), `len` (bytes), the counts
/// (instructions, conditional jumps and those taken, helper calls, the
/// program's loads and stores, helpers' reads and writes of program
/// memory) and the `verdict`.
pub fn profile(p: &Profile) -> Result<RecordBatch, TableError> {
    let col = |f: fn(&PacketCost) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(p.packets.iter().map(f)))
    };
    let mut verdict = StringDictionaryBuilder::<UInt8Type>::new();
    for c in &p.packets {
        verdict.append(c.verdict)?;
    }
    let columns: Vec<ArrayRef> = vec![
        col(|c| c.seq),
        Arc::new(UInt32Array::from_iter_values(
            p.packets.iter().map(|c| c.len),
        )),
        col(|c| c.insns),
        col(|c| c.branches),
        col(|c| c.taken),
        col(|c| c.helper_calls),
        col(|c| c.loads),
        col(|c| c.stores),
        col(|c| c.helper_reads),
        col(|c| c.helper_writes),
        Arc::new(verdict.finish()),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema()), columns)?)
}
