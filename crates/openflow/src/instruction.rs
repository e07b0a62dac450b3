//! Instructions (`ofp_instruction_*`) of flow entries.

use crate::action::{decode_actions, encode_actions};
use crate::decode_error::DecodeError;
use crate::types::{Instruction, error};
use crate::wire::{Put, Reader};

/// `ofp_instruction_type`.
pub mod instruction_type {
    pub const GOTO_TABLE: u16 = 1;
    pub const WRITE_METADATA: u16 = 2;
    pub const WRITE_ACTIONS: u16 = 3;
    pub const APPLY_ACTIONS: u16 = 4;
    pub const CLEAR_ACTIONS: u16 = 5;
    pub const METER: u16 = 6;
    pub const EXPERIMENTER: u16 = 0xffff;
}
use instruction_type as it;

fn bad_inst(code: u16, reason: String) -> DecodeError {
    DecodeError::new(error::BAD_INSTRUCTION, code, reason)
}

impl Instruction {
    /// The `ofp_instruction_type` number.
    pub fn instruction_type(&self) -> u16 {
        match self {
            Instruction::GotoTable(_) => it::GOTO_TABLE,
            Instruction::WriteMetadata { .. } => it::WRITE_METADATA,
            Instruction::WriteActions(_) => it::WRITE_ACTIONS,
            Instruction::ApplyActions(_) => it::APPLY_ACTIONS,
            Instruction::ClearActions => it::CLEAR_ACTIONS,
            Instruction::Meter(_) => it::METER,
            Instruction::Experimenter { .. } => it::EXPERIMENTER,
        }
    }

    /// Appends the instruction (an experimenter's data padded to 8 bytes
    /// with zeros, which a decode keeps).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.u16(self.instruction_type());
        out.u16(0);
        match self {
            Instruction::GotoTable(t) => {
                out.u8(*t);
                out.zeros(3);
            }
            Instruction::WriteMetadata { metadata, mask } => {
                out.zeros(4);
                out.u64(*metadata);
                out.u64(*mask);
            }
            Instruction::WriteActions(a) | Instruction::ApplyActions(a) => {
                out.zeros(4);
                encode_actions(a, out);
            }
            Instruction::ClearActions => out.zeros(4),
            Instruction::Meter(id) => out.u32(*id),
            Instruction::Experimenter { experimenter, data } => {
                out.u32(*experimenter);
                out.extend_from_slice(data);
            }
        }
        out.pad8(start);
        let len = out.len() - start;
        out.patch_u16(start + 2, len);
    }

    /// Reads one instruction.
    pub(crate) fn decode(r: &mut Reader) -> Result<Instruction, DecodeError> {
        let at = r.pos();
        if r.remaining() < 8 {
            return Err(bad_inst(
                error::BAD_INSTRUCTION_BAD_LEN,
                format!(
                    "instruction at byte {at}: {} bytes left, an instruction needs at least 8",
                    r.remaining()
                ),
            ));
        }
        let itype = r.u16("instruction type")?;
        let len = usize::from(r.u16("instruction length")?);
        if len < 8 || len % 8 != 0 || len - 4 > r.remaining() {
            return Err(bad_inst(
                error::BAD_INSTRUCTION_BAD_LEN,
                format!(
                    "instruction at byte {at} (type {itype}) has length {len}: not a multiple of 8 of at least 8 within the {} bytes left",
                    r.remaining() + 4
                ),
            ));
        }
        let mut b = r.sub(
            len - 4,
            "instruction",
            (error::BAD_INSTRUCTION, error::BAD_INSTRUCTION_BAD_LEN),
        )?;
        let fixed = |want: usize| -> Result<(), DecodeError> {
            if len == want {
                Ok(())
            } else {
                Err(bad_inst(
                    error::BAD_INSTRUCTION_BAD_LEN,
                    format!(
                        "instruction at byte {at} (type {itype}) has length {len}, it needs {want}"
                    ),
                ))
            }
        };
        let i = match itype {
            it::GOTO_TABLE => {
                fixed(8)?;
                Instruction::GotoTable(b.u8("table_id")?)
            }
            it::WRITE_METADATA => {
                fixed(24)?;
                b.skip(4, "pad")?;
                Instruction::WriteMetadata {
                    metadata: b.u64("metadata")?,
                    mask: b.u64("metadata_mask")?,
                }
            }
            it::WRITE_ACTIONS | it::APPLY_ACTIONS => {
                b.skip(4, "pad")?;
                let a = decode_actions(&mut b)?;
                if itype == it::WRITE_ACTIONS {
                    Instruction::WriteActions(a)
                } else {
                    Instruction::ApplyActions(a)
                }
            }
            it::CLEAR_ACTIONS => {
                fixed(8)?;
                Instruction::ClearActions
            }
            it::METER => {
                fixed(8)?;
                Instruction::Meter(b.u32("meter_id")?)
            }
            it::EXPERIMENTER => Instruction::Experimenter {
                experimenter: b.u32("experimenter id")?,
                data: b.rest().to_vec(),
            },
            t => {
                return Err(bad_inst(
                    error::BAD_INSTRUCTION_UNKNOWN_INST,
                    format!("instruction at byte {at} has unknown type {t}"),
                ));
            }
        };
        Ok(i)
    }
}

/// Reads instructions until `r` is used up.
pub(crate) fn decode_instructions(r: &mut Reader) -> Result<Vec<Instruction>, DecodeError> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(Instruction::decode(r)?);
    }
    Ok(v)
}

pub(crate) fn encode_instructions(instructions: &[Instruction], out: &mut Vec<u8>) {
    for i in instructions {
        i.encode(out);
    }
}
