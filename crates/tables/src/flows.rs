//! Ended flows as a table (`sluice monitor flows --out-table`, Python's
//! `sluice.flows(...).records`): one row per flow record, each column
//! named as the IPFIX information element (IANA's registry, RFC 7012)
//! that carries it in sluice's export (docs/ipfix.md), as the JSON lines
//! of `sluice monitor flows --json` name them.

use std::net::IpAddr;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, RecordBatch, StringArray, TimestampMillisecondArray, TimestampNanosecondArray,
    UInt8Array, UInt16Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use engine::Ended;

use crate::TableError;
use crate::packets::utc;

/// The columns, in order: name, type, nullable.
pub fn schema() -> Schema {
    let ms = utc(TimeUnit::Millisecond);
    let ns = utc(TimeUnit::Nanosecond);
    Schema::new(vec![
        Field::new("sourceIPv4Address", DataType::Utf8, true),
        Field::new("destinationIPv4Address", DataType::Utf8, true),
        Field::new("sourceIPv6Address", DataType::Utf8, true),
        Field::new("destinationIPv6Address", DataType::Utf8, true),
        Field::new("protocolIdentifier", DataType::UInt8, false),
        Field::new("sourceTransportPort", DataType::UInt16, true),
        Field::new("destinationTransportPort", DataType::UInt16, true),
        Field::new("icmpTypeCodeIPv4", DataType::UInt16, true),
        Field::new("icmpTypeCodeIPv6", DataType::UInt16, true),
        Field::new("packetDeltaCount", DataType::UInt64, false),
        Field::new("octetDeltaCount", DataType::UInt64, false),
        Field::new("flowStartMilliseconds", ms.clone(), false),
        Field::new("flowEndMilliseconds", ms, false),
        Field::new("flowStartNanoseconds", ns.clone(), false),
        Field::new("flowEndNanoseconds", ns, false),
        Field::new("tcpControlBits", DataType::UInt8, false),
        Field::new("flowEndReason", DataType::UInt8, false),
    ])
}

/// How a flow's key is exported: its address family, and whether its
/// destination port is ICMP's type and code (IPv4's ICMP, IPv6's ICMPv6).
struct Shape {
    v4: bool,
    icmp: bool,
}

fn shape(e: &Ended) -> Shape {
    let k = &e.flow.key;
    let v4 = matches!((k.src, k.dst), (IpAddr::V4(_), IpAddr::V4(_)));
    let icmp = (v4 && k.protocol == 1) || (!v4 && k.protocol == 58);
    Shape { v4, icmp }
}

/// A column of `ended`, one value per flow.
fn column<T>(ended: &[Ended], f: impl Fn(&Ended, &Shape) -> T) -> Vec<T> {
    ended.iter().map(|e| f(e, &shape(e))).collect()
}

/// Nanoseconds since the epoch as Arrow's (signed) count.
fn signed(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

/// `ended` as one record batch, in the order given. An IPv4 flow has its
/// IPv6 address columns null and the other way round; an ICMP flow has
/// no ports but `icmpTypeCodeIPv4` (or `IPv6`): type * 256 + code.
pub fn flows(ended: &[Ended]) -> Result<RecordBatch, TableError> {
    let addr = |v4: bool, a: IpAddr| v4.then(|| a.to_string());
    let src4 = column(ended, |e, s| addr(s.v4, e.flow.key.src));
    let dst4 = column(ended, |e, s| addr(s.v4, e.flow.key.dst));
    let src6 = column(ended, |e, s| addr(!s.v4, e.flow.key.src));
    let dst6 = column(ended, |e, s| addr(!s.v4, e.flow.key.dst));
    let port = |icmp: bool, p: u16| (!icmp).then_some(p);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(src4)),
        Arc::new(StringArray::from(dst4)),
        Arc::new(StringArray::from(src6)),
        Arc::new(StringArray::from(dst6)),
        Arc::new(UInt8Array::from(column(ended, |e, _| e.flow.key.protocol))),
        Arc::new(UInt16Array::from(column(ended, |e, s| {
            port(s.icmp, e.flow.key.src_port)
        }))),
        Arc::new(UInt16Array::from(column(ended, |e, s| {
            port(s.icmp, e.flow.key.dst_port)
        }))),
        Arc::new(UInt16Array::from(column(ended, |e, s| {
            (s.icmp && s.v4).then_some(e.flow.key.dst_port)
        }))),
        Arc::new(UInt16Array::from(column(ended, |e, s| {
            (s.icmp && !s.v4).then_some(e.flow.key.dst_port)
        }))),
        Arc::new(UInt64Array::from(column(ended, |e, _| e.flow.packets))),
        Arc::new(UInt64Array::from(column(ended, |e, _| e.flow.bytes))),
        Arc::new(
            TimestampMillisecondArray::from(column(ended, |e, _| {
                signed(e.flow.first_ns / 1_000_000)
            }))
            .with_timezone("UTC"),
        ),
        Arc::new(
            TimestampMillisecondArray::from(column(ended, |e, _| {
                signed(e.flow.last_ns / 1_000_000)
            }))
            .with_timezone("UTC"),
        ),
        Arc::new(
            TimestampNanosecondArray::from(column(ended, |e, _| signed(e.flow.first_ns)))
                .with_timezone("UTC"),
        ),
        Arc::new(
            TimestampNanosecondArray::from(column(ended, |e, _| signed(e.flow.last_ns)))
                .with_timezone("UTC"),
        ),
        Arc::new(UInt8Array::from(column(ended, |e, _| e.flow.tcp_flags))),
        Arc::new(UInt8Array::from(column(ended, |e, _| e.reason.code()))),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema()), columns)?)
}
