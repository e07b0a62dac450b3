//! What this switch accepts in flow entries, packet-outs and groups, and
//! the OpenFlow error for the rest: refused when added, a request never
//! fails later while packets run.

use openflow::{
    Action, Field, GroupModCommand, GroupType, Instruction, LearnSpec, LearnSrc, NxAction,
    SubField, error, port,
};

use super::{N_TABLES, Ofproto};
use crate::OfError;

fn bad_action(code: u16, why: String) -> OfError {
    OfError::new(error::BAD_ACTION, code, why)
}

fn bad_instruction(code: u16, why: String) -> OfError {
    OfError::new(error::BAD_INSTRUCTION, code, why)
}

/// An entry's instructions, in table `table`.
pub fn instructions(of: &Ofproto, table: u8, list: &[Instruction]) -> Result<(), OfError> {
    let mut seen = [false; 7];
    for i in list {
        let (kind, name) = match i {
            Instruction::GotoTable(_) => (0, "goto_table"),
            Instruction::WriteMetadata { .. } => (1, "write_metadata"),
            Instruction::WriteActions(_) => (2, "write_actions"),
            Instruction::ApplyActions(_) => (3, "apply_actions"),
            Instruction::ClearActions => (4, "clear_actions"),
            Instruction::Meter(_) => (5, "meter"),
            Instruction::Experimenter { .. } => (6, "experimenter"),
        };
        if std::mem::replace(&mut seen[kind], true) {
            return Err(bad_instruction(
                error::BAD_INSTRUCTION_UNSUP_INST,
                format!("{name} appears twice in one flow entry"),
            ));
        }
        match i {
            Instruction::GotoTable(n) if *n <= table || *n >= N_TABLES => {
                return Err(bad_instruction(
                    error::BAD_INSTRUCTION_BAD_TABLE_ID,
                    format!("goto_table:{n} from table {table} (a later table below {N_TABLES})"),
                ));
            }
            Instruction::WriteActions(a) | Instruction::ApplyActions(a) => actions(of, a, false)?,
            Instruction::Meter(m) => {
                return Err(bad_instruction(
                    error::BAD_INSTRUCTION_UNSUP_INST,
                    format!("meter:{m}: this switch has no meters"),
                ));
            }
            Instruction::Experimenter { experimenter, .. } => {
                return Err(bad_instruction(
                    error::BAD_INSTRUCTION_BAD_EXPERIMENTER,
                    format!("experimenter instruction {experimenter:#x} is not supported"),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// An action list; `packet_out` allows `output:TABLE`.
pub fn actions(of: &Ofproto, list: &[Action], packet_out: bool) -> Result<(), OfError> {
    for a in list {
        action(of, a, packet_out)?;
    }
    Ok(())
}

fn action(of: &Ofproto, a: &Action, packet_out: bool) -> Result<(), OfError> {
    match a {
        Action::Output { port: p, .. } => {
            let ok = match *p {
                0 => false,
                n if n < port::MAX => true,
                port::IN_PORT
                | port::ALL
                | port::FLOOD
                | port::CONTROLLER
                | port::LOCAL
                | port::NORMAL => true,
                port::TABLE => packet_out,
                _ => false,
            };
            if !ok {
                return Err(bad_action(
                    error::BAD_ACTION_BAD_OUT_PORT,
                    format!(
                        "output to port {} is not supported here{}",
                        openflow::port_name(*p),
                        if *p == port::TABLE {
                            " (TABLE is for packet-outs)"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        Action::Group(g) if !of.groups.contains_key(g) => {
            return Err(bad_action(
                error::BAD_ACTION_BAD_OUT_GROUP,
                format!("group {g} does not exist"),
            ));
        }
        Action::Group(_) | Action::SetQueue(_) | Action::PopVlan | Action::DecNwTtl => {}
        Action::SetNwTtl(_) => {}
        Action::PushVlan(tpid) if *tpid != 0x8100 && *tpid != 0x88a8 => {
            return Err(bad_action(
                error::BAD_ACTION_BAD_ARGUMENT,
                format!("push_vlan:{tpid:#06x}: a VLAN ethertype is 0x8100 or 0x88a8"),
            ));
        }
        Action::PushVlan(_) => {}
        Action::Nx(nx) => nicira(nx)?,
        Action::SetField(oxm) => {
            if !settable(oxm.field) {
                return Err(bad_action(
                    error::BAD_ACTION_BAD_SET_TYPE,
                    format!("set_field of {:?} is not supported", oxm.field),
                ));
            }
            if oxm.mask.is_some() {
                return Err(bad_action(
                    error::BAD_ACTION_BAD_SET_ARGUMENT,
                    format!(
                        "set_field of {:?} with a mask (OpenFlow 1.3 has none)",
                        oxm.field
                    ),
                ));
            }
        }
        Action::Experimenter { experimenter, .. } => {
            return Err(bad_action(
                error::BAD_ACTION_BAD_EXPERIMENTER,
                format!("experimenter action {experimenter:#x} is not supported"),
            ));
        }
        other => {
            return Err(bad_action(
                error::BAD_ACTION_BAD_TYPE,
                format!(
                    "{other:?}: MPLS, PBB and TTL-copy actions are not supported by this switch"
                ),
            ));
        }
    }
    Ok(())
}

/// Whether actions may write `field`: the metadata, the registers, and
/// the header fields this switch parses but the port, tunnel id and TCP
/// flags.
fn settable(field: Field) -> bool {
    field == Field::Metadata
        || crate::flow::pipeline_slot_of(field).is_some()
            && !matches!(
                field,
                Field::InPort | Field::InPhyPort | Field::TunnelId | Field::TcpFlags
            )
}

/// A Nicira action: its subfields name fields this switch has, a `load`
/// or `move` writes one it may write.
fn nicira(a: &NxAction) -> Result<(), OfError> {
    let known = |s: &SubField, what: &str| match s.field() {
        Some(f) if crate::flow::pipeline_slot_of(f).is_some() => Ok(f),
        _ => Err(bad_action(
            error::BAD_ACTION_BAD_ARGUMENT,
            format!("{what} {} is not a field this switch has", s.header_name()),
        )),
    };
    let writable = |s: &SubField| {
        let f = known(s, "destination")?;
        if settable(f) {
            Ok(())
        } else {
            Err(bad_action(
                error::BAD_ACTION_BAD_SET_TYPE,
                format!("{} cannot be written", s.header_name()),
            ))
        }
    };
    // The TCI has no OXM field of its own; it is read (and learned) whole.
    let readable = |s: &SubField, what: &str| match s.header {
        openflow::NXM_OF_VLAN_TCI => Ok(()),
        _ => known(s, what).map(|_| ()),
    };
    match a {
        NxAction::Resubmit { .. } | NxAction::Note(_) => Ok(()),
        NxAction::Learn(l) => {
            if l.table_id >= N_TABLES {
                return Err(bad_action(
                    error::BAD_ACTION_BAD_ARGUMENT,
                    format!(
                        "learn into table {}: this switch has {N_TABLES}",
                        l.table_id
                    ),
                ));
            }
            for spec in &l.specs {
                let src = match spec {
                    LearnSpec::Match { dst, src } => {
                        readable(dst, "learned match")?;
                        src
                    }
                    LearnSpec::Load { dst, src } => {
                        writable(dst)?;
                        if dst.n_bits > 64 {
                            return Err(bad_action(
                                error::BAD_ACTION_BAD_ARGUMENT,
                                format!("learned load of {} bits (at most 64)", dst.n_bits),
                            ));
                        }
                        src
                    }
                    LearnSpec::Output { src } => {
                        readable(src, "learned output port")?;
                        continue;
                    }
                };
                if let LearnSrc::Field(s) = src {
                    readable(s, "learn source")?;
                }
            }
            Ok(())
        }
        NxAction::RegLoad { dst, .. } => writable(dst),
        NxAction::RegMove { src, dst } => {
            known(src, "source")?;
            writable(dst)
        }
    }
}

/// A group-mod's buckets.
pub fn buckets(of: &Ofproto, gm: &openflow::GroupMod) -> Result<(), OfError> {
    let fail = |code, why: String| Err(OfError::new(error::GROUP_MOD_FAILED, code, why));
    if gm.group_type == GroupType::Indirect && gm.buckets.len() != 1 {
        return fail(
            error::GROUP_MOD_FAILED_BAD_BUCKET,
            format!("an indirect group has one bucket, not {}", gm.buckets.len()),
        );
    }
    for b in &gm.buckets {
        if b.actions.iter().any(|a| matches!(a, Action::Group(_))) {
            return fail(
                error::GROUP_MOD_FAILED_CHAINING_UNSUPPORTED,
                "a bucket that outputs to a group (chaining) is not supported".into(),
            );
        }
        actions(of, &b.actions, false)?;
    }
    debug_assert!(gm.command != GroupModCommand::Delete);
    Ok(())
}
