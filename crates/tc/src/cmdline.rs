//! `tc` command lines, verbatim, against a [`Config`]: `qdisc add|del|show
//! dev DEV clsact`, `filter add|change|replace|del|show dev DEV
//! ingress|egress|parent H [chain N] [pref N] [protocol P] [handle H] [KIND
//! ...]`, `actions add|del|show|list ...`, and batches of them (`-batch
//! FILE`: one command a line, `#` comments, `\` continuing a line). Errors
//! name the word and say why, in tc's words where tc has them; a failed
//! command changes nothing.

use serde_json::{Value, json};

use crate::action_parse::parse_actions;
use crate::classifier::Filter;
use crate::config::{ClsactHook, Config};
use crate::error::TcError;
use crate::handle::{EGRESS, INGRESS, parse_classid};
use crate::kinds::new_classifier_for;
use crate::protocol::{ETH_P_ALL, parse_protocol, protocol_name};

/// How `show` prints: `-s` (counters) and `-j` (JSON).
#[derive(Clone, Copy, Debug, Default)]
pub struct ShowOptions {
    pub stats: bool,
    pub json: bool,
}

/// The lines of a configuration that concern device `dev`: its qdisc and
/// filters (by the first `dev` of each line), and the shared actions.
pub fn lines_for(lines: &str, dev: &str) -> Vec<String> {
    lines
        .lines()
        .filter(|l| {
            let w = words(l.split('#').next().unwrap_or(""));
            match w.first().map(String::as_str) {
                Some("actions" | "action") => true,
                Some("qdisc" | "filter") => w
                    .iter()
                    .position(|x| x == "dev")
                    .and_then(|i| w.get(i + 1))
                    .is_some_and(|d| d == dev),
                _ => false,
            }
        })
        .map(str::to_string)
        .collect()
}

/// Splits a line into words as a shell would for tc (quotes group words).
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl Config {
    /// Runs a batch (a `-batch` file's text): every command in order; the
    /// first failing one stops the batch, named by its line number.
    pub fn run_batch(&mut self, text: &str, show: ShowOptions) -> Result<String, TcError> {
        // A device with a clsact qdisc anywhere in the batch exists from
        // its first line on (a rule may name it before its qdisc line),
        // as every device exists before `tc -batch` starts; in the order
        // of those lines, so indexes are as the lines alone give them.
        for line in text.lines() {
            if let ["qdisc", "add", "dev", d, "clsact"] =
                words(line.split('#').next().unwrap_or(""))
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()[..]
            {
                self.devices.index(d);
            }
        }
        let mut out = String::new();
        let mut pending = String::new();
        let mut first_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("");
            if pending.is_empty() {
                first_line = i + 1;
            }
            if let Some(head) = line.trim_end().strip_suffix('\\') {
                pending.push_str(head);
                pending.push(' ');
                continue;
            }
            pending.push_str(line);
            let cmd = std::mem::take(&mut pending);
            let w = words(&cmd);
            if w.is_empty() {
                continue;
            }
            let w: Vec<&str> = w.iter().map(String::as_str).collect();
            out += &self.run(&w, show).map_err(|e| TcError::AtLine {
                line: first_line,
                source: Box::new(e),
            })?;
        }
        if !pending.is_empty() {
            // A `\` on the last line continues into nothing: tc stops there.
            return Err(TcError::MissingContinuation(first_line));
        }
        Ok(out)
    }

    /// Runs one command (the words after `tc`); what it prints.
    pub fn run(&mut self, w: &[&str], show: ShowOptions) -> Result<String, TcError> {
        match w {
            ["qdisc", rest @ ..] => self.qdisc(rest, show),
            ["filter", rest @ ..] => self.filter(rest, show),
            ["actions" | "action", rest @ ..] => self.actions_cmd(rest, show),
            [obj, ..] => Err(TcError::UnknownObject(obj.to_string())),
            [] => Ok(String::new()),
        }
    }

    fn qdisc(&mut self, w: &[&str], show: ShowOptions) -> Result<String, TcError> {
        match w {
            ["add", "dev", dev, "clsact"] => self.add_clsact(dev).map(|()| String::new()),
            ["del" | "delete", "dev", dev, "clsact"] => {
                self.del_clsact(dev).map(|()| String::new())
            }
            ["add" | "del" | "delete" | "replace", "dev", _, kind, ..] => Err(format!(
                "qdisc \"{kind}\": sluice's tc has the clsact qdisc only (its ingress and egress hooks)"
            ).into()),
            ["show" | "list" | "ls", rest @ ..] => {
                let only = match rest {
                    ["dev", d] => Some(*d),
                    [] => None,
                    _ => return Err(format!("qdisc show: unexpected \"{}\"", rest.join(" ")).into()),
                };
                let names: Vec<&str> = self
                    .qdiscs()
                    .map(|(d, _)| d)
                    .filter(|d| only.is_none_or(|o| o == *d))
                    .collect();
                if show.json {
                    let v: Vec<Value> = names
                        .iter()
                        .map(|d| json!({"kind": "clsact", "handle": "ffff:", "dev": d, "parent": "ffff:fff1"}))
                        .collect();
                    return Ok(format!("{}\n", Value::Array(v)));
                }
                Ok(names
                    .iter()
                    .map(|d| format!("qdisc clsact ffff: dev {d} parent ffff:fff1 \n"))
                    .collect())
            }
            _ => Err(format!(
                "Command \"{}\" is unknown: qdisc add|del dev DEV clsact, qdisc show [dev DEV]",
                w.join(" ")
            ).into()),
        }
    }

    fn filter(&mut self, w: &[&str], show: ShowOptions) -> Result<String, TcError> {
        let Some((&verb, rest)) = w.split_first() else {
            return Err("filter: add, change, replace, del or show".into());
        };
        let spec = FilterSpec::parse(rest)?;
        match verb {
            "add" | "change" | "replace" => {
                self.filter_add(&spec, verb)?;
                Ok(String::new())
            }
            "del" | "delete" => {
                self.filter_del(&spec)?;
                Ok(String::new())
            }
            "show" | "list" | "ls" => self.filter_show(&spec, show),
            v => Err(format!("Command \"{v}\" is unknown, try \"tc filter help\".").into()),
        }
    }

    fn filter_add(&mut self, s: &FilterSpec, verb: &str) -> Result<(), TcError> {
        let dev = s.dev.as_deref().ok_or("Error: \"dev\" is required")?;
        let hook = s
            .hook
            .ok_or("Error: say ingress, egress or parent ffff:fff2|ffff:fff3")?;
        let kind = s
            .kind
            .as_deref()
            .ok_or("Error: Filter kind and protocol must be specified.")?;
        let args: Vec<&str> = s.args.iter().map(String::as_str).collect();
        if let Some(e) = self.devices.missing_mirred_target(&args) {
            return Err(e.into());
        }
        // An `indev` of this namespace's own gets an index, kept if the
        // rule is.
        let mut devices = self.devices.clone();
        if let Some(d) = args
            .windows(2)
            .find_map(|w| (w[0] == "indev").then_some(w[1]))
            .filter(|d| devices.exists(d))
        {
            devices.index(d);
        }
        let result = self.filter_add_with(s, verb, kind, hook, dev, &devices);
        if result.is_ok() {
            self.devices = devices;
        }
        result
    }

    fn filter_add_with(
        &mut self,
        s: &FilterSpec,
        verb: &str,
        kind: &str,
        hook: ClsactHook,
        dev: &str,
        devices: &crate::devices::Devices,
    ) -> Result<(), TcError> {
        let u32_common = self.clsact(dev).map(|q| q.u32.clone());
        let (block, actions) = self.block_mut(dev, hook)?;
        let protocol = s.protocol.unwrap_or(ETH_P_ALL);
        let args: Vec<&str> = s.args.iter().map(String::as_str).collect();
        let prio = match s.prio {
            Some(p) => p,
            // The kernel's tcf_auto_prio after tcf_chain_tp_find from
            // 0x8000: one below the first filter at 0x8000 or above, else
            // 0xc000 (49152) whatever lower priorities there are.
            None => block
                .chain(s.chain)
                .iter()
                .find(|f| f.prio >= 0x8000)
                .map_or(0xc000, |f| f.prio - 1),
        };
        if let Some(f) = block.filter_mut(s.chain, prio) {
            if f.protocol != protocol {
                return Err("Error: Protocol mismatch for filter with specified priority.".into());
            }
            if f.classifier.kind() != kind {
                return Err("Error: Specified filter kind does not match existing one.".into());
            }
            f.classifier.set_devices(devices);
            if verb != "add"
                && let Some(r) =
                    f.classifier
                        .change(s.handle.as_deref(), &args, actions, verb == "replace")
            {
                return r;
            }
            return f.classifier.add(s.handle.as_deref(), &args, actions);
        }
        if verb == "change" {
            return Err("Error: Filter with specified priority/protocol not found.".into());
        }
        let mut classifier = match (kind, u32_common) {
            ("u32", Some(common)) => Box::new(crate::u32::U32::in_common(common)),
            _ => new_classifier_for(kind, protocol)?,
        };
        classifier.set_devices(devices);
        classifier.add(s.handle.as_deref(), &args, actions)?;
        block.add(
            s.chain,
            Filter {
                prio,
                protocol,
                classifier,
            },
        )
    }

    fn filter_del(&mut self, s: &FilterSpec) -> Result<(), TcError> {
        let dev = s.dev.as_deref().ok_or("Error: \"dev\" is required")?;
        let hook = s
            .hook
            .ok_or("Error: say ingress, egress or parent ffff:fff2|ffff:fff3")?;
        let (block, actions) = self.block_mut(dev, hook)?;
        let Some(prio) = s.prio else {
            // No priority: every filter of the chain.
            block.clear_chain(s.chain, actions);
            return Ok(());
        };
        match &s.handle {
            Some(h) => {
                let f = block
                    .filter_mut(s.chain, prio)
                    .ok_or("Error: Filter with specified priority/protocol not found.")?;
                if f.classifier.delete(h, actions)? {
                    block.remove(s.chain, prio, actions)?;
                }
                Ok(())
            }
            None => block.remove(s.chain, prio, actions).map(|_| ()),
        }
    }

    fn filter_show(&self, s: &FilterSpec, show: ShowOptions) -> Result<String, TcError> {
        let dev = s.dev.as_deref().ok_or("Error: \"dev\" is required")?;
        let Some(q) = self.clsact(dev) else {
            return Ok(String::new());
        };
        let Some(hook) = s.hook else {
            // The root has no filters under clsact.
            return Ok(if show.json {
                "[]\n".into()
            } else {
                String::new()
            });
        };
        let block = match hook {
            ClsactHook::Ingress => &q.ingress,
            ClsactHook::Egress => &q.egress,
        };
        let mut text = String::new();
        let mut list = Vec::new();
        for (chain, filters) in block.chains() {
            if s.chain_given && chain != s.chain {
                continue;
            }
            for f in filters {
                if s.prio.is_some_and(|p| p != f.prio) {
                    continue;
                }
                let head = format!(
                    "filter protocol {} pref {} {} chain {chain} ",
                    protocol_name(f.protocol),
                    f.prio,
                    f.classifier.kind()
                );
                let base = json!({
                    "protocol": protocol_name(f.protocol),
                    "pref": f.prio,
                    "kind": f.classifier.kind(),
                    "chain": chain,
                });
                text += &head;
                text += "\n";
                list.push(base.clone());
                for entry in f.classifier.show(&self.actions, show.stats) {
                    text += &head;
                    text += &entry;
                    text += "\n";
                }
                for options in f.classifier.json(&self.actions, show.stats) {
                    let mut o = base.clone();
                    o["options"] = options;
                    list.push(o);
                }
            }
        }
        Ok(if show.json {
            format!("{}\n", Value::Array(list))
        } else {
            text
        })
    }

    fn actions_cmd(&mut self, w: &[&str], show: ShowOptions) -> Result<String, TcError> {
        match w {
            ["add" | "replace", rest @ ..] => {
                let mut words: Vec<&str> = Vec::with_capacity(rest.len() + 1);
                if !matches!(rest.first(), Some(&"action" | &"actions")) {
                    words.push("action");
                }
                words.extend_from_slice(rest);
                if let Some(e) = self.devices.missing_mirred_target(&words) {
                    return Err(e.into());
                }
                let (refs, used) = parse_actions(&words, &mut self.actions)?;
                if used < words.len() {
                    self.actions.release(&refs);
                    return Err(format!("actions add: unexpected \"{}\"", words[used]).into());
                }
                // Made on their own: the table holds them, no rule is bound.
                for r in &refs {
                    if let Some(a) = self.actions.get_mut(r) {
                        a.binds = 0;
                    }
                }
                Ok(String::new())
            }
            ["del" | "delete", rest @ ..] => {
                let (kind, index) = action_index(rest)?;
                self.actions
                    .remove(&crate::action::ActionRef { kind, index })
                    .map(|_| ())
                    .map_err(|e| format!("Error: {e}"))?;
                Ok(String::new())
            }
            ["show" | "list" | "ls" | "get", rest @ ..] => {
                let kind = match rest {
                    ["action", k, ..] | [k, ..] => *k,
                    [] => return Err("actions show: name an action kind (gact, mirred, police, skbedit, pedit, vlan, csum)".into()),
                };
                Ok(crate::action_show::show_table(&self.actions, kind, show))
            }
            _ => Err("actions: add, del or show".into()),
        }
    }
}

/// `[action] KIND index N`.
fn action_index(w: &[&str]) -> Result<(&'static str, u32), TcError> {
    let w = match w {
        ["action", rest @ ..] => rest,
        r => r,
    };
    match w {
        [kind, "index", n] => {
            let kind = crate::action::kind_name(kind)
                .ok_or_else(|| format!("unknown action \"{kind}\""))?;
            let n = n.parse().map_err(|_| format!("index \"{n}\": a number"))?;
            Ok((kind, n))
        }
        _ => Err("actions del: action KIND index N".into()),
    }
}

/// The words of `tc filter VERB ...` before the kind, and the kind's own.
#[derive(Debug, Default)]
struct FilterSpec {
    dev: Option<String>,
    hook: Option<ClsactHook>,
    chain: u32,
    chain_given: bool,
    prio: Option<u16>,
    protocol: Option<u16>,
    handle: Option<String>,
    kind: Option<String>,
    args: Vec<String>,
}

impl FilterSpec {
    fn parse(w: &[&str]) -> Result<FilterSpec, TcError> {
        let mut s = FilterSpec::default();
        let mut i = 0;
        let value = |i: usize, what: &str| -> Result<&str, TcError> {
            w.get(i + 1)
                .copied()
                .ok_or_else(|| TcError::Syntax(format!("Error: \"{what}\" needs a value after it")))
        };
        while i < w.len() {
            match w[i] {
                "dev" => {
                    s.dev = Some(value(i, "dev")?.to_string());
                    i += 2;
                }
                "ingress" => {
                    s.hook = Some(ClsactHook::Ingress);
                    i += 1;
                }
                "egress" => {
                    s.hook = Some(ClsactHook::Egress);
                    i += 1;
                }
                "parent" => {
                    let p = value(i, "parent")?;
                    s.hook = Some(match parse_classid(p)? {
                        INGRESS | 0xffff_0000 => ClsactHook::Ingress,
                        EGRESS => ClsactHook::Egress,
                        _ => {
                            return Err(format!(
                                "parent \"{p}\": sluice's tc has the clsact hooks only \
                                 (ingress = ffff:fff2, egress = ffff:fff3)"
                            )
                            .into());
                        }
                    });
                    i += 2;
                }
                "root" => {
                    return Err("root: clsact has no root filters (use ingress or egress)".into());
                }
                "chain" => {
                    let c = value(i, "chain")?;
                    s.chain = c.parse().map_err(|_| {
                        format!("Error: argument \"{c}\" is wrong: invalid chain index value")
                    })?;
                    if crate::control::chain_index(c).is_none() {
                        return Err("Error: Specified chain index exceeds upper limit.".into());
                    }
                    s.chain_given = true;
                    i += 2;
                }
                "pref" | "priority" | "prio" => {
                    let p = value(i, "pref")?;
                    let prio: u16 = p.parse().map_err(|_| {
                        format!("Error: argument \"{p}\" is wrong: invalid priority value")
                    })?;
                    // 0 is "none given": the kernel picks one (tcf_auto_prio).
                    s.prio = (prio != 0).then_some(prio);
                    i += 2;
                }
                "protocol" | "proto" => {
                    s.protocol = Some(parse_protocol(value(i, "protocol")?)?);
                    i += 2;
                }
                "handle" => {
                    s.handle = Some(value(i, "handle")?.to_string());
                    i += 2;
                }
                "estimator" => {
                    return Err("estimator: sluice keeps no rate estimators".into());
                }
                kind => {
                    s.kind = Some(kind.to_string());
                    s.args = w[i + 1..].iter().map(|x| x.to_string()).collect();
                    break;
                }
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_for_keeps_the_devices_own_and_the_shared_actions() {
        let conf = "qdisc add dev a clsact\nqdisc add dev b clsact\n\
                    # dev a\nfilter add dev a ingress matchall action drop\n\
                    filter add dev b ingress matchall action pass\n\
                    actions add action drop index 3\n";
        assert_eq!(
            lines_for(conf, "a"),
            vec![
                "qdisc add dev a clsact",
                "filter add dev a ingress matchall action drop",
                "actions add action drop index 3",
            ]
        );
    }

    /// What a command prints, or the message of its error.
    fn run(c: &mut Config, line: &str) -> Result<String, String> {
        let w = words(line);
        let w: Vec<&str> = w.iter().map(String::as_str).collect();
        c.run(&w, ShowOptions::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn filters_get_tcs_automatic_priorities_and_refuse_mismatches() {
        let mut c = Config::default();
        assert!(
            run(&mut c, "filter add dev v ingress u32 match u8 0 0 at 0")
                .unwrap_err()
                .contains("qdisc")
        );
        run(&mut c, "qdisc add dev v clsact").unwrap();
        run(
            &mut c,
            "filter add dev v ingress u32 match u8 0 0 at 0 classid 1:1",
        )
        .unwrap();
        run(
            &mut c,
            "filter add dev v ingress u32 match u8 0 0 at 0 classid 1:2",
        )
        .unwrap();
        let out = run(&mut c, "filter show dev v ingress").unwrap();
        assert!(
            out.starts_with("filter protocol all pref 49151 u32 chain 0 \n"),
            "{out}"
        );
        assert!(
            out.contains("filter protocol all pref 49152 u32 chain 0 \n"),
            "{out}"
        );
        let e = run(
            &mut c,
            "filter add dev v ingress protocol ip prio 49151 u32 match u8 0 0 at 0",
        )
        .unwrap_err();
        assert!(e.contains("Protocol mismatch"), "{e}");
        run(&mut c, "filter del dev v ingress pref 49152").unwrap();
        let out = run(&mut c, "filter show dev v ingress").unwrap();
        assert!(!out.contains("49152"), "{out}");
        assert!(
            run(&mut c, "filter add dev v ingress protocol nope u32")
                .unwrap_err()
                .contains("invalid protocol")
        );
        assert!(
            run(&mut c, "qdisc add dev v ingress")
                .unwrap_err()
                .contains("clsact")
        );
    }

    #[test]
    fn a_batch_names_its_failing_line_and_words_group_quotes() {
        let mut c = Config::default();
        let e = c
            .run_batch(
                "qdisc add dev v clsact # the hooks\n\nfilter add dev v \\\n ingress bogus\n",
                ShowOptions::default(),
            )
            .unwrap_err();
        assert!(
            e.to_string().starts_with("line 3: ") && e.to_string().contains("\"bogus\""),
            "{e}"
        );
        assert_eq!(words("a 'b c' \"\" d"), ["a", "b c", "", "d"]);
        // A `\` on the last line: tc's "Missing continuation line", not
        // a line dropped in silence.
        let e = Config::default()
            .run_batch(
                "qdisc add dev v clsact\nqdisc del dev v \\\n",
                ShowOptions::default(),
            )
            .unwrap_err();
        assert_eq!(e, TcError::MissingContinuation(2));
        assert_eq!(e.to_string(), "line 2: Missing continuation line");
    }

    #[test]
    fn u32_takes_police_inline_as_its_action() {
        let mut c = Config::default();
        run(&mut c, "qdisc add dev v clsact").unwrap();
        run(
            &mut c,
            "filter add dev v ingress prio 1 protocol ip u32 match u32 0 0 police rate 1mbit burst 10k drop flowid 1:1",
        )
        .unwrap();
        let out = run(&mut c, "filter show dev v ingress").unwrap();
        assert!(
            out.contains("*flowid 1:1") && out.contains("police 0x1 rate 1Mbit"),
            "{out}"
        );
        let e = run(
            &mut c,
            "filter add dev v ingress prio 2 protocol ip u32 match u32 0 0 police rate",
        )
        .unwrap_err();
        assert!(e.starts_with("Illegal \"police\""), "{e}");
    }
}
