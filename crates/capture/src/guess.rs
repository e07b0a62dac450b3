//! The guess of a byte range's first record, from the range's start alone:
//! the first offset where a chain of plausible records begins. It is only
//! a guess (a packet's bytes may look like records); the range's reader
//! proves or refutes it afterwards (see [`check`](crate::check)), so a
//! wrong guess costs a re-read, never a wrong result.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::Position;
use crate::pcapng::{BYTE_ORDER_MAGIC, ENHANCED_PACKET, MAX_BLOCK, PACKET, SECTION_HEADER};

/// The largest classic pcap record (16-byte header and data) read. A
/// larger one is taken as a corrupt header; this is the bound pcap-file's
/// reader had (its 8 MB buffer), which this crate used before.
pub(crate) const MAX_RECORD: usize = 8_000_000;

/// Records a chain must run to (or reach the file's end) to be believed.
const CHAIN: usize = 8;

/// How far back in time a record may go from the one before it in a
/// chain, in nanoseconds: captures of several CPUs interleave a little.
const BACK_SLACK_NS: u64 = 3_600 * 1_000_000_000;

/// How far forward in time a record may go from the one before it in a
/// chain (a year), in nanoseconds: a timestamp made of a packet's bytes
/// seldom lands that close (captures merged from days apart do).
const FORWARD_SLACK_NS: u64 = 366 * 86_400 * 1_000_000_000;

/// Bytes read at once while guessing.
const WINDOW: usize = 64 << 10;

/// What a guess needs of a file's start: a classic pcap file's header;
/// for pcapng the reader's states through the blocks before the first
/// packet, each with the offset it holds from.
pub(crate) enum Shape {
    Pcap(PcapShape),
    PcapNg(Vec<Position>),
}

/// What a classic pcap file's header says that a guess needs.
#[derive(Copy, Clone, Debug)]
pub(crate) struct PcapShape {
    pub(crate) big_endian: bool,
    /// Nanosecond timestamps (else microseconds).
    pub(crate) nano: bool,
    pub(crate) snaplen: u32,
}

/// Bytes of a file read at any offset, through a window.
pub(crate) struct Peek<'a> {
    file: &'a File,
    len: u64,
    base: u64,
    buf: Vec<u8>,
}

impl<'a> Peek<'a> {
    pub(crate) fn new(file: &'a File, len: u64) -> Peek<'a> {
        Peek {
            file,
            len,
            base: 0,
            buf: Vec::new(),
        }
    }

    /// `n` bytes at `off`; `None` past the file's end.
    fn get(&mut self, off: u64, n: usize) -> std::io::Result<Option<&[u8]>> {
        if off.saturating_add(n as u64) > self.len {
            return Ok(None);
        }
        let inside = off >= self.base && off + n as u64 <= self.base + self.buf.len() as u64;
        if !inside {
            let want = (n.max(WINDOW) as u64).min(self.len - off) as usize;
            self.buf.resize(want, 0);
            self.file.read_exact_at(&mut self.buf, off)?;
            self.base = off;
        }
        let at = (off - self.base) as usize;
        Ok(Some(&self.buf[at..at + n]))
    }

    fn u32_at(&mut self, off: u64, big_endian: bool) -> std::io::Result<Option<u32>> {
        Ok(self.get(off, 4)?.map(|b| word(b, 0, big_endian)))
    }
}

fn word(b: &[u8], i: usize, big_endian: bool) -> u32 {
    let v = u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    if big_endian { v.swap_bytes() } else { v }
}

/// Where the scan for a range `[start, end)`'s first record stops: a
/// record starts within every `max_record` bytes of a readable file, so
/// none found by then (and by the range's end) means none is there to find.
fn scan_limit(from: u64, end: u64, max_record: usize, len: u64) -> u64 {
    end.max(from.saturating_add(max_record as u64)).min(len)
}

/// The first offset `>= start` (past the 24-byte file header) where a
/// chain of plausible classic pcap records begins; the scan's limit when
/// none does.
pub(crate) fn first_pcap(
    peek: &mut Peek<'_>,
    shape: PcapShape,
    start: u64,
    end: u64,
) -> std::io::Result<u64> {
    let from = start.max(24);
    let limit = scan_limit(from, end, MAX_RECORD, peek.len);
    for p in from..limit {
        if pcap_chain(peek, shape, p)? {
            return Ok(p);
        }
    }
    Ok(limit)
}

/// Whether plausible records follow one another from `p`: included length
/// within the snapshot length (or the reader's limit) and at most the
/// original one (which is not 0 and within the reader's limit too),
/// fractional seconds within a second, each timestamp at most an hour
/// before the one before it and at most a year after, for [`CHAIN`]
/// records or exactly to the file's end.
fn pcap_chain(peek: &mut Peek<'_>, shape: PcapShape, p: u64) -> std::io::Result<bool> {
    let max_incl = match shape.snaplen {
        s if s > 0 && (s as usize) < MAX_RECORD - 16 => u64::from(s),
        _ => (MAX_RECORD - 16) as u64,
    };
    let frac_limit = if shape.nano { 1_000_000_000 } else { 1_000_000 };
    let frac_ns = if shape.nano { 1 } else { 1_000 };
    let (mut at, mut prev_ns) = (p, None::<u64>);
    for i in 0..CHAIN {
        if at == peek.len {
            return Ok(i > 0);
        }
        let Some(h) = peek.get(at, 16)? else {
            return Ok(false);
        };
        let [sec, frac, incl, orig] = [0, 4, 8, 12].map(|i| word(h, i, shape.big_endian));
        let plausible = u64::from(incl) <= max_incl
            && orig >= incl
            && orig > 0
            && orig as usize <= MAX_RECORD
            && frac < frac_limit;
        if !plausible {
            return Ok(false);
        }
        let ns = u64::from(sec) * 1_000_000_000 + u64::from(frac) * frac_ns;
        let in_time = |prev: u64| {
            ns.saturating_add(BACK_SLACK_NS) >= prev && ns <= prev.saturating_add(FORWARD_SLACK_NS)
        };
        if prev_ns.is_some_and(|prev| !in_time(prev)) {
            return Ok(false);
        }
        prev_ns = Some(ns);
        at += 16 + u64::from(incl);
        if at > peek.len {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Block types a chain may start with: those the pcapng specification
/// names (section header, interface description, packet, simple packet,
/// name resolution, interface statistics, enhanced packet, IRIG, ARINC
/// 429, systemd journal, decryption secrets) and the two custom ones.
fn known_block(t: u32) -> bool {
    matches!(t, SECTION_HEADER | 1..=10 | 0x0000_0bad | 0x4000_0bad)
}

/// The first 4-aligned offset `>= start` (blocks start at multiples of 4:
/// every block length is one) where a chain of plausible pcapng blocks
/// begins, read in byte order `big_endian` until a section header says
/// otherwise; the scan's limit when none does.
pub(crate) fn first_pcapng(
    peek: &mut Peek<'_>,
    big_endian: bool,
    start: u64,
    end: u64,
) -> std::io::Result<u64> {
    let from = start.next_multiple_of(4);
    let limit = scan_limit(from, end, MAX_BLOCK, peek.len);
    let mut p = from;
    while p < limit {
        if pcapng_chain(peek, big_endian, p)? {
            return Ok(p);
        }
        p += 4;
    }
    Ok(limit)
}

/// Whether plausible blocks follow one another from `p`: the first of a
/// known type, each a multiple of 4 and at least 12 bytes long, its
/// trailing length equal to its leading one, a packet block's captured
/// length within it, for [`CHAIN`] blocks or exactly to the file's end.
fn pcapng_chain(peek: &mut Peek<'_>, mut big_endian: bool, p: u64) -> std::io::Result<bool> {
    let mut at = p;
    for i in 0..CHAIN {
        if at == peek.len {
            return Ok(i > 0);
        }
        let Some(h) = peek.get(at, 12)? else {
            return Ok(false);
        };
        if word(h, 0, false) == SECTION_HEADER {
            big_endian = match word(h, 8, false) {
                BYTE_ORDER_MAGIC => false,
                m if m == BYTE_ORDER_MAGIC.swap_bytes() => true,
                _ => return Ok(false),
            };
        }
        let (kind, len) = (word(h, 0, big_endian), word(h, 4, big_endian));
        if (i == 0 && !known_block(kind)) || len < 12 || len % 4 != 0 || len as usize > MAX_BLOCK {
            return Ok(false);
        }
        let len = u64::from(len);
        if matches!(kind, ENHANCED_PACKET | PACKET) {
            let caplen = peek.u32_at(at + 20, big_endian)?;
            if len < 32 || caplen.is_none_or(|c| u64::from(c) > len - 32) {
                return Ok(false);
            }
        }
        if peek.u32_at(at + len - 4, big_endian)? != Some(len as u32) {
            return Ok(false);
        }
        at += len;
    }
    Ok(true)
}
