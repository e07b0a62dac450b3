//! Open vSwitch's `learn` action (`NXAST_LEARN`): a flow-mod template
//! that a packet fills in, adding or refreshing a flow in another table.
//! Its layout is OVS's `nx_action_learn`: 32 bytes of flow-mod fields,
//! then flow-mod specs, each a 16-bit header (source kind, destination
//! kind, bit count), its source (a subfield, or an immediate value in
//! 16-bit units) and its destination (a subfield, or none for `output`).

use crate::decode_error::DecodeError;
use crate::nx::check;
use crate::nx_types::{Learn, LearnSpec, LearnSrc, SubField, learn_flags};
use crate::types::error;
use crate::wire::{Put, Reader};

const SRC_IMMEDIATE: u16 = 1 << 13;
const DST_LOAD: u16 = 1 << 11;
const DST_OUTPUT: u16 = 2 << 11;
const N_BITS: u16 = 0x7ff;

fn put_subfield(out: &mut Vec<u8>, s: &SubField) {
    out.u32(s.header);
    out.u16(s.ofs);
}

/// Bytes an immediate value of `n_bits` takes: whole 16-bit units.
fn immediate_len(n_bits: u16) -> usize {
    usize::from(n_bits).div_ceil(16) * 2
}

impl Learn {
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.u16(self.idle_timeout);
        out.u16(self.hard_timeout);
        out.u16(self.priority);
        out.u64(self.cookie);
        out.u16(self.flags);
        out.u8(self.table_id);
        out.u8(0);
        out.u16(self.fin_idle_timeout);
        out.u16(self.fin_hard_timeout);
        for spec in &self.specs {
            let (kind, src, dst, n_bits) = match spec {
                LearnSpec::Match { dst, src } => (0, Some(src), Some(dst), dst.n_bits),
                LearnSpec::Load { dst, src } => (DST_LOAD, Some(src), Some(dst), dst.n_bits),
                LearnSpec::Output { src } => (DST_OUTPUT, None, None, src.n_bits),
            };
            let immediate = matches!(src, Some(LearnSrc::Value(_)));
            out.u16(kind | if immediate { SRC_IMMEDIATE } else { 0 } | (n_bits & N_BITS));
            match (spec, src) {
                (LearnSpec::Output { src }, _) => put_subfield(out, src),
                (_, Some(LearnSrc::Field(f))) => put_subfield(out, f),
                (_, Some(LearnSrc::Value(v))) => {
                    let len = immediate_len(n_bits);
                    out.extend_from_slice(&v.to_be_bytes()[16 - len.min(16)..]);
                }
                _ => {}
            }
            if let Some(d) = dst {
                put_subfield(out, d);
            }
        }
    }

    pub(crate) fn decode_body(b: &mut Reader, at: usize) -> Result<Learn, DecodeError> {
        let refuse = |why: String| {
            DecodeError::new(
                error::BAD_ACTION,
                error::BAD_ACTION_BAD_ARGUMENT,
                format!("learn at byte {at}: {why}"),
            )
        };
        let mut l = Learn {
            idle_timeout: b.u16("learn idle_timeout")?,
            hard_timeout: b.u16("learn hard_timeout")?,
            priority: b.u16("learn priority")?,
            cookie: b.u64("learn cookie")?,
            flags: b.u16("learn flags")?,
            table_id: b.u8("learn table")?,
            ..Learn::default()
        };
        b.u8("learn pad")?;
        l.fin_idle_timeout = b.u16("learn fin_idle_timeout")?;
        l.fin_hard_timeout = b.u16("learn fin_hard_timeout")?;
        if l.table_id == 0xff {
            return Err(refuse("table 255 is not a table".into()));
        }
        if l.flags & !(learn_flags::SEND_FLOW_REM | learn_flags::DELETE_LEARNED) != 0 {
            return Err(refuse(format!("unknown flags {:#x}", l.flags)));
        }
        let subfield = |b: &mut Reader, n_bits: u16| -> Result<SubField, DecodeError> {
            let s = SubField {
                header: b.u32("learn field")?,
                ofs: b.u16("learn field offset")?,
                n_bits,
            };
            check(&s, "a learn spec's field", at)?;
            Ok(s)
        };
        // Specs until the end; a zero header (and zeros after it) pads.
        while b.remaining() >= 2 {
            let h = b.u16("learn spec")?;
            if h == 0 {
                if b.rest().iter().any(|&x| x != 0) {
                    return Err(refuse("bytes after the end of its specs".into()));
                }
                break;
            }
            let n_bits = h & N_BITS;
            let src = if h & SRC_IMMEDIATE != 0 {
                let bytes = b.bytes(immediate_len(n_bits), "learn immediate value")?;
                if bytes.len() > 16 {
                    return Err(refuse(format!("an immediate value of {n_bits} bits")));
                }
                LearnSrc::Value(bytes.iter().fold(0u128, |v, &x| v << 8 | u128::from(x)))
            } else {
                LearnSrc::Field(subfield(b, n_bits)?)
            };
            let spec = match h & (3 << 11) {
                0 => LearnSpec::Match {
                    dst: subfield(b, n_bits)?,
                    src,
                },
                DST_LOAD => LearnSpec::Load {
                    dst: subfield(b, n_bits)?,
                    src,
                },
                DST_OUTPUT => match src {
                    LearnSrc::Field(src) => LearnSpec::Output { src },
                    LearnSrc::Value(_) => {
                        return Err(refuse("output from an immediate value".into()));
                    }
                },
                _ => {
                    return Err(refuse(format!(
                        "spec header {h:#06x} has an unknown destination"
                    )));
                }
            };
            l.specs.push(spec);
        }
        if b.remaining() == 1 {
            return Err(refuse("a spec cut short".into()));
        }
        Ok(l)
    }
}
