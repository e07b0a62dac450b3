//! `.BTF.ext`: per-section function info, line info and CO-RE relocations,
//! keyed by instruction byte offsets within each program section.

use std::collections::HashMap;

use crate::reader::{Reader, cstr};

/// Why `.BTF.ext` cannot be read; `what` is the info section at fault
/// (`func_info`, `line_info`, `core_relo`).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum BtfExtError {
    #[error("truncated header")]
    TruncatedHeader,
    #[error("bad magic {0:#06x}")]
    BadMagic(u16),
    #[error("string offset {0} is outside .BTF's strings")]
    StringOffset(u32),
    #[error("{what} offset overflows")]
    OffsetOverflows { what: &'static str },
    #[error("{what} ({len} bytes at {off}) runs past the end")]
    PastEnd {
        what: &'static str,
        len: usize,
        off: usize,
    },
    #[error("{what} is truncated")]
    Truncated { what: &'static str },
    #[error("{what} record size {size} is below {min}")]
    RecordSize {
        what: &'static str,
        size: usize,
        min: usize,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncInfo {
    /// Instruction index within the section.
    pub insn: usize,
    pub type_id: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRecord {
    pub insn: usize,
    pub file: String,
    /// The source line's text, as clang recorded it.
    pub source: String,
    pub line: u32,
    pub col: u32,
}

/// One CO-RE relocation: patch the instruction at `insn` according to
/// `kind`, following `access` ("0:1:2") from local type `type_id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreRelo {
    pub insn: usize,
    pub type_id: u32,
    pub access: String,
    pub kind: u32,
}

#[derive(Clone, Debug, Default)]
pub struct BtfExt {
    pub funcs: HashMap<String, Vec<FuncInfo>>,
    pub lines: HashMap<String, Vec<LineRecord>>,
    pub core: HashMap<String, Vec<CoreRelo>>,
}

impl BtfExt {
    /// Parses `.BTF.ext`; names come from the `.BTF` string table.
    pub fn parse(data: &[u8], btf_strings: &[u8]) -> Result<BtfExt, BtfExtError> {
        let mut r = Reader::new(data);
        let short = |_| BtfExtError::TruncatedHeader;
        let magic = r.u16().map_err(short)?;
        if magic != 0xeb9f {
            return Err(BtfExtError::BadMagic(magic));
        }
        let _version = r.u8().map_err(short)?;
        let _flags = r.u8().map_err(short)?;
        let hdr_len = r.u32().map_err(short)? as usize;
        let func = (
            r.u32().map_err(short)? as usize,
            r.u32().map_err(short)? as usize,
        );
        let line = (
            r.u32().map_err(short)? as usize,
            r.u32().map_err(short)? as usize,
        );
        let core = if hdr_len >= 32 {
            (
                r.u32().map_err(short)? as usize,
                r.u32().map_err(short)? as usize,
            )
        } else {
            (0, 0)
        };
        let string = |off: u32| {
            cstr(btf_strings, off as usize)
                .map(str::to_string)
                .ok_or(BtfExtError::StringOffset(off))
        };
        let mut ext = BtfExt::default();
        for_each_record(data, hdr_len, func, 8, "func_info", |sec, rec| {
            ext.funcs.entry(string(sec)?).or_default().push(FuncInfo {
                insn: u32le(rec, 0) as usize / 8,
                type_id: u32le(rec, 4),
            });
            Ok(())
        })?;
        for_each_record(data, hdr_len, line, 16, "line_info", |sec, rec| {
            let line_col = u32le(rec, 12);
            ext.lines.entry(string(sec)?).or_default().push(LineRecord {
                insn: u32le(rec, 0) as usize / 8,
                file: string(u32le(rec, 4))?,
                source: string(u32le(rec, 8))?,
                line: line_col >> 10,
                col: line_col & 0x3ff,
            });
            Ok(())
        })?;
        for_each_record(data, hdr_len, core, 16, "core_relo", |sec, rec| {
            ext.core.entry(string(sec)?).or_default().push(CoreRelo {
                insn: u32le(rec, 0) as usize / 8,
                type_id: u32le(rec, 4),
                access: string(u32le(rec, 8))?,
                kind: u32le(rec, 12),
            });
            Ok(())
        })?;
        Ok(ext)
    }
}

fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(
        b[at..at + 4]
            .try_into()
            .expect("record checked long enough"),
    )
}

/// Walks one info section: `rec_size`, then blocks of
/// `{sec_name_off, num_info, records...}`.
fn for_each_record(
    data: &[u8],
    hdr_len: usize,
    (off, len): (usize, usize),
    min_rec: usize,
    what: &'static str,
    mut each: impl FnMut(u32, &[u8]) -> Result<(), BtfExtError>,
) -> Result<(), BtfExtError> {
    if len == 0 {
        return Ok(());
    }
    let start = hdr_len
        .checked_add(off)
        .ok_or(BtfExtError::OffsetOverflows { what })?;
    let body = start
        .checked_add(len)
        .and_then(|end| data.get(start..end))
        .ok_or(BtfExtError::PastEnd { what, len, off })?;
    let mut r = Reader::new(body);
    let trunc = |_| BtfExtError::Truncated { what };
    let rec_size = r.u32().map_err(trunc)? as usize;
    if rec_size < min_rec {
        return Err(BtfExtError::RecordSize {
            what,
            size: rec_size,
            min: min_rec,
        });
    }
    while r.remaining() > 0 {
        let sec = r.u32().map_err(trunc)?;
        let n = r.u32().map_err(trunc)? as usize;
        for _ in 0..n {
            each(sec, r.bytes(rec_size).map_err(trunc)?)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_what_is_wrong() {
        assert_eq!(
            BtfExt::parse(&[0x9f], &[]).unwrap_err(),
            BtfExtError::TruncatedHeader
        );
        let e = BtfExt::parse(&[0x34, 0x12, 1, 0], &[]).unwrap_err();
        assert_eq!(e, BtfExtError::BadMagic(0x1234));
        assert_eq!(e.to_string(), "bad magic 0x1234");
        // A header whose func_info runs past the data.
        let mut h = vec![0x9f, 0xeb, 1, 0];
        for v in [24u32, 0, 100, 0, 0] {
            h.extend(v.to_le_bytes());
        }
        let e = BtfExt::parse(&h, &[]).unwrap_err();
        assert_eq!(
            e,
            BtfExtError::PastEnd {
                what: "func_info",
                len: 100,
                off: 0
            }
        );
        assert_eq!(
            e.to_string(),
            "func_info (100 bytes at 0) runs past the end"
        );
    }
}
