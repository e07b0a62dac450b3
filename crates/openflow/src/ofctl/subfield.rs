//! Subfields as `ovs-actions(7)` writes them and `ovs-ofctl` prints
//! them: `NAME[]` (the whole field), `NAME[BIT]`, `NAME[START..END]`,
//! NAME an NXM or OXM header's name or a field's short name (`reg0`).

use super::OfctlError;
use super::fields;
use crate::nx::{header_by_name, preferred_header};
use crate::nx_types::SubField;

/// A subfield: `NXM_NX_REG0[0..15]`, `reg2[1]`, `NXM_OF_ETH_SRC[]`.
pub(crate) fn parse_subfield(s: &str) -> Result<SubField, OfctlError> {
    let bad = |why: &str| OfctlError::Syntax(format!("{s}: {why}"));
    let (name, bits) = s
        .strip_suffix(']')
        .and_then(|t| t.split_once('['))
        .ok_or_else(|| bad("a subfield is NAME[], NAME[BIT] or NAME[START..END]"))?;
    let header = header_by_name(name)
        .or_else(|| fields::by_name(name).map(preferred_header))
        .ok_or_else(|| bad(&format!("unknown field {name}")))?;
    let width = SubField {
        header,
        ofs: 0,
        n_bits: 1,
    }
    .field_bits();
    let bit = |t: &str| {
        t.trim()
            .parse::<u16>()
            .map_err(|_| bad(&format!("{t} is not a bit number")))
    };
    let (ofs, n_bits) = match bits.split_once("..") {
        _ if bits.is_empty() => (0, width),
        Some((a, b)) => {
            let (a, b) = (bit(a)?, bit(b)?);
            if b < a {
                return Err(bad("the end bit is before the start bit"));
            }
            (a, b - a + 1)
        }
        None => (bit(bits)?, 1),
    };
    let sub = SubField {
        header,
        ofs,
        n_bits,
    };
    if !sub.fits() {
        return Err(bad(&format!("{name} has {width} bits")));
    }
    Ok(sub)
}

/// A subfield as `ovs-ofctl` prints it.
pub(crate) fn subfield_text(s: &SubField) -> String {
    let bits = if s.ofs == 0 && s.n_bits == s.field_bits() {
        String::new()
    } else if s.n_bits == 1 {
        s.ofs.to_string()
    } else {
        format!("{}..{}", s.ofs, s.ofs + s.n_bits - 1)
    };
    format!("{}[{bits}]", s.header_name())
}
