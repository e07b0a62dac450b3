//! The Nicira actions in a translation, as Open vSwitch runs them:
//! `resubmit` looks the packet up again in a table (as if it came in on
//! another port, for that lookup and its actions), `load` and `move`
//! write bits of a register, the metadata or a header field, `note` does
//! nothing. Reading a field for `move` adds its bits to the megaflow mask.

use openflow::{Action, Field, NxAction, Oxm, SubField, port};

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

    /// The bits of `src`, marked as looked at.
    fn read_bits(&mut self, b: &Branch, src: &SubField) -> Option<u128> {
        let (_, s) = Self::slot(src)?;
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
