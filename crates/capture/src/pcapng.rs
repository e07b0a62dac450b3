//! pcapng blocks, parsed here: section headers, interface descriptions
//! and the three packet blocks; every other block is skipped, and so is
//! every option but `if_tsresol` and `if_tsoffset` (the specification's
//! rule for options and blocks a reader does not know, which libpcap
//! follows).

use crate::frame::RawFrame;
use crate::input::Input;
use crate::input::read_failed;

/// Block types.
pub(crate) const SECTION_HEADER: u32 = 0x0a0d_0d0a;
const INTERFACE_DESCRIPTION: u32 = 1;
pub(crate) const PACKET: u32 = 2;
const SIMPLE_PACKET: u32 = 3;
pub(crate) const ENHANCED_PACKET: u32 = 6;
pub(crate) const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

/// The largest block read: a larger length is taken as a corrupt header
/// (libpcap starts at 16 MiB too).
pub(crate) const MAX_BLOCK: usize = 16 << 20;

/// An interface of a pcapng section, as its description block gave it
/// (the reader's state a byte range of the file starts with: see
/// [`ReaderState`](crate::ReaderState)).
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Interface {
    /// The LINKTYPE_* number.
    pub linktype: u32,
    /// The snapshot length (0: none).
    pub snaplen: u32,
    /// `if_tsresol` (default 6: microseconds).
    pub tsresol: u8,
    /// `if_tsoffset`: seconds added to every timestamp.
    pub tsoffset: i64,
}

/// Blocks of a pcapng file, parsed from a large buffer.
pub(crate) struct PcapNgRecords {
    input: Input,
    big_endian: bool,
    interfaces: Vec<Interface>,
    /// No block starting at or past this offset is read (a byte range's end).
    end: u64,
}

/// What went wrong in a block, and where.
#[cold]
fn at(block_type: u32, offset: u64, what: impl std::fmt::Display) -> String {
    format!("pcapng block of type {block_type:#x} at offset {offset}: {what}")
}

impl PcapNgRecords {
    /// Reads the first section header of `input`, which starts with one.
    pub(crate) fn open(input: Input) -> Result<PcapNgRecords, String> {
        let mut r = PcapNgRecords {
            input,
            big_endian: false,
            interfaces: Vec::new(),
            end: u64::MAX,
        };
        match r.next_block() {
            Some(Ok(Block::Section)) => Ok(r),
            Some(Err(e)) => Err(e),
            _ => Err("no section header block".into()),
        }
    }

    /// Blocks from `input`, positioned at a block's start, in a section of
    /// byte order `big_endian` whose interfaces so far are `interfaces`;
    /// none starting at or past `end` is read.
    pub(crate) fn resume(
        input: Input,
        big_endian: bool,
        interfaces: Vec<Interface>,
        end: u64,
    ) -> PcapNgRecords {
        PcapNgRecords {
            input,
            big_endian,
            interfaces,
            end,
        }
    }

    /// Reads no block starting at or past `end`.
    pub(crate) fn set_end(&mut self, end: u64) {
        self.end = end;
    }

    /// The section's byte order and interfaces at this point.
    pub(crate) fn state(&self) -> (bool, &[Interface]) {
        (self.big_endian, &self.interfaces)
    }

    /// Reads the blocks before the first packet (the section header's
    /// interfaces, usually): the states packets are likely read in, with
    /// the offset each holds from (the last: the first packet block's).
    /// Stops at the first error, keeping what was read.
    pub(crate) fn leading_states(&mut self) -> Vec<(u64, bool, Vec<Interface>)> {
        let mut states = Vec::new();
        loop {
            let state = (self.input.offset, self.big_endian, self.interfaces.clone());
            states.push(state);
            match self.next_block() {
                Some(Ok(Block::Packet { .. })) | Some(Err(_)) | None => return states,
                Some(Ok(_)) => {}
            }
        }
    }

    pub(crate) fn input(&self) -> &Input {
        &self.input
    }

    /// The snapshot length of the section's first interface, once read
    /// (0, no limit, is `None`).
    pub(crate) fn snaplen(&self) -> Option<u32> {
        self.interfaces
            .first()
            .map(|i| i.snaplen)
            .filter(|&s| s != 0)
    }

    fn u32_at(&self, b: &[u8], i: usize) -> u32 {
        let v = u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if self.big_endian { v.swap_bytes() } else { v }
    }

    fn u16_at(&self, b: &[u8], i: usize) -> u16 {
        let v = u16::from_le_bytes([b[i], b[i + 1]]);
        if self.big_endian { v.swap_bytes() } else { v }
    }

    /// Reads the next block into the buffer: its type, total length and
    /// file offset (the block is `buf[pos..pos + len]`, not consumed).
    fn read_block(&mut self) -> Option<Result<(u32, usize, u64), String>> {
        let offset = self.input.offset;
        if offset >= self.end {
            return None;
        }
        if self.input.have() < 12 {
            match self.input.fill(12) {
                Ok(true) => {}
                Ok(false) if self.input.have() == 0 => return None,
                Ok(false) => {
                    let have = self.input.have();
                    return Some(Err(format!(
                        "truncated pcapng block header at offset {offset} ({have} of 12 bytes)"
                    )));
                }
                Err(e) => return read_failed(&self.input, &e).map(Err),
            }
        }
        let b = &self.input.buf[self.input.pos..self.input.end];
        let raw_type = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if raw_type == SECTION_HEADER {
            // The byte order is the section's own, told by its magic.
            let magic = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
            self.big_endian = match magic {
                BYTE_ORDER_MAGIC => false,
                m if m == BYTE_ORDER_MAGIC.swap_bytes() => true,
                m => {
                    return Some(Err(at(
                        SECTION_HEADER,
                        offset,
                        format_args!("byte-order magic {m:#010x} is neither order of 0x1a2b3c4d"),
                    )));
                }
            };
        }
        let block_type = self.u32_at(b, 0);
        let len = self.u32_at(b, 4) as usize;
        if len < 12 || !len.is_multiple_of(4) || len > MAX_BLOCK {
            return Some(Err(at(
                block_type,
                offset,
                format_args!(
                    "total length {len} (a multiple of 4, 12 to {MAX_BLOCK} bytes) is corrupt"
                ),
            )));
        }
        if self.input.have() < len {
            match self.input.fill(len) {
                Ok(true) => {}
                Ok(false) => {
                    let have = self.input.have();
                    return Some(Err(at(
                        block_type,
                        offset,
                        format_args!("truncated ({have} of {len} bytes)"),
                    )));
                }
                Err(e) => return read_failed(&self.input, &e).map(Err),
            }
        }
        Some(Ok((block_type, len, offset)))
    }

    /// Parses the next block; packet blocks are returned as the range
    /// of their bytes in the buffer.
    fn next_block(&mut self) -> Option<Result<Block, String>> {
        let (block_type, len, offset) = match self.read_block()? {
            Ok(b) => b,
            Err(e) => return Some(Err(e)),
        };
        let start = self.input.pos;
        let body = &self.input.buf[start + 8..start + len - 4];
        let err = |what: &dyn std::fmt::Display| Some(Err(at(block_type, offset, what)));
        let block = match block_type {
            SECTION_HEADER => {
                if body.len() < 16 {
                    return err(&"shorter than a section header");
                }
                let major = self.u16_at(body, 4);
                if major != 1 {
                    let minor = self.u16_at(body, 6);
                    return err(&format_args!("unsupported version {major}.{minor}"));
                }
                self.interfaces.clear();
                Block::Section
            }
            INTERFACE_DESCRIPTION => {
                if body.len() < 8 {
                    return err(&"shorter than an interface description");
                }
                let mut iface = Interface {
                    linktype: u32::from(self.u16_at(body, 0)),
                    snaplen: self.u32_at(body, 4),
                    tsresol: 6,
                    tsoffset: 0,
                };
                let mut opts = &body[8..];
                while opts.len() >= 4 {
                    let code = self.u16_at(opts, 0);
                    let olen = usize::from(self.u16_at(opts, 2));
                    if code == 0 {
                        break;
                    }
                    let Some(value) = opts.get(4..4 + olen) else {
                        return err(&format_args!(
                            "option {code} of {olen} bytes runs past the block's end"
                        ));
                    };
                    match (code, value) {
                        (9, &[r]) => iface.tsresol = r,
                        (9, _) => return err(&format_args!("if_tsresol of {olen} bytes, not 1")),
                        (14, v) if v.len() == 8 => {
                            let raw = u64::from_le_bytes(v.try_into().unwrap_or_default());
                            let raw = if self.big_endian {
                                raw.swap_bytes()
                            } else {
                                raw
                            };
                            iface.tsoffset = raw as i64;
                        }
                        (14, _) => return err(&format_args!("if_tsoffset of {olen} bytes, not 8")),
                        // Unknown, custom (2988, 2989, 19372, 19373) and
                        // informational options: skipped.
                        _ => {}
                    }
                    let padded = (4 + olen).next_multiple_of(4);
                    opts = opts.get(padded..).unwrap_or_default();
                }
                self.interfaces.push(iface);
                Block::Interface
            }
            ENHANCED_PACKET | PACKET => {
                if body.len() < 20 {
                    return err(&"shorter than a packet block's header");
                }
                let interface = if block_type == PACKET {
                    u32::from(self.u16_at(body, 0))
                } else {
                    self.u32_at(body, 0)
                };
                let ts = (u64::from(self.u32_at(body, 4)) << 32) | u64::from(self.u32_at(body, 8));
                let caplen = self.u32_at(body, 12) as usize;
                let orig_len = self.u32_at(body, 16);
                if caplen > body.len() - 20 {
                    return err(&format_args!(
                        "captured length {caplen} runs past the block's end ({} bytes of data)",
                        body.len() - 20
                    ));
                }
                let Some(&iface) = self.interfaces.get(interface as usize) else {
                    return err(&format_args!(
                        "packet of interface {interface}, which was never described"
                    ));
                };
                Block::Packet {
                    iface,
                    data: start + 8 + 20..start + 8 + 20 + caplen,
                    orig_len,
                    ts,
                }
            }
            SIMPLE_PACKET => {
                if body.len() < 4 {
                    return err(&"shorter than a simple packet block's header");
                }
                let orig_len = self.u32_at(body, 0);
                let Some(&iface) = self.interfaces.first() else {
                    return err(&"simple packet block, but no interface was described");
                };
                // The captured length is the original length cut at the
                // snapshot length, within the block.
                let mut caplen = (orig_len as usize).min(body.len() - 4);
                if iface.snaplen != 0 {
                    caplen = caplen.min(iface.snaplen as usize);
                }
                Block::Packet {
                    iface,
                    data: start + 12..start + 12 + caplen,
                    orig_len,
                    ts: 0,
                }
            }
            _ => Block::Other,
        };
        self.input.consume(len);
        Some(Ok(block))
    }

    /// The next packet where it lies in the read buffer.
    #[inline]
    pub(crate) fn next_raw(&mut self) -> Option<Result<RawFrame<'_>, String>> {
        loop {
            match self.next_block()? {
                Err(e) => return Some(Err(e)),
                Ok(Block::Packet {
                    iface,
                    data,
                    orig_len,
                    ts,
                }) => {
                    let offset_ns = iface.tsoffset.saturating_mul(1_000_000_000);
                    let ns = to_ns(ts, iface.tsresol).saturating_add_signed(offset_ns);
                    return Some(Ok(RawFrame {
                        data: &self.input.buf[data],
                        linktype: iface.linktype,
                        orig_len,
                        timestamp_ns: ns,
                    }));
                }
                Ok(_) => {}
            }
        }
    }
}

enum Block {
    Section,
    Interface,
    Packet {
        iface: Interface,
        /// Where the packet's bytes lie in the buffer.
        data: std::ops::Range<usize>,
        orig_len: u32,
        ts: u64,
    },
    Other,
}

/// Converts a timestamp in `if_tsresol` units to nanoseconds.
fn to_ns(raw: u64, resol: u8) -> u64 {
    let raw = u128::from(raw);
    let ns = if resol & 0x80 != 0 {
        (raw * 1_000_000_000) >> (resol & 0x7f).min(127)
    } else if resol <= 9 {
        raw * 10u128.pow(9 - u32::from(resol))
    } else {
        raw / 10u128.pow(u32::from(resol.min(38)) - 9)
    };
    u64::try_from(ns).unwrap_or(u64::MAX)
}
