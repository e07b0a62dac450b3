//! `.BTF.ext`: per-section function info, line info and CO-RE relocations,
//! keyed by instruction byte offsets within each program section.

use std::collections::HashMap;

use crate::reader::{Reader, cstr};

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
    pub fn parse(data: &[u8], btf_strings: &[u8]) -> Result<BtfExt, String> {
        let mut r = Reader::new(data);
        let short = |_| "truncated header".to_string();
        let magic = r.u16().map_err(short)?;
        if magic != 0xeb9f {
            return Err(format!("bad magic {magic:#06x}"));
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
                .ok_or_else(|| format!("string offset {off} is outside .BTF's strings"))
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
    what: &str,
    mut each: impl FnMut(u32, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    if len == 0 {
        return Ok(());
    }
    let start = hdr_len
        .checked_add(off)
        .ok_or_else(|| format!("{what} offset overflows"))?;
    let body = start
        .checked_add(len)
        .and_then(|end| data.get(start..end))
        .ok_or_else(|| format!("{what} ({len} bytes at {off}) runs past the end"))?;
    let mut r = Reader::new(body);
    let trunc = |_| format!("{what} is truncated");
    let rec_size = r.u32().map_err(trunc)? as usize;
    if rec_size < min_rec {
        return Err(format!("{what} record size {rec_size} is below {min_rec}"));
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
