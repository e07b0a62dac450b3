//! Flows: `ovs-ofctl add-flow`/`mod-flows`/`del-flows` text to a
//! [`FlowMod`], and `add-flows` files.

use super::OfctlError;
use super::actions::parse_instructions;
use super::fields::{MatchBuilder, parse_port};
use super::lexer::{self, tokens};
use crate::types::{FlowMod, FlowModCommand, NO_BUFFER, TABLE_ALL, flow_flags, group, port};

/// The flow in `text` (`ovs-ofctl` flow syntax) as a flow-mod of
/// `command`. Port names other than the reserved ones are unknown; see
/// [`parse_flow_with_ports`].
pub fn parse_flow(text: &str, command: FlowModCommand) -> Result<FlowMod, OfctlError> {
    parse_flow_with_ports(text, command, &|_| None)
}

/// [`parse_flow`] with port names (`in_port=eth0`, `output:eth1`)
/// resolved by `ports`.
pub fn parse_flow_with_ports(
    text: &str,
    command: FlowModCommand,
    ports: &dyn Fn(&str) -> Option<u32>,
) -> Result<FlowMod, OfctlError> {
    use FlowModCommand::*;
    let delete = matches!(command, Delete | DeleteStrict);
    let (head, actions) = split_actions(text);
    let mut fm = FlowMod {
        cookie: 0,
        cookie_mask: 0,
        // del-flows without table= deletes from every table.
        table_id: if delete { TABLE_ALL } else { 0 },
        command,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 0x8000,
        buffer_id: NO_BUFFER,
        out_port: port::ANY,
        out_group: group::ANY,
        flags: 0,
        matcher: Default::default(),
        instructions: Vec::new(),
    };
    let num = |k: &str, v: &str, bits| {
        lexer::number_bits(v, bits).ok_or_else(|| OfctlError::BadValue {
            field: k.to_string(),
            value: v.to_string(),
            expected: format!("a {bits}-bit number"),
        })
    };
    let mut mb = MatchBuilder::new(ports);
    for tok in tokens(head)? {
        let (k, v) = (tok.key, tok.value);
        let flag = match k {
            "send_flow_rem" => flow_flags::SEND_FLOW_REM,
            "check_overlap" => flow_flags::CHECK_OVERLAP,
            "reset_counts" => flow_flags::RESET_COUNTS,
            "no_packet_counts" => flow_flags::NO_PKT_COUNTS,
            "no_byte_counts" => flow_flags::NO_BYT_COUNTS,
            _ => 0,
        };
        if flag != 0 {
            if !v.is_empty() || tok.paren {
                return Err(OfctlError::Syntax(format!("{k}: takes no value")));
            }
            fm.flags |= flag;
            continue;
        }
        match k {
            "table" if v == "all" => fm.table_id = TABLE_ALL,
            "table" => fm.table_id = num(k, v, 8)? as u8,
            "priority" => fm.priority = num(k, v, 16)? as u16,
            "cookie" => match v.split_once('/') {
                Some(_) if command == Add => {
                    return Err(OfctlError::Syntax(
                        "flow additions cannot use a cookie mask".into(),
                    ));
                }
                Some((c, m)) => {
                    fm.cookie = num(k, c, 64)? as u64;
                    fm.cookie_mask = num(k, m, 64)? as u64;
                }
                None => fm.cookie = num(k, v, 64)? as u64,
            },
            "idle_timeout" => fm.idle_timeout = num(k, v, 16)? as u16,
            "hard_timeout" => fm.hard_timeout = num(k, v, 16)? as u16,
            "out_port" if delete => {
                fm.out_port = parse_port(v, ports).ok_or_else(|| OfctlError::BadValue {
                    field: k.into(),
                    value: v.into(),
                    expected: "a port number or name".into(),
                })?
            }
            "out_group" if delete => {
                fm.out_group = match v {
                    "any" => group::ANY,
                    "all" => group::ALL,
                    _ => num(k, v, 32)? as u32,
                }
            }
            _ => mb.item(&tok)?,
        }
    }
    fm.matcher = mb.finish()?;
    match (actions, delete) {
        (Some(_), true) => {
            return Err(OfctlError::Syntax(
                "actions cannot be given when deleting flows".into(),
            ));
        }
        (None, false) => return Err(OfctlError::Syntax("must specify an action".into())),
        (Some(a), false) => fm.instructions = parse_instructions(a, &fm.matcher.fields, ports)?,
        (None, true) => {}
    }
    Ok(fm)
}

/// Splits at the `actions=` keyword: what comes after it is all actions.
fn split_actions(text: &str) -> (&str, Option<&str>) {
    let b = text.as_bytes();
    for (i, _) in text.match_indices("actions") {
        if i > 0 && !matches!(b[i - 1], b',' | b' ' | b'\t' | b'\r' | b'\n') {
            continue;
        }
        let rest = text[i + "actions".len()..].trim_start_matches([' ', '\t']);
        if let Some(r) = rest.strip_prefix('=') {
            return (&text[..i], Some(r));
        }
    }
    (text, None)
}

/// The flows of an `ovs-ofctl add-flows FILE` file: one per line, blank
/// lines and `#` comments skipped. A line may begin with `add`,
/// `modify`, `modify_strict`, `delete` or `delete_strict`; others add.
/// An error says its line number (from 1).
pub fn parse_flows_file(text: &str) -> Result<Vec<FlowMod>, OfctlError> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once([' ', '\t']).unwrap_or((line, ""));
        let (command, flow) = match word {
            "add" => (FlowModCommand::Add, rest),
            "modify" => (FlowModCommand::Modify, rest),
            "modify_strict" => (FlowModCommand::ModifyStrict, rest),
            "delete" => (FlowModCommand::Delete, rest),
            "delete_strict" => (FlowModCommand::DeleteStrict, rest),
            _ => (FlowModCommand::Add, line),
        };
        let fm = parse_flow(flow, command).map_err(|e| OfctlError::Line {
            line: n + 1,
            source: Box::new(e),
        })?;
        out.push(fm);
    }
    Ok(out)
}
