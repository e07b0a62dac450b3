//! pcap and pcapng captures read: files, FIFOs, standard input.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use pcap_file::pcap::PcapHeader;
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::error::{IoError, cause};
use crate::frame::{Frame, FrameInfo, RawFrame};
use crate::guess::MAX_RECORD;
use crate::input::{Input, display_name, is_stdin, read_failed};
use crate::pcapng::PcapNgRecords;

/// Records of a classic pcap file, parsed from a large buffer.
struct PcapRecords {
    input: Input,
    big_endian: bool,
    /// Nanoseconds per unit of a record's fractional timestamp.
    frac_ns: u64,
    linktype: u32,
    /// The header's snapshot length.
    snaplen: u32,
    /// No record starting at or past this offset is read (a byte range's end).
    end: u64,
}

impl PcapRecords {
    /// The next record where it lies in the read buffer. Like libpcap, a
    /// record may be longer than the snapshot length.
    #[inline]
    fn next_raw(&mut self) -> Option<Result<RawFrame<'_>, String>> {
        let input = &mut self.input;
        if input.offset >= self.end {
            return None;
        }
        if input.have() < 16 {
            match input.fill(16) {
                Ok(true) => {}
                Ok(false) if input.have() == 0 => return None,
                Ok(false) => return Some(Err(truncated("record header", input.have(), 16))),
                Err(e) => return read_failed(input, &e).map(Err),
            }
        }
        let h: &[u8; 16] = input.buf[input.pos..input.pos + 16].try_into().ok()?;
        let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let mut words = [word(0), word(4), word(8), word(12)];
        if self.big_endian {
            words = words.map(u32::swap_bytes);
        }
        let [ts_sec, ts_frac, incl_len, orig_len] = words;
        let total = 16 + incl_len as usize;
        if total > MAX_RECORD {
            return Some(Err(too_long(incl_len)));
        }
        if input.have() < total {
            match input.fill(total) {
                Ok(true) => {}
                Ok(false) => {
                    let have = input.have() - 16;
                    return Some(Err(truncated("record", have, incl_len as usize)));
                }
                Err(e) => return read_failed(input, &e).map(Err),
            }
        }
        let start = input.pos + 16;
        input.consume(total);
        Some(Ok(RawFrame {
            data: &input.buf[start..start + incl_len as usize],
            linktype: self.linktype,
            orig_len,
            timestamp_ns: u64::from(ts_sec) * 1_000_000_000 + u64::from(ts_frac) * self.frac_ns,
        }))
    }
}

#[cold]
fn truncated(what: &str, have: usize, want: usize) -> String {
    format!("truncated {what} ({have} of {want} bytes)")
}

#[cold]
fn too_long(incl_len: u32) -> String {
    format!("record of {incl_len} bytes, over the {MAX_RECORD}-byte limit (corrupt header?)")
}

enum Reader {
    Pcap(PcapRecords),
    PcapNg(Box<PcapNgRecords>),
}

/// Frames of a pcap or pcapng file, in order, read through a large buffer.
pub struct PcapSource {
    path: PathBuf,
    reader: Reader,
    count: usize,
    failed: bool,
    /// A byte range's reader: what its [`Boundary`](crate::Boundary) needs.
    range: Option<Box<Ranged>>,
}

/// What a byte range's reader keeps for its proof.
pub(crate) struct Ranged {
    pub(crate) shard: crate::Shard,
    pub(crate) first: crate::Position,
    /// Whether the reader came to its range's end (or the file's).
    pub(crate) ended: bool,
    pub(crate) error: Option<IoError>,
}

/// The link type; the field's upper bits carry FCS information.
fn datalink_number(d: DataLink) -> u32 {
    u32::from(d) & 0xffff
}

impl PcapSource {
    /// Opens a capture: a file, a FIFO, or standard input for `-` (as
    /// `tcpdump -r -`). Streams (all but regular files) are read once, in
    /// order, as the bytes come.
    pub fn open(path: &Path) -> Result<PcapSource, IoError> {
        PcapSource::open_with(path, None)
    }

    /// Like [`open`](Self::open); once `stop` is set the source reads no
    /// more and ends (cleanly, no error) after the records it holds: a
    /// stream waiting for its writer ends within 50 ms. Set before the
    /// header was read, the open fails.
    pub fn open_with(
        path: &Path,
        stop: Option<&'static AtomicBool>,
    ) -> Result<PcapSource, IoError> {
        let name = display_name(path);
        let opened = crate::input::open_stream_aware(path, stop)
            .map_err(|e| IoError::op("opening", &name, cause(&e)))?;
        let mut source = PcapSource::from_input(&name, Input::of(opened, stop))?;
        source.path = path.to_path_buf();
        Ok(source)
    }

    /// Reads a capture from `reader` (a file, bytes in memory); `path`
    /// names it in errors.
    pub fn from_reader(path: &Path, reader: Box<dyn Read + Send>) -> Result<PcapSource, IoError> {
        PcapSource::from_input(path, Input::new(reader))
    }

    pub(crate) fn from_input(path: &Path, mut input: Input) -> Result<PcapSource, IoError> {
        let err = |reason: String| IoError::reading(path, reason);
        let early = |input: &Input, e: std::io::Error| match input.stopped {
            true => err("stopped by a signal before the capture's header was read".into()),
            false => err(cause(&e)),
        };
        if !input.fill(4).map_err(|e| early(&input, e))? {
            return Err(err("too short for a capture file".into()));
        }
        let reader = if input.buf[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
            Reader::PcapNg(Box::new(
                PcapNgRecords::open(input).map_err(|e| err(format!("pcapng: {e}")))?,
            ))
        } else {
            let not_pcap = |e: String| err(format!("not a pcap or pcapng file: {e}"));
            let filled = input.fill(24).map_err(|e| early(&input, e))?;
            if !filled {
                return Err(not_pcap("too short for a pcap header".into()));
            }
            let (_, header) =
                PcapHeader::from_slice(&input.buf[..24]).map_err(|e| not_pcap(e.to_string()))?;
            input.consume(24);
            Reader::Pcap(PcapRecords {
                input,
                big_endian: header.endianness == Endianness::Big,
                frac_ns: match header.ts_resolution {
                    TsResolution::MicroSecond => 1_000,
                    TsResolution::NanoSecond => 1,
                },
                linktype: datalink_number(header.datalink),
                snaplen: header.snaplen,
                end: u64::MAX,
            })
        };
        Ok(PcapSource {
            path: path.to_path_buf(),
            reader,
            count: 0,
            failed: false,
            range: None,
        })
    }

    /// The reader's state at this point: for pcapng, the section's byte
    /// order and interfaces.
    pub(crate) fn state(&self) -> crate::ReaderState {
        match &self.reader {
            Reader::Pcap(_) => crate::ReaderState::Pcap,
            Reader::PcapNg(r) => {
                let (big_endian, interfaces) = r.state();
                crate::ReaderState::PcapNg {
                    big_endian,
                    interfaces: interfaces.to_vec(),
                }
            }
        }
    }

    /// Where the next record starts in the file.
    pub(crate) fn offset(&self) -> u64 {
        self.input().offset
    }

    /// What the guess of a range's first record needs: a classic pcap
    /// file's byte order, resolution and snapshot length; for pcapng the
    /// blocks before the first packet are read, and their states are the
    /// guesses.
    pub(crate) fn shape(&mut self) -> crate::guess::Shape {
        match &mut self.reader {
            Reader::Pcap(r) => crate::guess::Shape::Pcap(crate::guess::PcapShape {
                big_endian: r.big_endian,
                nano: r.frac_ns == 1,
                snaplen: r.snaplen,
            }),
            Reader::PcapNg(r) => crate::guess::Shape::PcapNg(
                r.leading_states()
                    .into_iter()
                    .map(|(offset, big_endian, interfaces)| crate::Position {
                        offset,
                        state: crate::ReaderState::PcapNg {
                            big_endian,
                            interfaces,
                        },
                    })
                    .collect(),
            ),
        }
    }

    /// A classic pcap file's byte order (big-endian or not); `None` for
    /// pcapng, whose sections each say their own.
    pub(crate) fn pcap_big_endian(&self) -> Option<bool> {
        match &self.reader {
            Reader::Pcap(r) => Some(r.big_endian),
            Reader::PcapNg(_) => None,
        }
    }

    /// Makes this the reader of `shard` from `first`: records are read
    /// from `input` (positioned at `first.offset`) in state `first.state`,
    /// up to the first starting at or past the shard's end. Without
    /// `input` the reader stays where it is (a range from the file's header).
    pub(crate) fn into_range(
        mut self,
        shard: &crate::Shard,
        first: crate::Position,
        input: Option<Input>,
    ) -> Result<PcapSource, IoError> {
        let end = shard.end;
        match (&mut self.reader, &first.state, input) {
            (Reader::Pcap(r), crate::ReaderState::Pcap, Some(input)) => {
                r.input = input;
                r.end = end;
            }
            (Reader::Pcap(r), crate::ReaderState::Pcap, None) => r.end = end,
            (Reader::PcapNg(r), crate::ReaderState::PcapNg { .. }, None) => r.set_end(end),
            (
                Reader::PcapNg(r),
                crate::ReaderState::PcapNg {
                    big_endian,
                    interfaces,
                },
                Some(input),
            ) => **r = PcapNgRecords::resume(input, *big_endian, interfaces.clone(), end),
            (reader, state, _) => {
                let file = match reader {
                    Reader::Pcap(_) => "a classic pcap file",
                    Reader::PcapNg(_) => "a pcapng file",
                };
                let given = match state {
                    crate::ReaderState::Pcap => "classic pcap",
                    crate::ReaderState::PcapNg { .. } => "pcapng",
                };
                let reason = format!("a {given} reader's position given for {file}");
                return Err(IoError::reading(&self.path, reason));
            }
        }
        self.range = Some(Box::new(Ranged {
            shard: shard.clone(),
            first,
            ended: false,
            error: None,
        }));
        Ok(self)
    }

    pub(crate) fn ranged(&self) -> Option<&Ranged> {
        self.range.as_deref()
    }

    /// A range's reader: its shard and the position it began at (to open
    /// the same range again: [`open_range_at`](Self::open_range_at));
    /// `None` for a reader of a whole capture.
    pub fn range_start(&self) -> Option<(&crate::Shard, &crate::Position)> {
        self.ranged().map(|r| (&r.shard, &r.first))
    }

    /// The path it was opened with (`-`: standard input).
    pub fn path(&self) -> &Path {
        &self.path
    }

    #[inline]
    fn input(&self) -> &Input {
        match &self.reader {
            Reader::Pcap(r) => &r.input,
            Reader::PcapNg(r) => r.input(),
        }
    }

    /// Whether the capture is a stream (standard input, a FIFO, ...): read
    /// once, it cannot be opened again from its start.
    pub fn is_stream(&self) -> bool {
        is_stdin(&self.path) || self.input().is_stream()
    }

    /// Whether reading ended on the stop flag ([`open_with`](Self::open_with)).
    pub fn stopped(&self) -> bool {
        self.input().stopped
    }

    /// Whether the next frame would wait for a stream's writer: none is
    /// buffered and no bytes are ready. Never for a regular file.
    #[inline]
    pub fn would_wait(&self) -> bool {
        self.input().would_wait()
    }

    /// The snapshot length a classic pcap file's header gives, or for
    /// pcapng the first interface's once a packet was read (`None` before,
    /// and for none). Records may be longer: this reader keeps every
    /// byte, where libpcap cuts them at it.
    pub fn snaplen(&self) -> Option<u32> {
        match &self.reader {
            Reader::Pcap(r) => Some(r.snaplen),
            Reader::PcapNg(r) => r.snaplen(),
        }
    }

    /// The link type a classic pcap file's header gives (`None` for
    /// pcapng, whose interfaces give theirs).
    pub fn linktype(&self) -> Option<u32> {
        match &self.reader {
            Reader::Pcap(r) => Some(r.linktype),
            Reader::PcapNg(_) => None,
        }
    }

    /// Frames read so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Appends the next frame's bytes, as Ethernet where the link type
    /// allows (see [`to_ethernet_into`]), to `out` and returns what they
    /// are. Allocates nothing (pcap and pcapng records are parsed where
    /// they lie in the read buffer) unless `out` must grow.
    ///
    /// After an error (a truncated or corrupt record) the source ends,
    /// having delivered every frame before it; `out` is left as it was.
    #[inline]
    pub fn read_into(&mut self, out: &mut Vec<u8>) -> Option<Result<FrameInfo, IoError>> {
        Some(self.next_raw()?.map(|f| {
            let before = out.len();
            let link = f.to_ethernet_into(out);
            FrameInfo {
                len: (out.len() - before) as u32,
                orig_len: f.orig_len,
                timestamp_ns: f.timestamp_ns,
                link,
            }
        }))
    }

    /// The next record as captured, lent from the reader's buffer (no
    /// copy): for sources that look at a packet
    /// before deciding to keep it. Ends as [`read_into`](Self::read_into).
    #[inline]
    pub fn next_raw(&mut self) -> Option<Result<RawFrame<'_>, IoError>> {
        let PcapSource {
            path,
            reader,
            count,
            failed,
            range,
        } = self;
        if *failed {
            return None;
        }
        let result = match reader {
            Reader::Pcap(r) => r.next_raw(),
            Reader::PcapNg(r) => r.next_raw(),
        };
        let Some(result) = result else {
            if let Some(range) = range {
                range.ended = true;
            }
            return None;
        };
        match result {
            Ok(frame) => {
                *count += 1;
                Some(Ok(frame))
            }
            Err(reason) => {
                *failed = true;
                let e = IoError {
                    path: display_name(path),
                    packet: Some(*count + 1),
                    reason,
                    op: None,
                };
                if let Some(range) = range {
                    range.error = Some(e.clone());
                }
                Some(Err(e))
            }
        }
    }

    /// The next frame in a `Vec` of its own; after an error (a truncated or
    /// corrupt record) the source ends, having delivered every frame
    /// before it. [`read_into`](Self::read_into) reuses a buffer instead.
    pub fn next_frame(&mut self) -> Option<Result<Frame, IoError>> {
        let mut data = Vec::new();
        Some(self.read_into(&mut data)?.map(|info| Frame {
            data,
            orig_len: info.orig_len,
            timestamp_ns: info.timestamp_ns,
            link: info.link,
        }))
    }
}

impl Iterator for PcapSource {
    type Item = Result<Frame, IoError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_frame()
    }
}
