//! Actions and instructions (`actions=...`), and groups with their
//! buckets (`ovs-ofctl add-group`).

use super::OfctlError;
use super::fields::{self, Ports, check_prereq, parse_port, parse_value};
use super::lexer::{self, Token, tokens};
use crate::types::{
    Action, Bucket, CML_NO_BUFFER, Field, GroupMod, GroupModCommand, GroupType, Instruction, Oxm,
    VID_PRESENT, group, port,
};

/// What the actions so far know of the packet.
struct Ctx<'a> {
    /// The flow's match, for set_field prerequisites (none in a bucket,
    /// where nothing is checked).
    matcher: Option<&'a [Oxm]>,
    /// Whether the packet has a VLAN tag at this point.
    vlan: bool,
    ports: Ports<'a>,
}

fn bad(field: &str, value: &str, expected: &str) -> OfctlError {
    OfctlError::BadValue {
        field: field.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
    }
}

fn num(key: &str, value: &str, bits: u32) -> Result<u128, OfctlError> {
    lexer::number_bits(value, bits).ok_or_else(|| bad(key, value, &format!("a {bits}-bit number")))
}

fn no_arg(tok: &Token) -> Result<(), OfctlError> {
    if tok.value.is_empty() && !tok.paren {
        Ok(())
    } else {
        Err(OfctlError::Syntax(format!(
            "{}: takes no argument",
            tok.key
        )))
    }
}

fn vlan_in(matcher: &[Oxm]) -> bool {
    matcher.iter().any(|o| {
        o.field == Field::VlanVid && o.value & 0x1000 != 0 && o.mask.is_none_or(|m| m & 0x1000 != 0)
    })
}

/// The instructions of `actions=TEXT` for a flow with match `matcher`, in
/// the order OpenFlow 1.3 and ovs-ofctl ask for: meter, apply_actions,
/// clear_actions, write_actions, write_metadata, goto_table.
pub(crate) fn parse_instructions(
    text: &str,
    matcher: &[Oxm],
    ports: Ports,
) -> Result<Vec<Instruction>, OfctlError> {
    let toks = tokens(text)?;
    let mut ctx = Ctx {
        matcher: Some(matcher),
        vlan: vlan_in(matcher),
        ports,
    };
    if toks.len() == 1 && toks[0].key.eq_ignore_ascii_case("drop") {
        no_arg(&toks[0])?;
        return Ok(Vec::new());
    }
    let (mut meter, mut apply, mut clear, mut write, mut meta, mut goto) =
        (None, Vec::new(), false, None, None, None);
    let (mut stage, mut last) = (0, "");
    for tok in &toks {
        let (st, name) = match tok.key {
            "meter" => (1, "meter"),
            "clear_actions" => (3, "clear_actions"),
            "write_actions" => (4, "write_actions"),
            "write_metadata" => (5, "write_metadata"),
            "goto_table" => (6, "goto_table"),
            _ => (2, "apply_actions"),
        };
        if st < stage {
            return Err(OfctlError::Syntax(format!(
                "invalid instruction ordering: {name} must appear before {last}, for OpenFlow 1.1+ compatibility"
            )));
        }
        if st == stage && st != 2 {
            return Err(OfctlError::Syntax(format!(
                "instruction {name} may be specified only once"
            )));
        }
        (stage, last) = (st, name);
        match st {
            1 => meter = Some(num("meter", tok.value, 32)? as u32),
            2 => parse_action(tok, &mut ctx, &mut apply)?,
            3 => {
                no_arg(tok)?;
                clear = true;
            }
            4 => {
                if !tok.paren {
                    return Err(OfctlError::Syntax(
                        "write_actions: the actions go in parentheses: write_actions(...)".into(),
                    ));
                }
                let mut inner = Ctx {
                    matcher: Some(matcher),
                    vlan: vlan_in(matcher),
                    ports,
                };
                write = Some(parse_action_list(tok.value, &mut inner)?);
            }
            5 => {
                let (v, m) = match tok.value.split_once('/') {
                    Some((v, m)) => (num(name, v, 64)?, num(name, m, 64)?),
                    None => (num(name, tok.value, 64)?, u128::from(u64::MAX)),
                };
                meta = Some(Instruction::WriteMetadata {
                    metadata: v as u64,
                    mask: m as u64,
                });
            }
            _ => goto = Some(Instruction::GotoTable(num(name, tok.value, 8)? as u8)),
        }
    }
    let mut out = Vec::new();
    out.extend(meter.map(Instruction::Meter));
    if !apply.is_empty() {
        out.push(Instruction::ApplyActions(apply));
    }
    if clear {
        out.push(Instruction::ClearActions);
    }
    out.extend(write.map(Instruction::WriteActions));
    out.extend(meta);
    out.extend(goto);
    Ok(out)
}

/// A plain list of actions (inside write_actions, or a bucket's).
fn parse_action_list(text: &str, ctx: &mut Ctx) -> Result<Vec<Action>, OfctlError> {
    let toks = tokens(text)?;
    let mut out = Vec::new();
    if toks.len() == 1 && toks[0].key.eq_ignore_ascii_case("drop") {
        no_arg(&toks[0])?;
        return Ok(out);
    }
    for tok in &toks {
        parse_action(tok, ctx, &mut out)?;
    }
    Ok(out)
}

fn output(port: u32) -> Action {
    let max_len = if port == port::CONTROLLER {
        CML_NO_BUFFER
    } else {
        0
    };
    Action::Output { port, max_len }
}

/// Appends a set_field after checking the field's prerequisites.
fn set_field(
    ctx: &mut Ctx,
    f: Field,
    value: u128,
    out: &mut Vec<Action>,
) -> Result<(), OfctlError> {
    if let Some(m) = ctx.matcher {
        if matches!(f, Field::VlanVid | Field::VlanPcp) {
            if !ctx.vlan {
                return Err(OfctlError::Prerequisite {
                    field: fields::name(f).into(),
                    needs: "a VLAN tag (match one or push_vlan first)".into(),
                });
            }
        } else {
            check_prereq(f, m)?;
        }
    }
    out.push(Action::SetField(Oxm {
        field: f,
        value,
        mask: None,
    }));
    Ok(())
}

/// `mod_vlan_vid` and `mod_vlan_pcp` push a tag first when the packet
/// has none, as ovs-ofctl does for OpenFlow 1.1+.
fn push_vlan_if_needed(ctx: &mut Ctx, out: &mut Vec<Action>) {
    if !ctx.vlan {
        out.push(Action::PushVlan(0x8100));
        ctx.vlan = true;
    }
}

fn parse_action(tok: &Token, ctx: &mut Ctx, out: &mut Vec<Action>) -> Result<(), OfctlError> {
    let key = tok.key.to_ascii_lowercase();
    let (k, v) = (key.as_str(), tok.value);
    let reserved = match k {
        "in_port" => Some(port::IN_PORT),
        "table" => Some(port::TABLE),
        "normal" => Some(port::NORMAL),
        "flood" => Some(port::FLOOD),
        "all" => Some(port::ALL),
        "local" => Some(port::LOCAL),
        _ => None,
    };
    if let Some(p) = reserved {
        no_arg(tok)?;
        out.push(output(p));
        return Ok(());
    }
    if let Some(a) = super::nx_text::parse(k, v, tok.paren, ctx.matcher, ctx.ports) {
        out.push(a?);
        return Ok(());
    }
    if tok.paren && k != "controller" {
        return Err(OfctlError::UnknownAction(tok.key.to_string()));
    }
    let proto = ctx.matcher.and_then(|m| {
        m.iter()
            .find(|o| o.field == Field::IpProto && o.mask.is_none())
            .map(|o| o.value)
    });
    match k {
        "output" => {
            let p = parse_port(v, ctx.ports)
                .ok_or_else(|| bad("output", v, "a port number or name"))?;
            out.push(output(p));
        }
        "controller" => {
            let mut max_len = CML_NO_BUFFER;
            if tok.paren {
                for t in tokens(v)? {
                    if t.key != "max_len" {
                        return Err(OfctlError::Syntax(format!(
                            "controller: {} cannot be encoded in OpenFlow 1.3 (only max_len)",
                            t.key
                        )));
                    }
                    max_len = num("max_len", t.value, 16)? as u16;
                }
            } else if !v.is_empty() {
                max_len = num("controller", v, 16)? as u16;
            }
            out.push(Action::Output {
                port: port::CONTROLLER,
                max_len,
            });
        }
        "set_field" => {
            let (val, name) = v
                .split_once("->")
                .ok_or_else(|| bad("set_field", v, "VALUE->FIELD"))?;
            let f = fields::by_name(name).ok_or_else(|| {
                OfctlError::Syntax(format!("set_field: {name} is not a valid OXM field name"))
            })?;
            if matches!(
                f,
                Field::EthType
                    | Field::IpProto
                    | Field::TcpFlags
                    | Field::InPhyPort
                    | Field::Ipv6Exthdr
            ) {
                return Err(OfctlError::Syntax(format!(
                    "set_field: {name} is read-only"
                )));
            }
            if val.contains('/') {
                return Err(OfctlError::Syntax(format!(
                    "set_field: {val}->{name}: a masked set_field cannot be encoded in OpenFlow 1.3"
                )));
            }
            let value = parse_value(name, f, val, ctx.ports)?;
            set_field(ctx, f, value, out)?;
        }
        "mod_dl_src" | "mod_dl_dst" | "mod_nw_src" | "mod_nw_dst" => {
            let f = match k {
                "mod_dl_src" => Field::EthSrc,
                "mod_dl_dst" => Field::EthDst,
                "mod_nw_src" => Field::Ipv4Src,
                _ => Field::Ipv4Dst,
            };
            let value = parse_value(k, f, v, ctx.ports)?;
            set_field(ctx, f, value, out)?;
        }
        "mod_tp_src" | "mod_tp_dst" => {
            let src = k == "mod_tp_src";
            let f = match proto {
                Some(6) if src => Field::TcpSrc,
                Some(6) => Field::TcpDst,
                Some(17) if src => Field::UdpSrc,
                Some(17) => Field::UdpDst,
                Some(132) if src => Field::SctpSrc,
                Some(132) => Field::SctpDst,
                _ => {
                    return Err(OfctlError::Prerequisite {
                        field: k.into(),
                        needs: "a match on tcp, udp or sctp".into(),
                    });
                }
            };
            set_field(ctx, f, num(k, v, 16)?, out)?;
        }
        "mod_nw_tos" => {
            let tos = lexer::number_bits(v, 8)
                .filter(|t| t & 3 == 0)
                .ok_or_else(|| bad(k, v, "a valid TOS (a multiple of 4 below 256)"))?;
            set_field(ctx, Field::IpDscp, tos >> 2, out)?;
        }
        "mod_nw_ecn" => set_field(ctx, Field::IpEcn, num(k, v, 2)?, out)?,
        "mod_vlan_vid" => {
            let vid = num(k, v, 12)?;
            push_vlan_if_needed(ctx, out);
            set_field(ctx, Field::VlanVid, vid | u128::from(VID_PRESENT), out)?;
        }
        "mod_vlan_pcp" => {
            let pcp = num(k, v, 3)?;
            push_vlan_if_needed(ctx, out);
            set_field(ctx, Field::VlanPcp, pcp, out)?;
        }
        "push_vlan" => {
            let e = num(k, v, 16)?;
            if e != 0x8100 && e != 0x88a8 {
                return Err(bad(k, v, "a VLAN ethertype (0x8100 or 0x88a8)"));
            }
            out.push(Action::PushVlan(e as u16));
            ctx.vlan = true;
        }
        "pop_vlan" | "strip_vlan" => {
            no_arg(tok)?;
            out.push(Action::PopVlan);
            ctx.vlan = false;
        }
        "dec_ttl" => {
            no_arg(tok)?;
            out.push(Action::DecNwTtl);
        }
        "set_nw_ttl" | "mod_nw_ttl" => out.push(Action::SetNwTtl(num(k, v, 8)? as u8)),
        "group" => out.push(Action::Group(num(k, v, 32)? as u32)),
        "set_queue" => out.push(Action::SetQueue(num(k, v, 32)? as u32)),
        "copy_ttl_out" | "copy_ttl_in" | "dec_mpls_ttl" | "pop_pbb" => {
            no_arg(tok)?;
            out.push(match k {
                "copy_ttl_out" => Action::CopyTtlOut,
                "copy_ttl_in" => Action::CopyTtlIn,
                "dec_mpls_ttl" => Action::DecMplsTtl,
                _ => Action::PopPbb,
            });
        }
        "set_mpls_ttl" => out.push(Action::SetMplsTtl(num(k, v, 8)? as u8)),
        "push_mpls" => out.push(Action::PushMpls(num(k, v, 16)? as u16)),
        "pop_mpls" => out.push(Action::PopMpls(num(k, v, 16)? as u16)),
        "push_pbb" => out.push(Action::PushPbb(num(k, v, 16)? as u16)),
        "drop" => {
            return Err(OfctlError::Syntax("drop must be the only action".into()));
        }
        _ => {
            // A bare port number, or a name the resolver knows, outputs there.
            let p = match v.is_empty() {
                true if lexer::number(tok.key).is_some() => parse_port(tok.key, ctx.ports),
                true => (ctx.ports)(tok.key),
                false => None,
            };
            out.push(output(
                p.ok_or_else(|| OfctlError::UnknownAction(tok.key.to_string()))?,
            ));
        }
    }
    Ok(())
}

/// A group as `ovs-ofctl add-group` takes it:
/// `group_id=1,type=select,bucket=weight:10,actions=output:1,bucket=...`.
pub fn parse_group(text: &str, command: GroupModCommand) -> Result<GroupMod, OfctlError> {
    parse_group_with_ports(text, command, &|_| None)
}

/// [`parse_group`] with port names resolved by `ports`.
pub fn parse_group_with_ports(
    text: &str,
    command: GroupModCommand,
    ports: &dyn Fn(&str) -> Option<u32>,
) -> Result<GroupMod, OfctlError> {
    let mut id = None;
    let mut group_type = GroupType::All;
    // Buckets with their weight if written (select's default is 1).
    let mut buckets: Vec<(Option<u16>, Bucket)> = Vec::new();
    let mut ctx = Ctx {
        matcher: None,
        vlan: true,
        ports,
    };
    for tok in tokens(text)? {
        if tok.key == "bucket" {
            buckets.push((
                None,
                Bucket {
                    weight: 0,
                    watch_port: port::ANY,
                    watch_group: group::ANY,
                    actions: Vec::new(),
                },
            ));
            for t in tokens(tok.value)? {
                bucket_item(&t, buckets.last_mut().expect("pushed"), &mut ctx)?;
            }
            continue;
        }
        if let Some(b) = buckets.last_mut() {
            bucket_item(&tok, b, &mut ctx)?;
            continue;
        }
        match tok.key {
            "group_id" => {
                id = Some(match tok.value {
                    "all" => group::ALL,
                    "any" => group::ANY,
                    v => num("group_id", v, 32)? as u32,
                })
            }
            "type" => {
                group_type = match tok.value {
                    "all" => GroupType::All,
                    "select" => GroupType::Select,
                    "indirect" => GroupType::Indirect,
                    "ff" | "fast_failover" => GroupType::FastFailover,
                    v => return Err(bad("type", v, "a group type (all, select, indirect or ff)")),
                }
            }
            k => return Err(OfctlError::UnknownField(k.to_string())),
        }
    }
    let group_id = match (id, command) {
        (Some(id), _) => id,
        (None, GroupModCommand::Delete) => group::ALL,
        (None, _) => return Err(OfctlError::Syntax("must specify a group_id".into())),
    };
    let default_weight = u16::from(group_type == GroupType::Select);
    Ok(GroupMod {
        command,
        group_type,
        group_id,
        buckets: buckets
            .into_iter()
            .map(|(w, b)| Bucket {
                weight: w.unwrap_or(default_weight),
                ..b
            })
            .collect(),
    })
}

fn bucket_item(
    tok: &Token,
    b: &mut (Option<u16>, Bucket),
    ctx: &mut Ctx,
) -> Result<(), OfctlError> {
    match tok.key {
        "weight" => b.0 = Some(num("weight", tok.value, 16)? as u16),
        "watch_port" => {
            b.1.watch_port = parse_port(tok.value, ctx.ports)
                .ok_or_else(|| bad("watch_port", tok.value, "a port number or name"))?
        }
        "watch_group" => b.1.watch_group = num("watch_group", tok.value, 32)? as u32,
        "actions" => b.1.actions.extend(parse_action_list(tok.value, ctx)?),
        "bucket_id" => {
            return Err(OfctlError::Syntax(
                "bucket_id cannot be encoded in OpenFlow 1.3".into(),
            ));
        }
        _ => parse_action(tok, ctx, &mut b.1.actions)?,
    }
    Ok(())
}
