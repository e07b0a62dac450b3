//! The Nicira actions in a translation, as Open vSwitch runs them:
//! `resubmit` looks the packet up again in a table (as if it came in on
//! another port, for that lookup and its actions), `load` and `move`
//! write bits of a register, the metadata or a header field, `learn`
//! makes a flow from the packet's fields (added by the caller once the
//! packet passes), `note` does nothing. Reading a field for `move` or
//! `learn` adds its bits to the megaflow mask.

use openflow::{
    Action, Field, FlowMod, FlowModCommand, Instruction, Learn, LearnSpec, LearnSrc, Match,
    NXM_OF_IN_PORT, NXM_OF_VLAN_TCI, NxAction, Oxm, SubField, flow_flags, learn_flags, port,
};

use super::xlate::{Branch, Ctx, Xlate};
use crate::flow::{FieldSlot, pipeline_slot_of, slot};

/// How deep resubmits may nest, and how many one translation may do
/// (Open vSwitch's limits: past them the translation fails and the
/// packet is dropped).
const MAX_RESUBMIT_DEPTH: u32 = 64;
const MAX_RESUBMITS: u32 = 4096;

/// `value`'s `n_bits` low bits.
fn low_bits(value: u128, n_bits: u16) -> u128 {
    if n_bits >= 128 {
        value
    } else {
        value & ((1u128 << n_bits) - 1)
    }
}

impl Xlate<'_> {
    pub(super) fn nx(&mut self, b: &mut Branch, a: &NxAction, depth: u32, ctx: Ctx) {
        match a {
            NxAction::Resubmit { in_port, table } => {
                // "This table": the entry's, or table 0 for a packet-out.
                let here = if ctx.table == 0xff { 0 } else { ctx.table };
                self.resubmit(b, *in_port, table.unwrap_or(here), depth);
            }
            NxAction::RegLoad { dst, value } => self.write_bits(b, dst, u128::from(*value)),
            NxAction::RegMove { src, dst } => {
                if let Some(v) = self.read_bits(b, src) {
                    self.write_bits(b, dst, v);
                }
            }
            NxAction::Note(_) => {}
            NxAction::Learn(l) => {
                if let Some(fm) = self.learn(b, l) {
                    self.learned.flows.push(fm);
                }
            }
        }
    }

    fn resubmit(&mut self, b: &mut Branch, in_port: u32, table: u8, depth: u32) {
        if depth >= MAX_RESUBMIT_DEPTH || self.resubmits >= MAX_RESUBMITS {
            self.too_deep = true;
            b.halted = true;
            return;
        }
        self.resubmits += 1;
        let saved = (self.in_port, slot::IN_PORT.get(&b.flow));
        if in_port != port::IN_PORT {
            self.in_port = in_port;
            slot::IN_PORT.set(&mut b.flow, u128::from(in_port));
        }
        // The entry found runs as in a pipeline (its action set is the
        // enclosing pipeline's), then the actions after the resubmit go on.
        self.tables(b, table, depth + 1);
        self.in_port = saved.0;
        slot::IN_PORT.set(&mut b.flow, saved.1);
    }

    /// The slot of a subfield's field (validated when the flow was added).
    fn slot(s: &SubField) -> Option<(Field, FieldSlot)> {
        let f = s.field()?;
        Some((f, pipeline_slot_of(f)?))
    }

    /// The bits of `src`, marked as looked at (the 802.1Q TCI too).
    fn read_bits(&mut self, b: &Branch, src: &SubField) -> Option<u128> {
        let s = match src.header {
            NXM_OF_VLAN_TCI => slot::VLAN_TCI,
            _ => Self::slot(src)?.1,
        };
        s.or_mask(&mut self.mask, src.mask());
        Some(low_bits(s.get(&b.flow) >> src.ofs, src.n_bits))
    }

    /// Writes `value` into the bits of `dst`: a register or the metadata
    /// in the flow only; a header field also in the packet, where its
    /// header is there (as a set-field of the whole new value).
    fn write_bits(&mut self, b: &mut Branch, dst: &SubField, value: u128) {
        let Some((f, s)) = Self::slot(dst) else {
            return;
        };
        let bits = low_bits(value, dst.n_bits) << dst.ofs;
        let mask = dst.mask();
        if f.register().is_some() || f == Field::Metadata {
            let old = s.get(&b.flow);
            s.set(&mut b.flow, (old & !mask) | bits);
            return;
        }
        // A part of a header field keeps the field's other bits, which
        // decide the value written.
        let old = if mask == f.full_mask() {
            0
        } else {
            self.look(b, s)
        };
        let set = Action::SetField(Oxm::exact(f, (old & !mask) | bits));
        let ctx = Ctx {
            table: 0xff,
            cookie: u64::MAX,
            miss: false,
        };
        self.action_in(b, &set, 0, false, ctx);
    }
}

impl Xlate<'_> {
    /// The flow `l` makes of `b`'s packet; `None` when a spec cannot be
    /// said as an OpenFlow 1.3 match (a part of a field OXM cannot mask).
    fn learn(&mut self, b: &Branch, l: &Learn) -> Option<FlowMod> {
        let mut fields: Vec<Oxm> = Vec::new();
        let mut actions = Vec::new();
        for spec in &l.specs {
            match spec {
                LearnSpec::Match { dst, src } => {
                    let v = self.learn_value(b, src)?;
                    learned_match(&mut fields, dst, v)?;
                }
                LearnSpec::Load { dst, src } => {
                    let value = self.learn_value(b, src)?;
                    actions.push(Action::Nx(NxAction::RegLoad {
                        dst: *dst,
                        value: u64::try_from(value).ok()?,
                    }));
                }
                LearnSpec::Output { src } => {
                    let p = self.read_bits(b, src)? as u32;
                    let p = if src.header == NXM_OF_IN_PORT && p >= 0xff00 {
                        0xffff_0000 | p
                    } else {
                        p
                    };
                    actions.push(Action::Output {
                        port: p,
                        max_len: 0,
                    });
                }
            }
        }
        for o in &mut fields {
            if o.mask == Some(o.field.full_mask()) {
                o.mask = None;
            }
            if o.mask.is_some() && !o.field.maskable() {
                return None;
            }
        }
        let flags = if l.flags & learn_flags::SEND_FLOW_REM != 0 {
            flow_flags::SEND_FLOW_REM
        } else {
            0
        };
        Some(FlowMod {
            cookie: l.cookie,
            cookie_mask: 0,
            table_id: l.table_id,
            command: FlowModCommand::Add,
            idle_timeout: l.idle_timeout,
            hard_timeout: l.hard_timeout,
            priority: l.priority,
            buffer_id: openflow::NO_BUFFER,
            out_port: port::ANY,
            out_group: openflow::group::ANY,
            flags,
            matcher: Match { fields },
            instructions: match actions.is_empty() {
                true => Vec::new(),
                false => vec![Instruction::ApplyActions(actions)],
            },
        })
    }

    fn learn_value(&mut self, b: &Branch, src: &LearnSrc) -> Option<u128> {
        match src {
            LearnSrc::Field(s) => self.read_bits(b, s),
            LearnSrc::Value(v) => Some(*v),
        }
    }
}

/// Adds "the bits of `dst` equal `value`" to a learned flow's match: the
/// 802.1Q TCI as `vlan_vid` (its CFI bit is OpenFlow's present bit) and
/// `vlan_pcp`; OpenFlow 1.0's 16-bit in_port as the 32-bit one.
fn learned_match(fields: &mut Vec<Oxm>, dst: &SubField, value: u128) -> Option<()> {
    let bits = low_bits(value, dst.n_bits) << dst.ofs;
    let mask = dst.mask();
    let mut put = |field: Field, value: u128, mask: u128| match fields
        .iter_mut()
        .find(|o| o.field == field)
    {
        Some(o) => {
            o.value |= value & mask;
            o.mask = o.mask.map(|m| m | mask);
        }
        None => fields.push(Oxm::masked(field, value & mask, mask)),
    };
    match dst.header {
        NXM_OF_VLAN_TCI => {
            if mask & 0x1fff != 0 {
                put(Field::VlanVid, bits & 0x1fff, mask & 0x1fff);
            }
            match (mask >> 13) & 7 {
                0 => {}
                7 => put(Field::VlanPcp, (bits >> 13) & 7, 7),
                _ => return None,
            }
        }
        NXM_OF_IN_PORT if mask == 0xffff => {
            let p = if bits >= 0xff00 {
                0xffff_0000 | bits
            } else {
                bits
            };
            put(Field::InPort, p, Field::InPort.full_mask());
        }
        _ => put(dst.field()?, bits, mask),
    }
    Some(())
}
