//! A map as an Arrow record batch (`Map.to_arrow`): columns typed by the
//! key's and value's [`Shape`]s: a struct's members as columns, nested
//! structs as struct columns, arrays as fixed-size lists, integers at
//! their width, addresses, enum constants and MAC addresses as strings,
//! undescribed bytes as fixed-size binary. Per-CPU maps: a row per key
//! and CPU, with a `cpu` column.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, FixedSizeBinaryArray, FixedSizeListArray, Int8Array, Int16Array, Int32Array,
    Int64Array, RecordBatch, StringArray, StructArray, UInt8Array, UInt16Array, UInt32Array,
    UInt64Array,
};
use arrow_buffer::Buffer;
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema};
use engine::{HookMap, MapValue, Shape, Value};

/// The Arrow type of `shape`.
fn data_type(shape: &Shape) -> DataType {
    match shape {
        Shape::Int { size, signed } => match (size, signed) {
            (1, true) => DataType::Int8,
            (2, true) => DataType::Int16,
            (4, true) => DataType::Int32,
            (8, true) => DataType::Int64,
            (1, false) => DataType::UInt8,
            (2, false) => DataType::UInt16,
            (4, false) => DataType::UInt32,
            _ => DataType::UInt64,
        },
        Shape::Enum { .. } | Shape::Ipv4 | Shape::Ipv6 | Shape::Mac | Shape::Prefix { .. } => {
            DataType::Utf8
        }
        Shape::Bytes(n) => DataType::FixedSizeBinary(*n as i32),
        Shape::Array { elem, len, .. } => DataType::FixedSizeList(
            Arc::new(Field::new("item", data_type(elem), false)),
            *len as i32,
        ),
        Shape::Struct { members, .. } => DataType::Struct(fields(members)),
    }
}

fn fields(members: &[engine::Member]) -> Fields {
    members
        .iter()
        .map(|m| Field::new(&m.name, data_type(&m.shape), false))
        .collect()
}

fn int(v: &Value) -> i128 {
    match v {
        Value::Int(n) => *n,
        _ => 0,
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Int(n) => n.to_string(),
        Value::Text(t) => t.clone(),
        Value::Ip(ip) => ip.to_string(),
        Value::Prefix(ip, len) => format!("{ip}/{len}"),
        Value::Mac(m) => m
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
        other => format!("{other:?}"),
    }
}

/// The column of `values`, each laid out as `shape`.
fn column(shape: &Shape, values: &[&Value]) -> Result<ArrayRef, ArrowError> {
    macro_rules! ints {
        ($array:ty, $t:ty) => {
            Arc::new(<$array>::from(
                values.iter().map(|v| int(v) as $t).collect::<Vec<$t>>(),
            )) as ArrayRef
        };
    }
    Ok(match shape {
        Shape::Int { size, signed } => match (size, signed) {
            (1, true) => ints!(Int8Array, i8),
            (2, true) => ints!(Int16Array, i16),
            (4, true) => ints!(Int32Array, i32),
            (8, true) => ints!(Int64Array, i64),
            (1, false) => ints!(UInt8Array, u8),
            (2, false) => ints!(UInt16Array, u16),
            (4, false) => ints!(UInt32Array, u32),
            _ => ints!(UInt64Array, u64),
        },
        Shape::Enum { .. } | Shape::Ipv4 | Shape::Ipv6 | Shape::Mac | Shape::Prefix { .. } => {
            Arc::new(StringArray::from(
                values.iter().map(|v| text(v)).collect::<Vec<_>>(),
            ))
        }
        Shape::Bytes(n) => {
            let mut all = Vec::with_capacity(n * values.len());
            for v in values {
                match v {
                    Value::Bytes(b) if b.len() == *n => all.extend_from_slice(b),
                    _ => all.resize(all.len() + n, 0),
                }
            }
            Arc::new(FixedSizeBinaryArray::try_new_with_len(
                *n as i32,
                Buffer::from_vec(all),
                None,
                values.len(),
            )?)
        }
        Shape::Array { elem, len, .. } => {
            let items: Vec<&Value> = values
                .iter()
                .flat_map(|v| match v {
                    Value::Array(items) if items.len() == *len => items.iter().collect(),
                    _ => Vec::new(),
                })
                .collect();
            if items.len() != len * values.len() {
                return Err(ArrowError::InvalidArgumentError(
                    "an array value of another length".into(),
                ));
            }
            let field = Arc::new(Field::new("item", data_type(elem), false));
            Arc::new(FixedSizeListArray::try_new_with_length(
                field,
                *len as i32,
                column(elem, &items)?,
                None,
                values.len(),
            )?)
        }
        Shape::Struct { members, .. } => {
            let children = members
                .iter()
                .map(|m| column(&m.shape, &member_values(values, &m.name)))
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(StructArray::try_new_with_length(
                fields(members),
                children,
                None,
                values.len(),
            )?)
        }
    })
}

/// Member `name` of each struct value (a missing one reads as 0).
fn member_values<'a>(values: &[&'a Value], name: &str) -> Vec<&'a Value> {
    static ZERO: Value = Value::Int(0);
    values
        .iter()
        .map(|v| match v {
            Value::Struct(ms) => ms.iter().find(|(n, _)| n == name).map_or(&ZERO, |(_, v)| v),
            _ => &ZERO,
        })
        .collect()
}

/// The top-level columns of one side (`key` or `value`): a struct's
/// members, or one column named `side`.
fn side<'a>(
    side: &str,
    shape: &'a Shape,
    values: &[&'a Value],
) -> Vec<(String, &'a Shape, Vec<&'a Value>)> {
    match shape {
        Shape::Struct { members, .. } if !members.is_empty() => members
            .iter()
            .map(|m| (m.name.clone(), &m.shape, member_values(values, &m.name)))
            .collect(),
        _ => vec![(side.to_string(), shape, values.to_vec())],
    }
}

/// The map's entries as one record batch.
pub(crate) fn record_batch(map: &HookMap) -> Result<RecordBatch, ArrowError> {
    let entries = map.entries();
    let mut keys = Vec::new();
    let mut values = Vec::new();
    let mut cpus = Vec::new();
    for (k, v) in &entries {
        match v {
            MapValue::Shared(v) => {
                keys.push(k);
                values.push(v);
            }
            MapValue::PerCpu(vs) => {
                for (cpu, v) in vs.iter().enumerate() {
                    keys.push(k);
                    values.push(v);
                    cpus.push(cpu as u32);
                }
            }
        }
    }
    let key_cols = side("key", map.key_shape(), &keys);
    let value_cols = side("value", map.value_shape(), &values);
    let per_cpu = map.per_cpu().is_some();
    let taken = |name: &str, other: &[(String, &Shape, Vec<&Value>)]| {
        other.iter().any(|(n, _, _)| n == name) || (per_cpu && name == "cpu")
    };
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (prefix, cols, other) in [
        ("key", &key_cols, &value_cols),
        ("value", &value_cols, &key_cols),
    ] {
        for (name, shape, vals) in cols.iter() {
            let name = if name != prefix && taken(name, other) {
                format!("{prefix}.{name}")
            } else {
                name.clone()
            };
            fields.push(Field::new(name, data_type(shape), false));
            columns.push(column(shape, vals)?);
        }
        if prefix == "key" && per_cpu {
            fields.push(Field::new("cpu", DataType::UInt32, false));
            columns.push(Arc::new(UInt32Array::from(cpus.clone())));
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
}
