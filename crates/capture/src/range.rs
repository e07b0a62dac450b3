//! One byte range of a capture read as its own source: the records whose
//! first byte lies in the range, as [`PcapSource`] reads them from the
//! file's start, and the [`Boundary`] that proves (or refutes) where the
//! reader began (see docs/shards.md).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use crate::error::cause;
use crate::guess::{MAX_RECORD, Peek, Shape, first_pcap, first_pcapng};
use crate::input::{Input, display_name};
use crate::pcapng::Interface;
use crate::{IoError, PcapSource, Shard};

/// What a reader must know, besides an offset, to read records from
/// there: nothing for classic pcap (the file header says it all); for
/// pcapng the section's byte order and the interfaces described so far.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "lowercase")]
pub enum ReaderState {
    Pcap,
    PcapNg {
        big_endian: bool,
        interfaces: Vec<Interface>,
    },
}

/// A record's start in a file and the reader's state there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub offset: u64,
    pub state: ReaderState,
}

/// What a range's reader found: where it began (`first`: offset 0, the
/// file's header, for the range from 0; else its guess, or the position
/// it was given) and where its own chain of records crossed the range's
/// end (`next`: the first record starting at or past it, found by
/// following record lengths from `first`), with its frames and the error
/// it ended on. `next` is exact when `first` is: see [`check`](crate::check).
/// It serializes with its error as text, and deserializes back (the
/// error's packet number and reason read from the text:
/// [`IoError::from_text`]), for boundaries sent between processes.
#[derive(Clone, Debug, Serialize)]
pub struct Boundary {
    pub shard: Shard,
    pub first: Position,
    /// `None` when the reader ended on an error.
    pub next: Option<Position>,
    /// Frames read (before the error, if any).
    pub frames: u64,
    /// The error the range ended on, its packet counted from the range's
    /// first frame.
    #[serde(serialize_with = "error_text")]
    pub error: Option<IoError>,
}

fn error_text<S: serde::Serializer>(e: &Option<IoError>, s: S) -> Result<S::Ok, S::Error> {
    e.as_ref().map(|e| e.to_string()).serialize(s)
}

impl<'de> Deserialize<'de> for Boundary {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Boundary, D::Error> {
        /// A boundary as it serializes: its error as text.
        #[derive(Deserialize)]
        struct Sent {
            shard: Shard,
            first: Position,
            next: Option<Position>,
            frames: u64,
            error: Option<String>,
        }
        let b = Sent::deserialize(d)?;
        let name = display_name(&b.shard.path);
        Ok(Boundary {
            error: b.error.map(|text| IoError::from_text(&name, &text)),
            shard: b.shard,
            first: b.first,
            next: b.next,
            frames: b.frames,
        })
    }
}

/// Bytes read first for a file's header when a range is read from
/// elsewhere (more come, 64 KiB at a time, if its leading blocks need).
const HEAD_BYTES: u64 = 4096;

/// Bytes of a file from `pos`, each read stopping at `end` while short of
/// it, and reading 64 KiB at a time past it (only to finish the range's
/// last record).
struct RangeRead {
    file: File,
    pos: u64,
    end: u64,
}

impl Read for RangeRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let cap = match self.end.checked_sub(self.pos) {
            Some(left) if left > 0 => left,
            _ => 64 << 10,
        };
        let n = buf.len().min(usize::try_from(cap).unwrap_or(usize::MAX));
        let got = self.file.read(&mut buf[..n])?;
        self.pos += got as u64;
        Ok(got)
    }
}

/// Where a range's reader begins: a record's start, proven, and the
/// range's bytes from there when a walk read them already
/// ([`WalkedRange`]), which the reader then reads in place.
#[derive(Debug)]
pub struct RangeStart {
    pub position: Position,
    held: Option<Vec<u8>>,
}

impl From<Position> for RangeStart {
    /// A start whose bytes are read from the file.
    fn from(position: Position) -> RangeStart {
        RangeStart {
            position,
            held: None,
        }
    }
}

impl RangeStart {
    /// Bytes of the file from the start that the reader takes from memory.
    pub fn held(&self) -> usize {
        self.held.as_ref().map_or(0, Vec::len)
    }
}

/// A range's chain of records followed from its first record
/// ([`PcapSource::walk_range`]) to where it crosses the range's end.
#[derive(Debug)]
pub struct WalkedRange {
    pub start: RangeStart,
    /// The first record starting at or past the range's end; `None` when
    /// the file's read ends in the range, on an error.
    pub next: Option<Position>,
}

/// A range's file, opened: it must be a regular file.
fn open_regular(shard: &Shard) -> Result<(File, u64), IoError> {
    let name = display_name(&shard.path);
    let opening = |e: std::io::Error| IoError::op("opening", &name, cause(&e));
    let file = File::open(&shard.path).map_err(opening)?;
    let meta = file.metadata().map_err(opening)?;
    if !meta.is_file() {
        let reason = "not a regular file (only a file's byte range can be read)";
        return Err(IoError::reading(&name, reason.into()));
    }
    Ok((file, meta.len()))
}

/// The file's bytes from `at`: `held` (read already), then the file's
/// own up to the range's end.
fn input_from(
    shard: &Shard,
    file: File,
    at: u64,
    held: Option<Vec<u8>>,
    stop: Option<&'static AtomicBool>,
) -> Result<Input, IoError> {
    let held = held.unwrap_or_default();
    let rest = at + held.len() as u64;
    let mut file = file;
    file.seek(SeekFrom::Start(rest))
        .map_err(|e| IoError::reading(&display_name(&shard.path), cause(&e)))?;
    let file = RangeRead {
        file,
        pos: rest,
        end: shard.end,
    };
    Ok(Input::after(held, Box::new(file), at, stop))
}

/// Whether a range read from `from` (its guess without) begins at the
/// file's header.
fn from_header(shard: &Shard, from: Option<&Position>) -> bool {
    from.map_or(shard.start == 0, |p| p.offset == 0)
}

/// The reader of the file's header alone and the range's first record:
/// `from`, or the guess from the range's start.
fn head_and_first(
    shard: &Shard,
    file: &File,
    len: u64,
    from: Option<&Position>,
    stop: Option<&'static AtomicBool>,
) -> Result<(PcapSource, Position), IoError> {
    let name = display_name(&shard.path);
    let head_input = RangeRead {
        file: file
            .try_clone()
            .map_err(|e| IoError::op("opening", &name, cause(&e)))?,
        pos: 0,
        end: shard.end.min(HEAD_BYTES),
    };
    let head_input = Input::head(Box::new(head_input), HEAD_BYTES as usize, stop);
    let mut head = PcapSource::from_input(&name, head_input)?;
    if let Some(p) = from {
        return Ok((head, p.clone()));
    }
    let mut peek = Peek::new(file, len);
    let (start, end) = (shard.start, shard.end);
    let guessed = match head.shape() {
        Shape::Pcap(shape) => {
            first_pcap(&mut peek, shape, start, end).map(|offset| (offset, ReaderState::Pcap))
        }
        Shape::PcapNg(states) => {
            let big_endian = match states.last().map(|p| &p.state) {
                Some(ReaderState::PcapNg { big_endian, .. }) => *big_endian,
                _ => false,
            };
            first_pcapng(&mut peek, big_endian, start, end).map(|offset| {
                // The state in force there, if among the leading blocks.
                let at = states.iter().rev().find(|p| p.offset <= offset);
                let state = at.or(states.first()).map(|p| p.state.clone());
                (offset, state.unwrap_or(ReaderState::Pcap))
            })
        }
    };
    let (offset, state) = guessed.map_err(|e| IoError::reading(&name, cause(&e)))?;
    Ok((head, Position { offset, state }))
}

impl PcapSource {
    /// Reads the records of `shard` whose first byte lies in its range,
    /// the first found by a guess when the range does not start at 0 (see
    /// [`boundary`](Self::boundary) for its proof).
    pub fn open_range(shard: &Shard) -> Result<PcapSource, IoError> {
        PcapSource::open_range_with(shard, None, None)
    }

    /// Reads the records of `shard` from `from` (a proven position: the
    /// `next` of the range before, or offset 0 for the file's header).
    pub fn open_range_at(shard: &Shard, from: &Position) -> Result<PcapSource, IoError> {
        PcapSource::open_range_with(shard, Some(from), None)
    }

    /// [`open_range`](Self::open_range) or, given `from`,
    /// [`open_range_at`](Self::open_range_at); once `stop` is set the
    /// source reads no more (and has no boundary).
    pub fn open_range_with(
        shard: &Shard,
        from: Option<&Position>,
        stop: Option<&'static AtomicBool>,
    ) -> Result<PcapSource, IoError> {
        open_range_held(shard, from, None, stop)
    }

    /// Reads the records of `shard` from `start`, its held bytes in place
    /// (see [`walk_range`](Self::walk_range)); as
    /// [`open_range_with`](Self::open_range_with) otherwise.
    pub fn open_range_from(
        shard: &Shard,
        start: RangeStart,
        stop: Option<&'static AtomicBool>,
    ) -> Result<PcapSource, IoError> {
        open_range_held(shard, Some(&start.position), start.held, stop)
    }

    /// Follows the chain of records of `shard` from `from` (from the guess
    /// of its first record without) to the first record at or past its
    /// end, as its reader would read them. A classic pcap range is read
    /// once into memory and its records followed by their headers; the
    /// bytes are kept in the walk's start, for its reader
    /// ([`open_range_from`](Self::open_range_from)) to read in place. A
    /// pcapng range is read by a reader. `None` once `stop` is set.
    pub fn walk_range(
        shard: &Shard,
        from: Option<&Position>,
        stop: Option<&'static AtomicBool>,
    ) -> Result<Option<WalkedRange>, IoError> {
        if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
            return Ok(None);
        }
        let (file, len) = open_regular(shard)?;
        let header = from_header(shard, from);
        let from_file_start = Position {
            offset: 0,
            state: ReaderState::Pcap,
        };
        let from = if header { Some(&from_file_start) } else { from };
        let (head, first) = head_and_first(shard, &file, len, from, stop)?;
        let Some(big_endian) = head.pcap_big_endian() else {
            return walk_by_reader(shard, &first, stop);
        };
        let name = display_name(&shard.path);
        let reading = |e: std::io::Error| IoError::reading(&name, cause(&e));
        let mut file = file;
        file.seek(SeekFrom::Start(first.offset)).map_err(reading)?;
        let mut held = Vec::new();
        let range_len = shard.end.saturating_sub(first.offset);
        (&mut file)
            .take(range_len)
            .read_to_end(&mut held)
            .map_err(reading)?;
        let skip = if header { 24 } else { 0 };
        let next = follow_pcap(
            &mut file,
            &mut held,
            first.offset,
            skip,
            shard.end,
            big_endian,
        )
        .map_err(reading)?
        .map(|offset| Position {
            offset,
            state: ReaderState::Pcap,
        });
        Ok(Some(WalkedRange {
            start: RangeStart {
                position: first,
                held: Some(held),
            },
            next,
        }))
    }
    /// The proof of a range's reader once it ended: where it began, where
    /// its records crossed the range's end, its frames and error. `None`
    /// before the end, after a stop, and for a source not opened on a
    /// range.
    pub fn boundary(&self) -> Option<Boundary> {
        let r = self.ranged()?;
        if self.stopped() || !(r.ended || r.error.is_some()) {
            return None;
        }
        let next = r.error.is_none().then(|| Position {
            offset: self.offset(),
            state: self.state(),
        });
        Some(Boundary {
            shard: r.shard.clone(),
            first: r.first.clone(),
            next,
            frames: self.count() as u64,
            error: r.error.clone(),
        })
    }
}

/// [`PcapSource::open_range_from`], its held bytes `held` (if any).
fn open_range_held(
    shard: &Shard,
    from: Option<&Position>,
    held: Option<Vec<u8>>,
    stop: Option<&'static AtomicBool>,
) -> Result<PcapSource, IoError> {
    let name = display_name(&shard.path);
    let (file, len) = open_regular(shard)?;
    if from_header(shard, from) {
        // The header and records, read on to the range's end.
        let head = PcapSource::from_input(&name, input_from(shard, file, 0, held, stop)?)?;
        let first = Position {
            offset: 0,
            state: head.state(),
        };
        return head.into_range(shard, first, None);
    }
    // The header (and for pcapng the blocks before the first packet)
    // alone, then the records from the range's first.
    let (head, first) = head_and_first(shard, &file, len, from, stop)?;
    let input = input_from(shard, file, first.offset, held, stop)?;
    head.into_range(shard, first, Some(input))
}

/// A pcapng range walked by a reader: its records read whole.
fn walk_by_reader(
    shard: &Shard,
    first: &Position,
    stop: Option<&'static AtomicBool>,
) -> Result<Option<WalkedRange>, IoError> {
    let mut reader = PcapSource::open_range_with(shard, Some(first), stop)?;
    while reader.next_raw().is_some() {}
    Ok(reader.boundary().map(|b| WalkedRange {
        start: RangeStart {
            position: b.first,
            held: None,
        },
        next: b.next,
    }))
}

/// Follows classic pcap records by their 16-byte headers through `held`
/// (the file's bytes from offset `at`) from `held[pos..]`, as the reader
/// does: each at most [`MAX_RECORD`] bytes, none cut short by the file's
/// end. Reads the rest of the record that crosses `end` from `file`
/// (positioned after the held bytes) into `held`. Where the chain crosses
/// `end` (or the file ends cleanly); `None` on a record the reader fails on.
fn follow_pcap(
    file: &mut File,
    held: &mut Vec<u8>,
    at: u64,
    mut pos: usize,
    end: u64,
    big_endian: bool,
) -> std::io::Result<Option<u64>> {
    // Whole records in the held bytes cost a header's read each.
    let incl_at = |held: &[u8], pos: usize| {
        let word: [u8; 4] = held.get(pos + 8..pos + 12)?.try_into().ok()?;
        Some(if big_endian {
            u32::from_be_bytes(word)
        } else {
            u32::from_le_bytes(word)
        })
    };
    let limit = usize::try_from(end.saturating_sub(at)).unwrap_or(usize::MAX);
    loop {
        while pos < limit
            && let Some(incl) = incl_at(held, pos)
        {
            let total = 16 + incl as usize;
            if total > MAX_RECORD || pos + total > held.len() {
                break;
            }
            pos += total;
        }
        let offset = at + pos as u64;
        if offset >= end {
            return Ok(Some(offset));
        }
        if !hold(file, held, pos + 16)? {
            // Cleanly at the file's end, or a header cut short.
            return Ok((held.len() == pos).then_some(offset));
        }
        let total = 16 + incl_at(held, pos).unwrap_or(0) as usize;
        if total > MAX_RECORD || !hold(file, held, pos + total)? {
            return Ok(None);
        }
        pos += total;
    }
}

/// Makes `held` at least `n` bytes long from `file` if it has them.
fn hold(file: &mut File, held: &mut Vec<u8>, n: usize) -> std::io::Result<bool> {
    if held.len() < n {
        let want = (n - held.len()) as u64;
        file.take(want).read_to_end(held)?;
    }
    Ok(held.len() >= n)
}
