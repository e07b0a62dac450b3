//! A flower filter as C: its rules in the order `fl_classify` tries them
//! (masks in the order they first appeared, a mask's rules in the order
//! they were added), each a comparison of the packet's flow key under
//! the rule's mask with the rule's masked key. A mask without port
//! ranges finds at most one rule (its keys are unique); a mask with
//! ranges walks its rules, and a rule whose range holds the port looks
//! up the key completed with that range (`fl_lookup_range`), which may
//! find another rule of the same range. A `skip_sw` rule found ends its
//! mask (the next mask is tried); the first other rule found runs its
//! actions and ends the filter (`continue`: the next filter).

use std::fmt::Write as _;

use tc::{Flower, FlowerKey};

use crate::actions::Cx;
use crate::filter_code::{FilterCode, comment, filter_function, hit_then};
use crate::manifest::RuleSlot;

/// The most rules of a mask compiled into one function.
const PART: usize = 256;

/// The comparisons of a key's fields under a mask (every field with a
/// mask bit but the port ranges and the interface), as C conditions.
fn terms(key: &FlowerKey, mask: &FlowerKey) -> Vec<String> {
    let mut t = Vec::new();
    macro_rules! scalar {
        ($($f:ident),*) => {$(
            if mask.$f != 0 {
                t.push(format!("((k->{} & {:#x}) ^ {:#x})", stringify!($f), mask.$f, key.$f & mask.$f));
            }
        )*};
    }
    macro_rules! array {
        ($($f:ident),*) => {$(
            for i in 0..key.$f.len() {
                if mask.$f[i] != 0 {
                    t.push(format!("((k->{}[{i}] & {:#x}) ^ {:#x})", stringify!($f), mask.$f[i], key.$f[i] & mask.$f[i]));
                }
            }
        )*};
    }
    scalar!(
        flags,
        n_proto,
        ip_proto,
        addr_type,
        vlan_tpid,
        vlan_id,
        vlan_eth_type,
        cvlan_tpid,
        cvlan_id,
        cvlan_eth_type,
        vlan_prio,
        cvlan_prio,
        ip_tos,
        ip_ttl,
        src_port,
        dst_port,
        tcp_flags,
        icmp_type,
        icmp_code,
        arp_op,
        mpls_used
    );
    array!(
        dst_mac, src_mac, src_ip, dst_ip, arp_sip, arp_tip, arp_sha, arp_tha, mpls
    );
    t
}

/// The rule matches when every term (a field's difference from the
/// rule's value, under the mask) is 0: or-ed, so that a rule is one branch
/// (a branch a field, over hundreds of rules, is more than the kernel's
/// verifier will follow).
fn cond(terms: &[String]) -> String {
    if terms.is_empty() {
        "1".into()
    } else {
        format!("({}) == 0", terms.join(" |\n\t     "))
    }
}

/// The range fields a lookup key holds after `fl_lookup_range` completed
/// it with `walked`'s range (fields of an inactive range: 0).
fn range_of(mask: &FlowerKey, walked: &FlowerKey) -> [u16; 4] {
    let dst = mask.dst_port_min != 0 && mask.dst_port_max != 0;
    let src = mask.src_port_min != 0 && mask.src_port_max != 0;
    [
        if dst { walked.dst_port_min } else { 0 },
        if dst { walked.dst_port_max } else { 0 },
        if src { walked.src_port_min } else { 0 },
        if src { walked.src_port_max } else { 0 },
    ]
}

fn ranges(k: &FlowerKey) -> [u16; 4] {
    [
        k.dst_port_min,
        k.dst_port_max,
        k.src_port_min,
        k.src_port_max,
    ]
}

pub fn filter(
    cx: &mut Cx<'_>,
    what: &str,
    name: &str,
    chain: u32,
    prio: u16,
    fl: &Flower,
) -> Option<FilterCode> {
    // The rules' texts, by handle (show lists them in handle order).
    let mut handles: Vec<u32> = fl.rules().map(|r| r.handle).collect();
    handles.sort_unstable();
    let shown = tc::Classifier::show(fl, &cx.config.actions, false);
    let text = |h: u32| -> String {
        let i = handles.binary_search(&h).unwrap_or(0);
        let t = shown.get(i).map(String::as_str).unwrap_or("");
        let t = t.split("\n\taction").next().unwrap_or(t);
        // The text starts with the handle, which the comments give already.
        let t = t.strip_prefix(&format!("handle {h:#x}")).unwrap_or(t);
        comment(t)
    };
    let rules: Vec<_> = fl.rules().collect();
    let mut refused = false;
    for r in &rules {
        if r.mask.ifindex != 0 {
            cx.refused.push(format!(
                "{what}: handle {:#x}: not compiled: indev (the packet's device is not what BPF_PROG_TEST_RUN and the hook give alike)",
                r.handle
            ));
            refused = true;
        }
    }
    if refused {
        return None;
    }
    // Slots and hits, in the order classification tries rules.
    let mut body = String::new();
    let mut slots = std::collections::BTreeMap::new();
    for r in &rules {
        let rule = fl.rule(r.handle).expect("listed");
        let run = cx.run(&format!("{what}: handle {:#x}", r.handle), &rule.actions)?;
        let slot = cx.manifest.rule_slot(RuleSlot {
            chain,
            prio,
            kind: "flower",
            handle: r.handle,
            text: text(r.handle),
        });
        slots.insert(r.handle, (slot, rule.classid, run));
    }
    // Masks: runs of rules with the same mask.
    let mut parts = String::new();
    let mut groups: Vec<Vec<tc::flower::FlowerRuleRef<'_>>> = Vec::new();
    for r in &rules {
        match groups.last_mut() {
            Some(g) if g[0].mask == r.mask => g.push(*r),
            _ => groups.push(vec![*r]),
        }
    }
    for (gi, g) in groups.iter().enumerate() {
        let end = format!("{name}_mask{gi}_done");
        let _ = writeln!(body, "\t/* mask {gi} ({} rule(s)) */", g.len());
        // A rule's test and hit; `ends` says how a continue, a decision
        // and a skip_sw rule leave (gotos in the filter's function,
        // returns in a part's).
        let rule_code = |r: &tc::flower::FlowerRuleRef<'_>, body: &mut String, ends: [&str; 3]| {
            let [on_continue, done, next_mask] = ends;
            let (slot, classid, run) = &slots[&r.handle];
            let _ = writeln!(body, "\t/* handle {:#x}: {} */", r.handle, text(r.handle));
            let _ = writeln!(body, "\tif ({}) {{", cond(&terms(r.key, r.mask)));
            if r.skip_sw {
                let _ = writeln!(body, "\t\t/* skip_sw: the next mask */\n\t\t{next_mask}");
            } else {
                body.push_str(&hit_then(*slot, *classid, run, "\t\t", on_continue, done));
            }
            body.push_str("\t}\n");
        };
        let goto_end = format!("goto {end};");
        let found = |r: &tc::flower::FlowerRuleRef<'_>, body: &mut String| {
            rule_code(r, body, ["goto no_match;", "return;", &goto_end]);
        };
        if !g[0].range && g.len() > PART {
            // Too long for one function (a BPF jump reaches 32K
            // instructions): parts of PART rules, each a global function
            // the verifier checks once, saying what ended it.
            for (pi, part) in g.chunks(PART).enumerate() {
                let fname = format!("{name}_mask{gi}_part{pi}");
                let mut pbody = String::new();
                for r in part {
                    rule_code(
                        r,
                        &mut pbody,
                        [
                            "return PART_NO_MATCH;",
                            "return PART_DECIDED;",
                            "return PART_NEXT_MASK;",
                        ],
                    );
                }
                let _ = write!(
                    parts,
                    "/* {what}, mask {gi}, rules {} to {} */\n\
                     __attribute__((noinline)) int {fname}(CTX *ctx, struct pkt *p, const struct flow_key *k, struct result *r)\n{{\n\
                     \tif (!ctx || !p || !k || !r)\n\t\treturn PART_NONE;\n\
                     {pbody}\treturn PART_NONE;\n}}\n\n",
                    pi * PART,
                    pi * PART + part.len() - 1
                );
                let _ = writeln!(
                    body,
                    "\tswitch ({fname}(ctx, p, k, r)) {{\n\
                     \tcase PART_DECIDED:\n\t\treturn;\n\
                     \tcase PART_NO_MATCH:\n\t\tgoto no_match;\n\
                     \tcase PART_NEXT_MASK:\n\t\tgoto {end};\n\
                     \t}}"
                );
            }
        } else if !g[0].range {
            for r in g {
                found(r, &mut body);
            }
        } else {
            let m = g[0].mask;
            for w in g {
                let wk = fl.rule(w.handle).expect("listed").key;
                let mut checks = Vec::new();
                if m.dst_port_min != 0 && m.dst_port_max != 0 {
                    checks.push(format!(
                        "k->dst_port >= {} && k->dst_port <= {}",
                        wk.dst_port_min, wk.dst_port_max
                    ));
                }
                if m.src_port_min != 0 && m.src_port_max != 0 {
                    checks.push(format!(
                        "k->src_port >= {} && k->src_port <= {}",
                        wk.src_port_min, wk.src_port_max
                    ));
                }
                let want = range_of(m, w.key);
                let _ = writeln!(
                    body,
                    "\t/* the range of handle {:#x}: the rules of that range */\n\tif ({}) {{",
                    w.handle,
                    if checks.is_empty() {
                        "1".to_string()
                    } else {
                        checks.join(" && ")
                    }
                );
                for r2 in g.iter().filter(|r2| ranges(r2.key) == want) {
                    let mut inner = String::new();
                    found(r2, &mut inner);
                    for l in inner.lines() {
                        let _ = writeln!(body, "\t{l}");
                    }
                }
                body.push_str("\t}\n");
            }
        }
        let _ = writeln!(body, "{end}:;");
    }
    let mut code = filter_function(
        name,
        &format!(
            "chain {chain} pref {prio}: flower, {} rule(s) in {} mask(s)",
            rules.len(),
            groups.len()
        ),
        &body,
        true,
    );
    code.text.insert_str(0, &parts);
    Some(code)
}
