//! The Nicira actions' text, as `ovs-actions(7)` writes them and
//! `ovs-ofctl` prints them: `resubmit:PORT`, `resubmit([PORT],[TABLE])`,
//! `load:VALUE->DST`, `move:SRC->DST`, `note:HEX`; subfields as
//! `NAME[]`, `NAME[BIT]` or `NAME[START..END]`.

use super::OfctlError;
use super::fields::{self, Ports, check_prereq, parse_port, port_text};
use super::lexer;
use crate::nx::{NxAction, SubField, header_by_name, preferred_header};
use crate::types::{Action, Oxm, port};

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

/// A note's bytes as on the wire: padded with zeros so that the action
/// (16 bytes of header and subtype, then the bytes) fills 8-byte units,
/// as `ovs-ofctl` pads them.
fn note(mut bytes: Vec<u8>) -> NxAction {
    let len = (10 + bytes.len()).next_multiple_of(8).max(16);
    bytes.resize(len - 10, 0);
    NxAction::Note(bytes)
}

/// Checks that the match gives what reading or writing `s` needs (as
/// `ovs-ofctl` refuses `move:NXM_OF_IP_SRC[]->...` without `ip`).
fn prerequisites(s: &SubField, matcher: Option<&[Oxm]>) -> Result<(), OfctlError> {
    match (s.field(), matcher) {
        (Some(f), Some(m)) => check_prereq(f, m),
        _ => Ok(()),
    }
}

/// A Nicira action by its keyword; `None` when `key` is not one.
pub(crate) fn parse(
    key: &str,
    value: &str,
    paren: bool,
    matcher: Option<&[Oxm]>,
    ports: Ports,
) -> Option<Result<Action, OfctlError>> {
    let parsed = match key {
        "resubmit" => resubmit(value, paren, ports),
        "load" => load(value, matcher),
        "move" => reg_move(value, matcher),
        "note" => note_bytes(value).map(note),
        "learn" if paren => {
            super::learn_text::parse_learn(value, ports).map(|l| NxAction::Learn(Box::new(l)))
        }
        _ => return None,
    };
    Some(parsed.map(Action::Nx))
}

fn resubmit(value: &str, paren: bool, ports: Ports) -> Result<NxAction, OfctlError> {
    let port = |p: &str| {
        parse_port(p.trim(), ports)
            .ok_or_else(|| OfctlError::Syntax(format!("resubmit: {p} is not a port")))
    };
    if !paren {
        return Ok(NxAction::Resubmit {
            in_port: port(value)?,
            table: None,
        });
    }
    let (p, t) = value.split_once(',').unwrap_or((value, ""));
    let (p, t) = (p.trim(), t.trim());
    if p.is_empty() && t.is_empty() {
        return Err(OfctlError::Syntax(
            "at least one \"in_port\" or \"table\" must be specified on resubmit".into(),
        ));
    }
    let in_port = if p.is_empty() {
        port::IN_PORT
    } else {
        port(p)?
    };
    let table = match t {
        "" => None,
        t => Some(
            lexer::number_bits(t, 8)
                .filter(|&n| n < 255)
                .ok_or_else(|| {
                    OfctlError::Syntax(format!("resubmit: {t} is not a table (0-254)"))
                })? as u8,
        ),
    };
    Ok(NxAction::Resubmit { in_port, table })
}

fn load(value: &str, matcher: Option<&[Oxm]>) -> Result<NxAction, OfctlError> {
    let (v, dst) = value
        .split_once("->")
        .ok_or_else(|| OfctlError::Syntax(format!("load: {value}: not VALUE->DST")))?;
    let dst = parse_subfield(dst)?;
    let v = lexer::number(v)
        .filter(|&n| n <= u128::from(u64::MAX))
        .ok_or_else(|| OfctlError::Syntax(format!("load: {v} is not a number")))?;
    if dst.n_bits < 128 && v >> dst.n_bits != 0 {
        return Err(OfctlError::Syntax(format!(
            "{value}: value 0x{v:x} does not fit into {} bits",
            dst.n_bits
        )));
    }
    if dst.n_bits > 64 {
        return Err(OfctlError::Syntax(format!(
            "{value}: load writes at most 64 bits ({} here)",
            dst.n_bits
        )));
    }
    prerequisites(&dst, matcher)?;
    Ok(NxAction::RegLoad {
        dst,
        value: v as u64,
    })
}

fn reg_move(value: &str, matcher: Option<&[Oxm]>) -> Result<NxAction, OfctlError> {
    let (src, dst) = value
        .split_once("->")
        .ok_or_else(|| OfctlError::Syntax(format!("move: {value}: not SRC->DST")))?;
    let (src, dst) = (parse_subfield(src)?, parse_subfield(dst)?);
    if src.n_bits != dst.n_bits {
        return Err(OfctlError::Syntax(format!(
            "{value}: source field is {} bits wide but destination is {} bits wide",
            src.n_bits, dst.n_bits
        )));
    }
    prerequisites(&src, matcher)?;
    prerequisites(&dst, matcher)?;
    Ok(NxAction::RegMove { src, dst })
}

/// Hex bytes, optionally separated by dots: `01.02.03`, `0102`.
fn note_bytes(value: &str) -> Result<Vec<u8>, OfctlError> {
    let digits: String = value.chars().filter(|&c| c != '.').collect();
    let bad = || OfctlError::Syntax(format!("note: {value} is not hex bytes"));
    if !digits.len().is_multiple_of(2) {
        return Err(bad());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).map_err(|_| bad()))
        .collect()
}

/// A Nicira action as `ovs-ofctl` prints it.
pub(crate) fn text(a: &NxAction) -> String {
    match a {
        NxAction::Resubmit {
            in_port,
            table: None,
        } if *in_port != port::IN_PORT => format!("resubmit:{}", port_text(*in_port)),
        NxAction::Resubmit { in_port, table } => {
            let p = match *in_port {
                port::IN_PORT => String::new(),
                p => port_text(p),
            };
            let t = table.map_or(String::new(), |t| t.to_string());
            format!("resubmit({p},{t})")
        }
        // ovs-ofctl prints 0 as "0", other values in hex.
        NxAction::RegLoad { dst, value: 0 } => format!("load:0->{}", subfield_text(dst)),
        NxAction::RegLoad { dst, value } => format!("load:0x{value:x}->{}", subfield_text(dst)),
        NxAction::RegMove { src, dst } => {
            format!("move:{}->{}", subfield_text(src), subfield_text(dst))
        }
        NxAction::Note(bytes) => {
            let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("note:{}", hex.join("."))
        }
        NxAction::Learn(l) => super::learn_text::learn_text(l),
    }
}
