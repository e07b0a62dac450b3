//! Actions (`ofp_action_*`): 8-byte aligned TLVs.

use crate::decode_error::DecodeError;
use crate::nx::NX_VENDOR_ID;
use crate::nx_types::NxAction;
use crate::types::{Action, Oxm, error};
use crate::wire::{Put, Reader};

/// `ofp_action_type`.
pub mod action_type {
    pub const OUTPUT: u16 = 0;
    pub const COPY_TTL_OUT: u16 = 11;
    pub const COPY_TTL_IN: u16 = 12;
    pub const SET_MPLS_TTL: u16 = 15;
    pub const DEC_MPLS_TTL: u16 = 16;
    pub const PUSH_VLAN: u16 = 17;
    pub const POP_VLAN: u16 = 18;
    pub const PUSH_MPLS: u16 = 19;
    pub const POP_MPLS: u16 = 20;
    pub const SET_QUEUE: u16 = 21;
    pub const GROUP: u16 = 22;
    pub const SET_NW_TTL: u16 = 23;
    pub const DEC_NW_TTL: u16 = 24;
    pub const SET_FIELD: u16 = 25;
    pub const PUSH_PBB: u16 = 26;
    pub const POP_PBB: u16 = 27;
    pub const EXPERIMENTER: u16 = 0xffff;
}
use action_type as at;

fn bad_action(code: u16, reason: String) -> DecodeError {
    DecodeError::new(error::BAD_ACTION, code, reason)
}

impl Action {
    /// The `ofp_action_type` number.
    pub fn action_type(&self) -> u16 {
        match self {
            Action::Output { .. } => at::OUTPUT,
            Action::CopyTtlOut => at::COPY_TTL_OUT,
            Action::CopyTtlIn => at::COPY_TTL_IN,
            Action::SetMplsTtl(_) => at::SET_MPLS_TTL,
            Action::DecMplsTtl => at::DEC_MPLS_TTL,
            Action::PushVlan(_) => at::PUSH_VLAN,
            Action::PopVlan => at::POP_VLAN,
            Action::PushMpls(_) => at::PUSH_MPLS,
            Action::PopMpls(_) => at::POP_MPLS,
            Action::SetQueue(_) => at::SET_QUEUE,
            Action::Group(_) => at::GROUP,
            Action::SetNwTtl(_) => at::SET_NW_TTL,
            Action::DecNwTtl => at::DEC_NW_TTL,
            Action::SetField(_) => at::SET_FIELD,
            Action::PushPbb(_) => at::PUSH_PBB,
            Action::PopPbb => at::POP_PBB,
            Action::Nx(_) | Action::Experimenter { .. } => at::EXPERIMENTER,
        }
    }

    /// Appends the action, padded to 8 bytes. An experimenter action's
    /// data is padded with zeros, which a decode keeps as data.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.u16(self.action_type());
        out.u16(0);
        match self {
            Action::Output { port, max_len } => {
                out.u32(*port);
                out.u16(*max_len);
                out.zeros(6);
            }
            Action::SetMplsTtl(ttl) | Action::SetNwTtl(ttl) => {
                out.u8(*ttl);
                out.zeros(3);
            }
            Action::PushVlan(et)
            | Action::PushMpls(et)
            | Action::PopMpls(et)
            | Action::PushPbb(et) => {
                out.u16(*et);
                out.zeros(2);
            }
            Action::SetQueue(id) | Action::Group(id) => out.u32(*id),
            Action::SetField(oxm) => oxm.encode(out),
            Action::Nx(a) => {
                out.u32(NX_VENDOR_ID);
                a.encode_body(out);
            }
            Action::Experimenter { experimenter, data } => {
                out.u32(*experimenter);
                out.extend_from_slice(data);
            }
            Action::CopyTtlOut
            | Action::CopyTtlIn
            | Action::DecMplsTtl
            | Action::PopVlan
            | Action::DecNwTtl
            | Action::PopPbb => out.zeros(4),
        }
        out.pad8(start);
        let len = out.len() - start;
        out.patch_u16(start + 2, len);
    }

    /// Reads one action.
    pub(crate) fn decode(r: &mut Reader) -> Result<Action, DecodeError> {
        let at = r.pos();
        let short = (error::BAD_ACTION, error::BAD_ACTION_BAD_LEN);
        if r.remaining() < 8 {
            return Err(bad_action(
                error::BAD_ACTION_BAD_LEN,
                format!(
                    "action at byte {at}: {} bytes left, an action needs at least 8",
                    r.remaining()
                ),
            ));
        }
        let atype = r.u16("action type")?;
        let len = usize::from(r.u16("action length")?);
        if len < 8 || len % 8 != 0 || len - 4 > r.remaining() {
            return Err(bad_action(
                error::BAD_ACTION_BAD_LEN,
                format!(
                    "action at byte {at} (type {atype}) has length {len}: not a multiple of 8 of at least 8 within the {} bytes left",
                    r.remaining() + 4
                ),
            ));
        }
        let mut b = r.sub(len - 4, "action", short)?;
        let fixed = |want: usize| -> Result<(), DecodeError> {
            if len == want {
                Ok(())
            } else {
                Err(bad_action(
                    error::BAD_ACTION_BAD_LEN,
                    format!("action at byte {at} (type {atype}) has length {len}, it needs {want}"),
                ))
            }
        };
        let a = match atype {
            at::OUTPUT => {
                fixed(16)?;
                let port = b.u32("output port")?;
                let max_len = b.u16("output max_len")?;
                Action::Output { port, max_len }
            }
            at::COPY_TTL_OUT => fixed(8).map(|_| Action::CopyTtlOut)?,
            at::COPY_TTL_IN => fixed(8).map(|_| Action::CopyTtlIn)?,
            at::DEC_MPLS_TTL => fixed(8).map(|_| Action::DecMplsTtl)?,
            at::POP_VLAN => fixed(8).map(|_| Action::PopVlan)?,
            at::DEC_NW_TTL => fixed(8).map(|_| Action::DecNwTtl)?,
            at::POP_PBB => fixed(8).map(|_| Action::PopPbb)?,
            at::SET_MPLS_TTL => {
                fixed(8)?;
                Action::SetMplsTtl(b.u8("mpls_ttl")?)
            }
            at::SET_NW_TTL => {
                fixed(8)?;
                Action::SetNwTtl(b.u8("nw_ttl")?)
            }
            at::PUSH_VLAN | at::PUSH_MPLS | at::POP_MPLS | at::PUSH_PBB => {
                fixed(8)?;
                let et = b.u16("ethertype")?;
                match atype {
                    at::PUSH_VLAN => Action::PushVlan(et),
                    at::PUSH_MPLS => Action::PushMpls(et),
                    at::POP_MPLS => Action::PopMpls(et),
                    _ => Action::PushPbb(et),
                }
            }
            at::SET_QUEUE => {
                fixed(8)?;
                Action::SetQueue(b.u32("queue_id")?)
            }
            at::GROUP => {
                fixed(8)?;
                Action::Group(b.u32("group_id")?)
            }
            at::SET_FIELD => Action::SetField(set_field(&mut b, at)?),
            at::EXPERIMENTER => {
                let experimenter = b.u32("experimenter id")?;
                let data = b.rest();
                let nx = match experimenter {
                    NX_VENDOR_ID => NxAction::decode_body(&mut Reader::new(data, short), at)?,
                    _ => None,
                };
                match nx {
                    Some(a) => Action::Nx(a),
                    None => Action::Experimenter {
                        experimenter,
                        data: data.to_vec(),
                    },
                }
            }
            t => {
                return Err(bad_action(
                    error::BAD_ACTION_BAD_TYPE,
                    format!("action at byte {at} has unknown type {t}"),
                ));
            }
        };
        Ok(a)
    }
}

/// The OXM of a SET_FIELD action: one unmasked TLV, then zeros. The match
/// errors of the TLV become the action errors the specification gives.
fn set_field(b: &mut Reader, at: usize) -> Result<Oxm, DecodeError> {
    let oxm = Oxm::decode(b).map_err(|e| {
        let code = match e.code {
            error::BAD_MATCH_BAD_FIELD => error::BAD_ACTION_BAD_SET_TYPE,
            error::BAD_MATCH_BAD_LEN => error::BAD_ACTION_BAD_SET_LEN,
            _ => error::BAD_ACTION_BAD_SET_ARGUMENT,
        };
        DecodeError::new(
            error::BAD_ACTION,
            code,
            format!("set_field at byte {at}: {}", e.reason),
        )
    })?;
    if oxm.mask.is_some() {
        return Err(bad_action(
            error::BAD_ACTION_BAD_SET_ARGUMENT,
            format!("set_field at byte {at}: {} has a mask", oxm.field),
        ));
    }
    // What follows the TLV is padding to 8 bytes, no more.
    if b.remaining() >= 8 {
        return Err(bad_action(
            error::BAD_ACTION_BAD_SET_LEN,
            format!(
                "set_field at byte {at}: {} bytes after its OXM, padding is less than 8",
                b.remaining()
            ),
        ));
    }
    Ok(oxm)
}

/// Reads actions until `r` is used up.
pub(crate) fn decode_actions(r: &mut Reader) -> Result<Vec<Action>, DecodeError> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(Action::decode(r)?);
    }
    Ok(v)
}

pub(crate) fn encode_actions(actions: &[Action], out: &mut Vec<u8>) {
    for a in actions {
        a.encode(out);
    }
}
