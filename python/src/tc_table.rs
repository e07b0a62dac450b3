//! A tc run's filters and their counters in columns: [`filters`] reads
//! the report's `tc -s -j filter show` of every hook (the JSON `tc -j`
//! gives: an entry per filter, then one per rule with its `options` and
//! their `actions`) into one Arrow record batch, a row per action.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use engine::TcReport;
use serde_json::Value;

/// The columns, a vector each.
#[derive(Default)]
struct Columns {
    dev: Vec<String>,
    hook: Vec<String>,
    chain: Vec<Option<u32>>,
    prio: Vec<Option<u32>>,
    protocol: Vec<Option<String>>,
    kind: Vec<Option<String>>,
    handle: Vec<Option<String>>,
    order: Vec<Option<u32>>,
    action: Vec<Option<String>>,
    packets: Vec<Option<u64>>,
    bytes: Vec<Option<u64>>,
    drops: Vec<Option<u64>>,
    overlimits: Vec<Option<u64>>,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn int(v: &Value) -> Option<u64> {
    v.as_u64()
}

impl Columns {
    /// A row: the rule `entry` of hook `dev hook`, and one of its actions.
    fn push(&mut self, dev: &str, hook: &str, entry: &Value, action: Option<&Value>) {
        let options = &entry["options"];
        self.dev.push(dev.to_string());
        self.hook.push(hook.to_string());
        self.chain.push(int(&entry["chain"]).map(|n| n as u32));
        self.prio.push(int(&entry["pref"]).map(|n| n as u32));
        self.protocol.push(text(&entry["protocol"]));
        self.kind.push(text(&entry["kind"]));
        // u32 names its rules `fh`, the others `handle`.
        let handle = match &options["handle"] {
            Value::Null => &options["fh"],
            h => h,
        };
        self.handle.push(text(handle));
        let a = action.unwrap_or(&Value::Null);
        self.order.push(int(&a["order"]).map(|n| n as u32));
        self.action.push(text(&a["kind"]));
        let stats = &a["stats"];
        self.packets.push(int(&stats["packets"]));
        self.bytes.push(int(&stats["bytes"]));
        self.drops.push(int(&stats["drops"]));
        self.overlimits.push(int(&stats["overlimits"]));
    }
}

/// Every hook's filters in `report`, in device order (ingress first), a
/// row per action of each rule (a rule without one: a row, its action's
/// columns null).
pub(crate) fn filters(report: &TcReport) -> Result<RecordBatch, ArrowError> {
    let mut c = Columns::default();
    for shown in &report.shown {
        let key = format!("{} {}", shown.dev, shown.hook);
        let Some(Value::Array(entries)) = report.filters.get(&key) else {
            continue;
        };
        // The entry without options heads a filter; its rules follow.
        for entry in entries.iter().filter(|e| e.get("options").is_some()) {
            match entry["options"]["actions"].as_array() {
                Some(actions) if !actions.is_empty() => {
                    for a in actions {
                        c.push(&shown.dev, &shown.hook, entry, Some(a));
                    }
                }
                _ => c.push(&shown.dev, &shown.hook, entry, None),
            }
        }
    }
    let utf8 = |name: &str, nullable| Field::new(name, DataType::Utf8, nullable);
    let schema = Schema::new(vec![
        utf8("dev", false),
        utf8("hook", false),
        Field::new("chain", DataType::UInt32, true),
        Field::new("prio", DataType::UInt32, true),
        utf8("protocol", true),
        utf8("kind", true),
        utf8("handle", true),
        Field::new("order", DataType::UInt32, true),
        utf8("action", true),
        Field::new("packets", DataType::UInt64, true),
        Field::new("bytes", DataType::UInt64, true),
        Field::new("drops", DataType::UInt64, true),
        Field::new("overlimits", DataType::UInt64, true),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(c.dev)),
        Arc::new(StringArray::from(c.hook)),
        Arc::new(UInt32Array::from(c.chain)),
        Arc::new(UInt32Array::from(c.prio)),
        Arc::new(StringArray::from(c.protocol)),
        Arc::new(StringArray::from(c.kind)),
        Arc::new(StringArray::from(c.handle)),
        Arc::new(UInt32Array::from(c.order)),
        Arc::new(StringArray::from(c.action)),
        Arc::new(UInt64Array::from(c.packets)),
        Arc::new(UInt64Array::from(c.bytes)),
        Arc::new(UInt64Array::from(c.drops)),
        Arc::new(UInt64Array::from(c.overlimits)),
    ];
    RecordBatch::try_new(Arc::new(schema), columns)
}
