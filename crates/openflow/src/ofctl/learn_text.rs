//! The `learn(...)` action read from its text, as `ovs-actions(7)` writes
//! it (printed back by `format.rs`): the learned flow's `table`, timeouts, `priority`,
//! `cookie` and flags, then its specs: `FIELD=VALUE` or `DST[]=SRC[]` or
//! `SUBFIELD[]` (match), `load:SRC->DST`, `output:SRC`.

use super::OfctlError;
use super::fields::{self, Ports};
use super::lexer::{self, tokens};
use super::subfield::{parse_subfield, subfield_text};
use crate::nx::preferred_header;
use crate::nx_types::{Learn, LearnSpec, LearnSrc, SubField, learn_flags};

fn syntax(why: String) -> OfctlError {
    OfctlError::Syntax(format!("learn: {why}"))
}

fn number(key: &str, value: &str, bits: u32) -> Result<u128, OfctlError> {
    lexer::number_bits(value, bits)
        .ok_or_else(|| syntax(format!("{key}: {value} is not a {bits}-bit number")))
}

/// A spec's source: a subfield as wide as `dst`, or a number that fits it.
fn source(text: &str, dst: &SubField) -> Result<LearnSrc, OfctlError> {
    if text.contains('[') {
        let src = parse_subfield(text)?;
        if src.n_bits != dst.n_bits {
            return Err(syntax(format!(
                "{text} is {} bits wide but {} is {} bits wide",
                src.n_bits,
                subfield_text(dst),
                dst.n_bits
            )));
        }
        return Ok(LearnSrc::Field(src));
    }
    Ok(LearnSrc::Value(number(
        "value",
        text,
        u32::from(dst.n_bits),
    )?))
}

/// `learn(...)`'s inside.
pub(crate) fn parse_learn(text: &str, ports: Ports) -> Result<Learn, OfctlError> {
    let mut l = Learn::default();
    for tok in tokens(text)? {
        let (k, v) = (tok.key, tok.value);
        match k {
            "table" => {
                l.table_id = number(k, v, 8)?
                    .try_into()
                    .ok()
                    .filter(|&t: &u8| t < 255)
                    .ok_or_else(|| syntax(format!("table {v} is not a table (0-254)")))?;
            }
            "idle_timeout" => l.idle_timeout = number(k, v, 16)? as u16,
            "hard_timeout" => l.hard_timeout = number(k, v, 16)? as u16,
            "fin_idle_timeout" => l.fin_idle_timeout = number(k, v, 16)? as u16,
            "fin_hard_timeout" => l.fin_hard_timeout = number(k, v, 16)? as u16,
            "priority" => l.priority = number(k, v, 16)? as u16,
            "cookie" => l.cookie = number(k, v, 64)? as u64,
            "send_flow_rem" => l.flags |= learn_flags::SEND_FLOW_REM,
            "delete_learned" => l.flags |= learn_flags::DELETE_LEARNED,
            "limit" | "result_dst" => {
                return Err(syntax(format!("{k} (OVS's learn2) is not supported")));
            }
            "load" => {
                let (src, dst) = v
                    .split_once("->")
                    .ok_or_else(|| syntax(format!("load:{v}: not SRC->DST")))?;
                let dst = parse_subfield(dst)?;
                l.specs.push(LearnSpec::Load {
                    src: source(src, &dst)?,
                    dst,
                });
            }
            "output" => l.specs.push(LearnSpec::Output {
                src: parse_subfield(v)?,
            }),
            k if k.contains('[') => {
                let dst = parse_subfield(k)?;
                let src = match v {
                    "" => LearnSrc::Field(dst),
                    v => source(v, &dst)?,
                };
                l.specs.push(LearnSpec::Match { dst, src });
            }
            k => {
                let f = fields::by_name(k).ok_or_else(|| syntax(format!("unknown field {k}")))?;
                let value = fields::parse_value(k, f, v, ports)?;
                let dst = SubField {
                    header: preferred_header(f),
                    ofs: 0,
                    n_bits: 0,
                };
                let dst = SubField {
                    n_bits: dst.field_bits(),
                    ..dst
                };
                if dst.n_bits < 128 && value >> dst.n_bits != 0 {
                    return Err(syntax(format!(
                        "{k}={v} does not fit in {} bits",
                        dst.n_bits
                    )));
                }
                l.specs.push(LearnSpec::Match {
                    dst,
                    src: LearnSrc::Value(value),
                });
            }
        }
    }
    Ok(l)
}
