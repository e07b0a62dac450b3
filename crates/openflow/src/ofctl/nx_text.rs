//! The Nicira actions read from their text, as `ovs-actions(7)` writes
//! them: `resubmit:PORT`, `resubmit([PORT],[TABLE])`, `load:VALUE->DST`,
//! `move:SRC->DST`, `note:HEX`, `learn(...)` (`learn_text.rs`); they are
//! printed back by `format.rs`.

use super::OfctlError;
use super::fields::{Ports, check_prereq, parse_port};
use super::lexer;
use super::subfield::parse_subfield;
use crate::nx_types::{NxAction, SubField};
use crate::types::{Action, Oxm, port};

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
