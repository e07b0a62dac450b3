//! A u32 filter as C, after `tc::u32`'s walk (the kernel's
//! `u32_classify`): the root table's rules in order, each comparing its
//! keys with the packet's big-endian words at `off + key.off + (off2 &
//! key.offmask)` from the network header. A rule linking to a table
//! descends into it (the bucket from the hash fold of the word at `off +
//! hoff`; `offset` and `eat` move `off2` and `off`), at most 8 deep; a
//! table whose rules all fail comes back to the linking rule, whose own
//! terminal check decides. The tables are known when compiling, so the
//! descent is written out (a bucket chosen at run time is a `switch`); a
//! read outside the packet ends the filter unmatched. A terminal rule
//! counts, runs its actions and ends the filter unless they say
//! `continue` (then the next rule).

use std::fmt::Write as _;

use tc::U32;
use tc::u32::{Knode, MAX_DEPTH};

use crate::actions::{Cx, Run};
use crate::filter_code::{FilterCode, filter_function, hit};
use crate::manifest::RuleSlot;

const TERMINAL: u8 = 1;
const OFFSET: u8 = 2;
const VAROFFSET: u8 = 4;
const EAT: u8 = 8;
const SKIP_SW: u32 = 2;

/// The most rules the written-out descent may hold (links form loops the
/// depth limit ends; written out they multiply).
const MAX_WRITTEN: usize = 2000;

struct Gen<'a> {
    u: &'a U32,
    /// Per knode handle: its slot, class and actions run.
    hits: std::collections::BTreeMap<u32, (u32, u32, Run)>,
    labels: usize,
    written: usize,
}

impl Gen<'_> {
    fn label(&mut self) -> usize {
        self.labels += 1;
        self.labels
    }

    /// The rules of table `ht`'s bucket given by the C expression
    /// `bucket` (None: bucket 0) at `depth` links down.
    fn table(&mut self, out: &mut String, ht: u32, bucket: Option<&str>, depth: usize, ind: &str) {
        let Some(t) = self.u.table(ht) else { return };
        match bucket {
            None => {
                let nodes = t.buckets.first().cloned().unwrap_or_default();
                self.nodes(out, &nodes, depth, ind);
            }
            Some(b) => {
                let _ = writeln!(out, "{ind}switch ({b}) {{");
                for (i, nodes) in t.buckets.clone().iter().enumerate() {
                    if nodes.is_empty() {
                        continue;
                    }
                    let _ = writeln!(out, "{ind}case {i}:");
                    let mut inner = String::new();
                    self.nodes(&mut inner, nodes, depth, &format!("{ind}\t"));
                    out.push_str(&inner);
                    let _ = writeln!(out, "{ind}\tbreak;");
                }
                let _ = writeln!(out, "{ind}}}");
            }
        }
    }

    fn nodes(&mut self, out: &mut String, nodes: &[Knode], depth: usize, ind: &str) {
        for n in nodes {
            self.written += 1;
            if self.written > MAX_WRITTEN || n.flags & SKIP_SW != 0 {
                continue;
            }
            let l = self.label();
            let next = format!("next_{l}");
            let _ = writeln!(
                out,
                "{ind}/* knode {} */\n{ind}{{",
                tc::u32::format_handle(n.handle)
            );
            let i2 = format!("{ind}\t");
            for k in &n.sel.keys {
                let at = if k.offmask == 0 {
                    format!("off + {}", k.off)
                } else {
                    format!("off + {} + (off2 & {})", k.off, k.offmask)
                };
                let _ = writeln!(
                    out,
                    "{i2}/* match {:08x}/{:08x} at {}{} */\n\
                     {i2}if (word(ctx, p, XDP, {at}, &w))\n{i2}\tgoto no_match;\n\
                     {i2}if ((w ^ {:#x}) & {:#x})\n{i2}\tgoto {next};",
                    k.val,
                    k.mask,
                    if k.offmask != 0 { "nexthdr+" } else { "" },
                    k.off,
                    k.val,
                    k.mask
                );
            }
            let term = format!("term_{l}");
            if let Some(down) = n.link {
                if depth >= MAX_DEPTH {
                    let _ = writeln!(
                        out,
                        "{i2}/* link: past the depth limit */\n{i2}goto no_match;"
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "{i2}/* link {} */\n{i2}{{\n{i2}\t__s64 saved_off = off;",
                        tc::u32::format_handle(down)
                    );
                    let i3 = format!("{i2}\t");
                    let divisor = self.u.table(down).map_or(0, |t| t.divisor);
                    let sel = &n.sel;
                    let bucket = if divisor != 0 {
                        let _ = writeln!(
                            out,
                            "{i3}if (word(ctx, p, XDP, off + {}, &w))\n{i3}\tgoto no_match;\n\
                             {i3}__u32 bucket_{l} = {divisor} & ((w & {:#x}) >> {});",
                            sel.hoff,
                            sel.hmask,
                            sel.fshift()
                        );
                        Some(format!("bucket_{l}"))
                    } else {
                        None
                    };
                    if sel.flags & (VAROFFSET | OFFSET | EAT) != 0 {
                        if sel.flags & (OFFSET | VAROFFSET) != 0 {
                            let _ = writeln!(out, "{i3}off2 = {} + 3;", sel.off);
                            if sel.flags & VAROFFSET != 0 {
                                let shift = if sel.offshift >= 32 {
                                    "0".to_string()
                                } else {
                                    format!(
                                        "((__u32)(be16(b) & {:#x}) >> {})",
                                        sel.offmask, sel.offshift
                                    )
                                };
                                let _ = writeln!(
                                    out,
                                    "{i3}if (ld(ctx, p, XDP, (__s64)p->network + off + {}, b, 2))\n{i3}\tgoto no_match;\n{i3}off2 += {shift};",
                                    sel.offoff
                                );
                            }
                            let _ = writeln!(out, "{i3}off2 &= ~3;");
                        }
                        if sel.flags & EAT != 0 {
                            let _ = writeln!(out, "{i3}off += off2;\n{i3}off2 = 0;");
                        }
                        let _ = writeln!(out, "{i3}if (off >= len)\n{i3}\tgoto pop_{l};");
                    }
                    self.table(out, down, bucket.as_deref(), depth + 1, &i3);
                    let _ = writeln!(out, "{i2}pop_{l}:\n{i2}\toff = saved_off;\n{i2}}}");
                }
            }
            let _ = writeln!(out, "{i2}goto {term};\n{ind}{term}:;");
            if n.sel.flags & TERMINAL != 0 {
                let (slot, classid, run) = &self.hits[&n.handle];
                let _ = writeln!(out, "{i2}{{");
                out.push_str(&hit(
                    *slot,
                    *classid,
                    run,
                    &format!("{i2}\t"),
                    &format!("goto {next};"),
                ));
                let _ = writeln!(out, "{i2}}}");
            }
            let _ = writeln!(out, "{ind}}}\n{ind}{next}:;");
        }
    }
}

pub fn filter(
    cx: &mut Cx<'_>,
    what: &str,
    name: &str,
    chain: u32,
    prio: u16,
    u: &U32,
) -> Option<FilterCode> {
    let mut hits = std::collections::BTreeMap::new();
    let mut refused = false;
    for n in u.knodes() {
        let w = format!("{what}: handle {}", tc::u32::format_handle(n.handle));
        if n.ifindex != 0 {
            cx.refused
                .push(format!("{w}: not compiled: indev (the packet's device)"));
            refused = true;
        }
        if n.mark != (0, 0) {
            cx.refused
                .push(format!("{w}: not compiled: mark (and its success counter)"));
            refused = true;
        }
        if refused || n.sel.flags & TERMINAL == 0 || n.flags & SKIP_SW != 0 {
            continue;
        }
        let run = cx.run(&w, &n.actions)?;
        let keys: Vec<String> = n
            .sel
            .keys
            .iter()
            .map(|k| format!("match {:08x}/{:08x} at {}", k.val, k.mask, k.off))
            .collect();
        let slot = cx.manifest.rule_slot(RuleSlot {
            chain,
            prio,
            kind: "u32",
            handle: n.handle,
            text: format!("fh {} {}", tc::u32::format_handle(n.handle), keys.join(" ")),
        });
        hits.insert(n.handle, (slot, n.classid, run));
    }
    if refused {
        return None;
    }
    let mut g = Gen {
        u,
        hits,
        labels: 0,
        written: 0,
    };
    let mut body = String::new();
    g.table(&mut body, u.root(), None, 0, "\t");
    if g.written > MAX_WRITTEN {
        cx.refused.push(format!(
            "{what}: not compiled: its links written out take more than {MAX_WRITTEN} rules (loops to the depth limit)"
        ));
        return None;
    }
    let locals = "\t__s64 off = 0, off2 = 0, len = (__s64)p->len - p->network;\n\t__u32 w = 0;\n\t__u8 b[2];\n\
                  \t(void)off2;\n\t(void)len;\n\t(void)b;\n\t(void)w;\n";
    Some(filter_function(
        name,
        &format!("chain {chain} pref {prio}: u32"),
        &format!("{locals}{body}"),
        false,
    ))
}
