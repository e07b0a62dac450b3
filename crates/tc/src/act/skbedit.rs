//! `skbedit`: the kernel's `act_skbedit.c`, setting skb fields: the
//! priority, the mark (under a mask), the transmit queue, or the priority
//! from the packet's DS field (`inheritdsfield`). Default control: `pipe`.

use serde_json::{Value, json};

use super::{ActionHead, ActionStats, control_at, control_json, next};
use crate::control::Control;
use crate::error::TcError;
use crate::handle::{format_classid, parse_classid};
use crate::skb::Skb;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skbedit {
    pub queue_mapping: Option<u16>,
    pub priority: Option<u32>,
    pub mark: Option<u32>,
    /// The mark's mask, when given (else all of the mark).
    pub mask: Option<u32>,
    pub inheritdsfield: bool,
}

impl Skbedit {
    /// `tcf_skbedit_act`.
    pub fn act(&self, skb: &mut Skb, control: Control, stats: &mut ActionStats) -> Control {
        if let Some(p) = self.priority {
            skb.priority = p;
        }
        if self.inheritdsfield {
            let ds = match skb.protocol {
                0x0800 => skb.bytes(0, 20).map(|h| h[1]),
                0x86dd => skb
                    .bytes(0, 40)
                    .map(|h| ((u16::from_be_bytes([h[0], h[1]]) >> 4) & 0xff) as u8),
                _ => None,
            };
            match (skb.protocol, ds) {
                (_, Some(ds)) => skb.priority = u32::from(ds >> 2),
                (0x0800 | 0x86dd, None) => {
                    stats.drops += 1;
                    return Control::SHOT;
                }
                _ => {}
            }
        }
        if let Some(q) = self.queue_mapping {
            skb.queue_mapping = q;
        }
        if let Some(m) = self.mark {
            let mask = self.mask.unwrap_or(u32::MAX);
            skb.mark = (skb.mark & !mask) | (m & mask);
        }
        control
    }
}

/// `skbedit ...` (`words[0]` is `skbedit`), as iproute2's `parse_skbedit`.
pub fn parse(words: &[&str]) -> Result<(Skbedit, Control, usize), TcError> {
    let mut e = Skbedit::default();
    let mut i = 1;
    while let Some(&w) = words.get(i) {
        match w {
            "queue_mapping" => {
                let v = next(words, i)?;
                e.queue_mapping = Some(
                    v.parse()
                        .map_err(|_| format!("Illegal queue_mapping \"{v}\""))?,
                );
            }
            "priority" => {
                let v = next(words, i)?;
                e.priority =
                    Some(parse_classid(v).map_err(|_| format!("Illegal priority \"{v}\""))?);
            }
            "mark" => {
                let v = next(words, i)?;
                let (m, mask) = v.split_once('/').map_or((v, None), |(a, b)| (a, Some(b)));
                e.mark = Some(super::parse_u32(m).ok_or_else(|| format!("Illegal mark \"{m}\""))?);
                if let Some(mask) = mask {
                    e.mask = Some(
                        super::parse_u32(mask).ok_or_else(|| format!("Illegal mask \"{mask}\""))?,
                    );
                }
            }
            "ptype" => {
                let v = next(words, i)?;
                return Err(match v {
                    "host" | "otherhost" | "broadcast" | "multicast" => TcError::Syntax(format!(
                        "skbedit ptype {v}: sluice's skb has no packet type (it does not deliver \
                         packets to a host), so ptype has no meaning here"
                    )),
                    _ => TcError::Syntax(format!("Illegal ptype ({v})")),
                });
            }
            "inheritdsfield" => {
                e.inheritdsfield = true;
                i += 1;
                continue;
            }
            _ => break,
        }
        i += 2;
    }
    if e == Skbedit::default() {
        return Err(match words.get(i) {
            Some(w) => TcError::Syntax(format!(
                "skbedit: \"{w}\" is not queue_mapping, priority, mark, ptype or inheritdsfield"
            )),
            None => "skbedit needs queue_mapping, priority, mark, ptype or inheritdsfield".into(),
        });
    }
    let (control, i) = control_at(words, i, Control::PIPE);
    Ok((e, control, i))
}

/// The text after `action order N: ` (`print_skbedit`).
pub fn text(a: ActionHead, e: &Skbedit) -> String {
    let mut s = "skbedit ".to_string();
    if let Some(q) = e.queue_mapping {
        s += &format!("queue_mapping {q}");
    }
    if let Some(p) = e.priority {
        s += &format!(" priority {}", format_classid(p));
    }
    if let Some(m) = e.mark {
        s += &format!(" mark {m}");
    }
    if let Some(m) = e.mask {
        s += &if m == 0 {
            "/0".to_string()
        } else {
            format!("/{m:#x}")
        };
    }
    if e.inheritdsfield {
        s += " inheritdsfield";
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
pub fn json(a: ActionHead, e: &Skbedit, o: &mut Value) {
    if let Some(q) = e.queue_mapping {
        o["queue_mapping"] = json!(q);
    }
    if let Some(p) = e.priority {
        o["priority"] = json!(format_classid(p));
    }
    if let Some(m) = e.mark {
        o["mark"] = json!(m);
    }
    if let Some(m) = e.mask {
        o["mask"] = json!(format!("{m:x}"));
    }
    if e.inheritdsfield {
        o["inheritdsfield"] = Value::Null;
    }
    o["control_action"] = control_json(a.control);
    o["index"] = json!(a.index);
    o["ref"] = json!(a.refs);
    o["bind"] = json!(a.binds);
}
