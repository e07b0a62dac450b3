//! `vlan`: the kernel's `act_vlan.c`. `pop` takes the outer tag off (an
//! untagged packet passes unchanged), `push` puts a new outer tag on (an
//! existing tag stays, inside it), `modify` rewrites the outer tag's id
//! (and priority, and TPID to the action's protocol) and leaves an
//! untagged packet alone. The frame's bytes carry the tags; the skb's
//! view is parsed again after. Default control: `pipe`.

use serde_json::{Value, json};

use super::{ActionHead, ActionStats, control_at, control_json, invarg, next};
use crate::control::Control;
use crate::error::TcError;
use crate::skb::Skb;

const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlanOp {
    Pop,
    Push,
    Modify,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vlan {
    pub op: VlanOp,
    pub id: u16,
    /// The tag's TPID (802.1Q unless told).
    pub protocol: u16,
    pub priority: Option<u8>,
}

fn tagged(skb: &Skb) -> bool {
    skb.data
        .get(12..14)
        .is_some_and(|t| matches!(u16::from_be_bytes([t[0], t[1]]), ETH_P_8021Q | ETH_P_8021AD))
}

impl Vlan {
    /// `tcf_vlan_act`.
    pub fn act(&self, skb: &mut Skb, control: Control, stats: &mut ActionStats) -> Control {
        match self.op {
            VlanOp::Pop => {
                if tagged(skb) {
                    if skb.data.len() < 18 {
                        stats.drops += 1;
                        return Control::SHOT;
                    }
                    skb.data.drain(12..16);
                }
            }
            VlanOp::Push => {
                if skb.data.len() < 12 {
                    stats.drops += 1;
                    return Control::SHOT;
                }
                let tci = self.id | u16::from(self.priority.unwrap_or(0)) << 13;
                let mut tag = self.protocol.to_be_bytes().to_vec();
                tag.extend_from_slice(&tci.to_be_bytes());
                skb.data.splice(12..12, tag);
            }
            VlanOp::Modify => {
                if !tagged(skb) {
                    return control;
                }
                let Some(old) = skb.data.get(14..16) else {
                    stats.drops += 1;
                    return Control::SHOT;
                };
                let mut tci = (u16::from_be_bytes([old[0], old[1]]) & !0x0fff) | self.id;
                if let Some(p) = self.priority {
                    tci = (tci & 0x1fff) | u16::from(p) << 13;
                }
                skb.data[12..14].copy_from_slice(&self.protocol.to_be_bytes());
                skb.data[14..16].copy_from_slice(&tci.to_be_bytes());
            }
        }
        skb.reparse();
        control
    }
}

/// `vlan ...` (`words[0]` is `vlan`), as iproute2's `parse_vlan` with the
/// kernel's checks.
pub fn parse(words: &[&str]) -> Result<(Vlan, Control, usize), TcError> {
    let mut op = None;
    let (mut id, mut protocol, mut priority) = (None, None, None);
    let mut i = 1;
    while let Some(&w) = words.get(i) {
        let pushing = matches!(op, Some(VlanOp::Push | VlanOp::Modify));
        match w {
            "pop" | "push" | "modify" if op.is_some() => {
                return Err(format!("vlan: unexpected \"{w}\" (one of pop, push, modify)").into());
            }
            "pop" => op = Some(VlanOp::Pop),
            "push" => op = Some(VlanOp::Push),
            "modify" => op = Some(VlanOp::Modify),
            "pop_eth" | "push_eth" => {
                return Err(format!(
                    "vlan {w}: sluice's packets always have an Ethernet header; {w} is not taken"
                )
                .into());
            }
            "id" | "protocol" | "priority" if !pushing => {
                return Err(invarg("only valid for push/modify", w));
            }
            "id" => {
                let v = next(words, i)?;
                let n = super::parse_u32(v)
                    .and_then(|n| u16::try_from(n).ok())
                    .ok_or_else(|| invarg("id is invalid", v))?;
                if n >= 0x0fff {
                    return Err(format!(
                        "vlan id {n}: Specified VLAN ID is out of range (0 to 4094)"
                    )
                    .into());
                }
                id = Some(n);
                i += 1;
            }
            "protocol" => {
                let v = next(words, i)?;
                protocol = Some(match crate::protocol::parse_protocol(v) {
                    Ok(p @ (ETH_P_8021Q | ETH_P_8021AD)) => p,
                    Ok(_) => {
                        return Err(format!(
                            "vlan protocol \"{v}\": protocol not supported (802.1Q or 802.1ad)"
                        )
                        .into());
                    }
                    Err(_) => return Err(invarg("protocol is invalid", v)),
                });
                i += 1;
            }
            "priority" => {
                let v = next(words, i)?;
                priority = Some(
                    super::parse_u32(v)
                        .filter(|&p| p <= 7)
                        .ok_or_else(|| invarg("prio is invalid", v))? as u8,
                );
                i += 1;
            }
            _ => break,
        }
        i += 1;
    }
    let op = op.ok_or_else(|| match words.get(i) {
        Some(w) => format!("vlan: \"{w}\" is not pop, push or modify"),
        None => "vlan needs pop, push or modify".into(),
    })?;
    let (control, i) = control_at(words, i, Control::PIPE);
    let id = match (op, id) {
        (VlanOp::Pop, _) => 0,
        (_, Some(id)) => id,
        (VlanOp::Push, None) => return Err("id needs to be set for push".into()),
        (VlanOp::Modify, None) => return Err("id needs to be set for modify".into()),
    };
    Ok((
        Vlan {
            op,
            id,
            protocol: protocol.unwrap_or(ETH_P_8021Q),
            priority,
        },
        control,
        i,
    ))
}

fn op_name(op: VlanOp) -> &'static str {
    match op {
        VlanOp::Pop => "pop",
        VlanOp::Push => "push",
        VlanOp::Modify => "modify",
    }
}

fn proto_name(p: u16) -> &'static str {
    if p == ETH_P_8021AD {
        "802.1ad"
    } else {
        "802.1Q"
    }
}

/// The text after `action order N: ` (`print_vlan`; the kernel gives id,
/// protocol and priority back for push and modify, so all are printed).
pub fn text(a: ActionHead, v: &Vlan) -> String {
    let mut s = format!("vlan  {}", op_name(v.op));
    if v.op != VlanOp::Pop {
        s += &format!(
            " id {} protocol {} priority {}",
            v.id,
            proto_name(v.protocol),
            v.priority.unwrap_or(0)
        );
    }
    s + &format!(
        " {}\n\t index {} ref {} bind {}",
        a.control.name(),
        a.index,
        a.refs,
        a.binds
    )
}

/// Its `tc -j` fields.
pub fn json(a: ActionHead, v: &Vlan, o: &mut Value) {
    o["vlan_action"] = json!(op_name(v.op));
    if v.op != VlanOp::Pop {
        o["id"] = json!(v.id);
        o["protocol"] = json!(proto_name(v.protocol));
        o["priority"] = json!(v.priority.unwrap_or(0));
    }
    o["control_action"] = control_json(a.control);
    o["index"] = json!(a.index);
    o["ref"] = json!(a.refs);
    o["bind"] = json!(a.binds);
}
