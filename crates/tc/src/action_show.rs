//! Actions as `tc` prints them: inside a filter's rule (`action order N:
//! ...`), in `tc actions show`, and as `tc -j` gives them.

use serde_json::{Value, json};

use crate::act;
use crate::action::{Action, Actions, Kind};

/// One action as `tc_print_action` prints it (without the install and use
/// times, which sluice does not keep).
pub(crate) fn action_text(order: usize, a: &Action, stats: bool) -> String {
    let what = match &a.kind {
        Kind::Mirred(m) => format!(
            "mirred ({} {} to device {}) {}",
            if m.ingress { "Ingress" } else { "Egress" },
            if m.mirror { "Mirror" } else { "Redirect" },
            m.dev,
            a.control.name()
        ),
        Kind::Gact { random } => {
            let mut g = format!("gact action {}", a.control.name());
            if let Some(r) = random {
                g += &format!(
                    "\n\t random type {} {} val {}",
                    if r.determ { "determ" } else { "netrand" },
                    r.other.name(),
                    r.every
                );
            }
            g
        }
        Kind::Police(p) => act::police::text(a.head(), p),
        Kind::Skbedit(e) => act::skbedit::text(a.head(), e),
        Kind::Pedit(p) => act::pedit::text(a.head(), p),
        Kind::Vlan(v) => act::vlan::text(a.head(), v),
        Kind::Csum(c) => act::csum::text(a.head(), c),
    };
    let mut s = match &a.kind {
        Kind::Gact { .. } | Kind::Mirred(_) => format!(
            "\n\taction order {order}: {what}\n\tindex {} ref {} bind {}",
            a.index, a.refs, a.binds
        ),
        // Their own print gives index, ref and bind.
        _ => format!("\n\taction order {order}: {what}"),
    };
    if stats {
        let st = a.stats;
        s += &format!(
            "\n\tAction statistics:\n\tSent {} bytes {} pkt (dropped {}, overlimits {} requeues 0) \n\tbacklog 0b 0p requeues 0",
            st.bytes, st.packets, st.drops, st.overlimits
        );
    }
    s + "\n"
}

/// One action as `tc -j` gives it.
pub(crate) fn action_json(order: usize, a: &Action, stats: bool) -> Value {
    let mut o = json!({ "order": order, "kind": a.kind.name() });
    match &a.kind {
        Kind::Mirred(m) => {
            o["mirred_action"] = json!(if m.mirror { "mirror" } else { "redirect" });
            o["direction"] = json!(if m.ingress { "ingress" } else { "egress" });
            o["to_dev"] = json!(m.dev);
            o["control_action"] = json!({ "type": a.control.name() });
        }
        Kind::Gact { .. } => {
            o["control_action"] = json!({ "type": a.control.name() });
        }
        Kind::Police(p) => act::police::json(a.head(), p, &mut o),
        Kind::Skbedit(e) => act::skbedit::json(a.head(), e, &mut o),
        Kind::Pedit(p) => act::pedit::json(a.head(), p, &mut o),
        Kind::Vlan(v) => act::vlan::json(a.head(), v, &mut o),
        Kind::Csum(c) => act::csum::json(a.head(), c, &mut o),
    }
    if matches!(a.kind, Kind::Gact { .. } | Kind::Mirred(_)) {
        o["index"] = json!(a.index);
        o["ref"] = json!(a.refs);
        o["bind"] = json!(a.binds);
    }
    if stats {
        o["stats"] = json!({
            "bytes": a.stats.bytes,
            "packets": a.stats.packets,
            "drops": a.stats.drops,
            "overlimits": a.stats.overlimits,
        });
    }
    o
}

/// `tc actions show KIND`: every action of the kind, in index order.
pub(crate) fn show_table(actions: &Actions, kind: &str, show: crate::ShowOptions) -> String {
    let list: Vec<&Action> = actions.iter().filter(|a| a.kind.name() == kind).collect();
    if show.json {
        let v: Vec<serde_json::Value> = list
            .iter()
            .enumerate()
            .map(|(i, a)| action_json(i, a, show.stats))
            .collect();
        return format!(
            "{}\n",
            serde_json::json!([{ "total acts": list.len(), "actions": v }])
        );
    }
    let mut s = format!("total acts {}\n", list.len());
    for (i, a) in list.iter().enumerate() {
        s += &action_text(i, a, show.stats);
    }
    s
}
