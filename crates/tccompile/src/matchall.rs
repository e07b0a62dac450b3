//! A matchall filter as C: its one rule matches every packet (unless
//! `skip_sw`), counts the hit and runs its actions; `continue` goes on to
//! the next filter.

use tc::Matchall;

use crate::actions::Cx;
use crate::filter_code::{FilterCode, filter_function, hit};
use crate::manifest::RuleSlot;

pub fn filter(
    cx: &mut Cx<'_>,
    what: &str,
    name: &str,
    chain: u32,
    prio: u16,
    m: &Matchall,
) -> Option<FilterCode> {
    let mut body = String::new();
    if let Some((handle, classid, skip_sw, actions)) = m.rule() {
        if skip_sw {
            body += "\t/* its rule is skip_sw: not run in software */\n";
        } else {
            let run = cx.run(&format!("{what}: handle {handle:#x}"), actions)?;
            let slot = cx.manifest.rule_slot(RuleSlot {
                chain,
                prio,
                kind: "matchall",
                handle,
                text: format!("matchall handle {handle:#x}"),
            });
            body += &format!("\t/* handle {handle:#x}: every packet */\n");
            body += &hit(slot, classid, &run, "\t", "goto no_match;");
        }
    }
    Some(filter_function(
        name,
        &format!("chain {chain} pref {prio}: matchall"),
        &body,
        false,
    ))
}
