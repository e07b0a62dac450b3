//! u32 rules as `tc filter show` prints them (iproute2 6.1's
//! `u32_print_opt`, keys raw as without `-p`) and as `tc -j` gives them.
//! Each entry is what follows `filter ... pref N PROTO u32 chain C ` up to
//! (not including) the newline tc ends the filter with.

use serde_json::{Value, json};

use super::sel::{EAT, OFFSET, TERMINAL, VAROFFSET};
use super::{Hnode, Knode, handle};
use crate::action::Actions;
use crate::handle::format_classid;

/// A table's entry: `fh 800: ht divisor 1 `.
pub fn table_text(t: &Hnode) -> String {
    format!(
        "fh {} ht divisor {} ",
        handle::format(t.handle),
        t.divisor + 1
    )
}

pub fn table_json(t: &Hnode) -> Value {
    json!({ "fh": handle::format(t.handle), "ht_divisor": t.divisor + 1 })
}

/// A rule's entry.
pub fn knode_text(n: &Knode, actions: &Actions, stats: bool, mark: bool) -> String {
    let h = n.handle;
    let mut s = format!(
        "fh {} order {} key ht {:x} bkt {:x} ",
        handle::format(h),
        handle::node(h),
        h >> 20,
        handle::bucket(h)
    );
    // iproute2 6.1 marks every class with `*` (it tests the selector's
    // terminal flag before it has read the selector).
    if n.classid != 0 {
        s += &format!("*flowid {} ", format_classid(n.classid));
    } else if n.sel.flags & TERMINAL != 0 {
        s += "terminal flowid ";
    }
    if let Some(l) = n.link {
        s += &format!("link {} ", handle::format(l));
    }
    if n.flags & super::parse::SKIP_HW != 0 {
        s += "skip_hw ";
    }
    if n.flags & super::parse::SKIP_SW != 0 {
        s += "skip_sw ";
    }
    // Nothing is ever offloaded.
    s += "not_in_hw ";
    if mark && (n.mark.0 != 0 || n.mark.1 != 0) {
        s += &format!(
            "\n  mark 0x{:04x} 0x{:04x} (success {})",
            n.mark.0, n.mark.1, n.mark_success
        );
    }
    for k in &n.sel.keys {
        let nh = if k.offmask != 0 { "nexthdr+" } else { "" };
        s += &format!("\n  match {:08x}/{:08x} at {nh}{}", k.val, k.mask, k.off);
    }
    let sel = &n.sel;
    if sel.flags & (VAROFFSET | OFFSET) != 0 {
        s += "\n    offset ";
        if sel.flags & VAROFFSET != 0 {
            s += &format!("{:04x}>>{} at {} ", sel.offmask, sel.offshift, sel.offoff);
        }
        if sel.off != 0 {
            s += &format!("plus {} ", sel.off);
        }
    }
    if sel.flags & EAT != 0 {
        s += " eat ";
    }
    if sel.hmask != 0 {
        s += &format!("\n    hash mask {:08x} at {} ", sel.hmask, sel.hoff);
    }
    if let Some(dev) = &n.indev {
        s += &format!("\n  input dev {dev}\n");
    }
    for (i, r) in n.actions.iter().enumerate() {
        if let Some(a) = actions.get(r) {
            s += &crate::action_show::action_text(i + 1, a, stats);
        }
    }
    s
}

/// A rule as `tc -j` gives its options (its keys as an array `match`: tc
/// repeats the key `match`, which a JSON object cannot hold).
pub fn knode_json(n: &Knode, actions: &Actions, stats: bool, mark: bool) -> Value {
    let h = n.handle;
    let mut o = serde_json::Map::new();
    o.insert("fh".into(), json!(handle::format(h)));
    o.insert("order".into(), json!(handle::node(h)));
    o.insert("key_ht".into(), json!(format!("{:x}", h >> 20)));
    o.insert("bkt".into(), json!(format!("{:x}", handle::bucket(h))));
    if n.classid != 0 {
        o.insert("flowid".into(), json!(format_classid(n.classid)));
    }
    if let Some(l) = n.link {
        o.insert("link".into(), json!(handle::format(l)));
    }
    if n.flags & super::parse::SKIP_HW != 0 {
        o.insert("skip_hw".into(), json!(true));
    }
    if n.flags & super::parse::SKIP_SW != 0 {
        o.insert("skip_sw".into(), json!(true));
    }
    o.insert("not_in_hw".into(), json!(true));
    if mark && (n.mark.0 != 0 || n.mark.1 != 0) {
        o.insert("fwmark_value".into(), json!(format!("{:#x}", n.mark.0)));
        o.insert("fwmark_mask".into(), json!(format!("{:#x}", n.mark.1)));
        o.insert("fwmark_success".into(), json!(n.mark_success));
    }
    let keys: Vec<Value> = n
        .sel
        .keys
        .iter()
        .map(|k| {
            json!({
                "value": format!("{:x}", k.val),
                "mask": format!("{:x}", k.mask),
                "offmask": if k.offmask != 0 { "nexthdr+" } else { "" },
                "off": k.off,
            })
        })
        .collect();
    o.insert("match".into(), Value::Array(keys));
    let sel = &n.sel;
    if sel.flags & VAROFFSET != 0 {
        o.insert("offset_mask".into(), json!(format!("{:x}", sel.offmask)));
        o.insert("offset_shift".into(), json!(sel.offshift));
        o.insert("offset_off".into(), json!(sel.offoff));
    }
    if sel.flags & (VAROFFSET | OFFSET) != 0 && sel.off != 0 {
        o.insert("plus".into(), json!(sel.off));
    }
    if sel.flags & EAT != 0 {
        o.insert("eat".into(), json!(true));
    }
    if sel.hmask != 0 {
        o.insert("hash_mask".into(), json!(format!("{:x}", sel.hmask)));
        o.insert("hash_off".into(), json!(sel.hoff));
    }
    if let Some(dev) = &n.indev {
        o.insert("input_dev".into(), json!(dev));
    }
    if !n.actions.is_empty() {
        let list: Vec<Value> = n
            .actions
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                actions
                    .get(r)
                    .map(|a| crate::action_show::action_json(i + 1, a, stats))
            })
            .collect();
        o.insert("actions".into(), Value::Array(list));
    }
    Value::Object(o)
}
