//! OXM TLVs and `ofp_match` on the wire, checked as a switch must.

use crate::decode_error::DecodeError;
use crate::field::{ONF_EXPERIMENTER, OXM_CLASS_EXPERIMENTER};
use crate::types::{Field, Match, Oxm, error};
use crate::wire::{Put, Reader, pad8};

/// `OFPMT_OXM`.
pub const MATCH_TYPE_OXM: u16 = 1;

fn bad_match(code: u16, reason: String) -> DecodeError {
    DecodeError::new(error::BAD_MATCH, code, reason)
}

fn put_value(out: &mut Vec<u8>, v: u128, bytes: usize) {
    out.extend_from_slice(&v.to_be_bytes()[16 - bytes..]);
}

fn value_of(b: &[u8]) -> u128 {
    b.iter().fold(0, |v, &x| (v << 8) | u128::from(x))
}

impl Oxm {
    /// An exact match of `field` on `value`.
    pub fn exact(field: Field, value: u128) -> Oxm {
        Oxm {
            field,
            value,
            mask: None,
        }
    }

    /// A match of the bits of `mask` only.
    pub fn masked(field: Field, value: u128, mask: u128) -> Oxm {
        Oxm {
            field,
            value,
            mask: Some(mask),
        }
    }

    /// Bytes of the TLV on the wire.
    pub fn wire_len(&self) -> usize {
        let exp = if self.field.class() == OXM_CLASS_EXPERIMENTER {
            4
        } else {
            0
        };
        let n = self.field.bytes();
        4 + exp + if self.mask.is_some() { 2 * n } else { n }
    }

    /// Appends the TLV (value and mask cut to the field's bytes).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let f = self.field;
        out.u16(f.class());
        out.u8(f.code() << 1 | u8::from(self.mask.is_some()));
        out.u8((self.wire_len() - 4) as u8);
        if f.class() == OXM_CLASS_EXPERIMENTER {
            out.u32(ONF_EXPERIMENTER);
        }
        put_value(out, self.value, f.bytes());
        if let Some(m) = self.mask {
            put_value(out, m, f.bytes());
        }
    }

    /// Reads one TLV, with the errors of a match (BAD_MATCH/...).
    pub(crate) fn decode(r: &mut Reader) -> Result<Oxm, DecodeError> {
        let at = r.pos();
        let Some(h) = r.peek(4) else {
            return Err(bad_match(
                error::BAD_MATCH_BAD_LEN,
                format!(
                    "OXM TLV at byte {at}: {} bytes left, a TLV header needs 4",
                    r.remaining()
                ),
            ));
        };
        let class = u16::from_be_bytes([h[0], h[1]]);
        let code = h[2] >> 1;
        let has_mask = h[2] & 1 == 1;
        let len = usize::from(h[3]);
        r.skip(4, "OXM header")?;
        if len > r.remaining() {
            return Err(bad_match(
                error::BAD_MATCH_BAD_LEN,
                format!(
                    "OXM TLV at byte {at} has length {len}, only {} bytes left in the match",
                    r.remaining()
                ),
            ));
        }
        let mut body = r.sub(len, "OXM TLV", (error::BAD_MATCH, error::BAD_MATCH_BAD_LEN))?;
        if class == OXM_CLASS_EXPERIMENTER {
            let exp = body.u32("OXM experimenter id")?;
            if exp != ONF_EXPERIMENTER || code != 42 {
                return Err(bad_match(
                    error::BAD_MATCH_BAD_FIELD,
                    format!(
                        "OXM TLV at byte {at}: unknown experimenter field {code} of experimenter {exp:#x}"
                    ),
                ));
            }
        }
        let Some(field) = Field::from_code(class, code) else {
            return Err(bad_match(
                error::BAD_MATCH_BAD_FIELD,
                format!("OXM TLV at byte {at}: unknown field {code} of class {class:#06x}"),
            ));
        };
        let n = field.bytes();
        let want = if has_mask { 2 * n } else { n };
        if body.remaining() != want {
            return Err(bad_match(
                error::BAD_MATCH_BAD_LEN,
                format!(
                    "OXM TLV at byte {at} has length {len}, {field}{} needs {}",
                    if has_mask { " with a mask" } else { "" },
                    len - body.remaining() + want
                ),
            ));
        }
        if has_mask && !field.maskable() {
            return Err(bad_match(
                error::BAD_MATCH_BAD_MASK,
                format!("OXM TLV at byte {at}: {field} cannot have a mask"),
            ));
        }
        let value = value_of(body.bytes(n, "OXM value")?);
        let mask = if has_mask {
            Some(value_of(body.bytes(n, "OXM mask")?))
        } else {
            None
        };
        let full = field.full_mask();
        if value & !full != 0 {
            return Err(bad_match(
                error::BAD_MATCH_BAD_VALUE,
                format!(
                    "OXM TLV at byte {at}: {field} value {value:#x} has bits beyond its {} bits",
                    field.width_bits()
                ),
            ));
        }
        if let Some(m) = mask {
            if m & !full != 0 {
                return Err(bad_match(
                    error::BAD_MATCH_BAD_MASK,
                    format!(
                        "OXM TLV at byte {at}: {field} mask {m:#x} has bits beyond its {} bits",
                        field.width_bits()
                    ),
                ));
            }
            if value & !m != 0 {
                return Err(bad_match(
                    error::BAD_MATCH_BAD_WILDCARDS,
                    format!(
                        "OXM TLV at byte {at}: {field} value {value:#x} has bits where its mask {m:#x} is 0"
                    ),
                ));
            }
        }
        Ok(Oxm { field, value, mask })
    }
}

impl Match {
    /// The TLV of `field`, if the match has one.
    pub fn get(&self, field: Field) -> Option<&Oxm> {
        self.fields.iter().find(|o| o.field == field)
    }

    /// Bytes of the `ofp_match`, padding included.
    pub fn wire_len(&self) -> usize {
        pad8(4 + self.fields.iter().map(Oxm::wire_len).sum::<usize>())
    }

    /// Appends the `ofp_match` and its padding to 8 bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.u16(MATCH_TYPE_OXM);
        out.u16(0);
        for oxm in &self.fields {
            oxm.encode(out);
        }
        let len = out.len() - start;
        out.patch_u16(start + 2, len);
        out.pad8(start);
    }

    /// Reads an `ofp_match` and its padding.
    pub(crate) fn decode(r: &mut Reader) -> Result<Match, DecodeError> {
        let at = r.pos();
        if r.remaining() < 4 {
            return Err(bad_match(
                error::BAD_MATCH_BAD_LEN,
                format!(
                    "match at byte {at}: {} bytes left, its header needs 4",
                    r.remaining()
                ),
            ));
        }
        let mtype = r.u16("match type")?;
        let len = usize::from(r.u16("match length")?);
        if mtype != MATCH_TYPE_OXM {
            return Err(bad_match(
                error::BAD_MATCH_BAD_TYPE,
                format!("match at byte {at} has type {mtype}, only OXM (1) is supported"),
            ));
        }
        if len < 4 || pad8(len) - 4 > r.remaining() {
            return Err(bad_match(
                error::BAD_MATCH_BAD_LEN,
                format!(
                    "match at byte {at} has length {len}, {} bytes left for it and its padding",
                    r.remaining() + 4
                ),
            ));
        }
        let mut body = r.sub(
            len - 4,
            "match",
            (error::BAD_MATCH, error::BAD_MATCH_BAD_LEN),
        )?;
        r.skip(pad8(len) - len, "match padding")?;
        let mut fields = Vec::new();
        let mut seen = 0u64;
        while !body.is_empty() {
            let at = body.pos();
            let oxm = Oxm::decode(&mut body)?;
            let bit = 1u64 << (oxm.field as u32);
            if seen & bit != 0 {
                return Err(bad_match(
                    error::BAD_MATCH_DUP_FIELD,
                    format!("OXM TLV at byte {at}: {} appears twice", oxm.field),
                ));
            }
            seen |= bit;
            fields.push(oxm);
        }
        Ok(Match { fields })
    }
}
