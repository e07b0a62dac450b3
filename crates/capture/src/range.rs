//! One byte range of a capture read as its own source: the records whose
//! first byte lies in the range, as [`PcapSource`] reads them from the
//! file's start, and the [`Boundary`] that proves (or refutes) where the
//! reader began (see docs/shards.md).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use crate::error::cause;
use crate::guess::{Peek, Shape, first_pcap, first_pcapng};
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
        let name = display_name(&shard.path);
        let opening = |e: std::io::Error| IoError::op("opening", &name, cause(&e));
        let file = File::open(&shard.path).map_err(opening)?;
        let len = file.metadata().map_err(opening)?.len();
        if !file.metadata().map_err(opening)?.is_file() {
            let reason = "not a regular file (only a file's byte range can be read)";
            return Err(IoError::reading(&name, reason.into()));
        }
        let from_header = from.map_or(shard.start == 0, |p| p.offset == 0);
        // The header (and for pcapng the blocks before the first packet)
        // only, unless the range is read from there: its reads then go on
        // to the range's end.
        let head_input = RangeRead {
            file: file.try_clone().map_err(opening)?,
            pos: 0,
            end: if from_header {
                shard.end
            } else {
                shard.end.min(HEAD_BYTES)
            },
        };
        let mut head = PcapSource::from_input(&name, Input::at(Box::new(head_input), 0, stop))?;
        if from_header {
            let first = Position {
                offset: 0,
                state: head.state(),
            };
            return head.into_range(shard, first, None);
        }
        let first = match from {
            Some(p) => p.clone(),
            None => {
                let mut peek = Peek::new(&file, len);
                let (start, end) = (shard.start, shard.end);
                let guessed = match head.shape() {
                    Shape::Pcap(shape) => first_pcap(&mut peek, shape, start, end)
                        .map(|offset| (offset, ReaderState::Pcap)),
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
                Position { offset, state }
            }
        };
        let mut file = file;
        file.seek(SeekFrom::Start(first.offset))
            .map_err(|e| IoError::reading(&name, cause(&e)))?;
        let input = RangeRead {
            file,
            pos: first.offset,
            end: shard.end,
        };
        let input = Input::at(Box::new(input), first.offset, stop);
        head.into_range(shard, first, Some(input))
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
