//! pcap and pcapng files in and out.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use pcap_file::pcap::PcapHeader;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::ENHANCED_PACKET_BLOCK;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::frame::{Frame, FrameInfo, to_ethernet_into};
use crate::pcapng::PcapNgRecords;

/// A capture that cannot be read or written, with where.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {reason}", path.display(), packet.map(|p| format!(", packet {p}")).unwrap_or_default())]
pub struct IoError {
    pub path: PathBuf,
    /// 1-based index of the packet at fault.
    pub packet: Option<usize>,
    pub reason: String,
}

/// Size of the read and write buffers: one `read(2)` or `write(2)` per
/// MiB of capture.
const BUF_SIZE: usize = 1 << 20;

/// The largest classic pcap record (16-byte header and data) read. A
/// larger one is taken as a corrupt header; this is the bound pcap-file's
/// reader had (its 8 MB buffer), which this crate used before.
const MAX_RECORD: usize = 8_000_000;

/// A file (or bytes) read through a large buffer.
pub(crate) struct Input {
    file: Box<dyn Read + Send>,
    pub(crate) buf: Vec<u8>,
    /// Unread bytes are `buf[pos..end]`.
    pub(crate) pos: usize,
    pub(crate) end: usize,
    /// File offset of `buf[pos]`.
    pub(crate) offset: u64,
}

impl Input {
    fn new(file: Box<dyn Read + Send>) -> Input {
        Input {
            file,
            buf: vec![0; BUF_SIZE],
            pos: 0,
            end: 0,
            offset: 0,
        }
    }

    /// Unread bytes in the buffer.
    #[inline]
    pub(crate) fn have(&self) -> usize {
        self.end - self.pos
    }

    /// Takes `n` buffered bytes as read.
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
    }

    /// Makes `buf[pos..end]` at least `need` bytes long if the file has
    /// them; false at the end of the file.
    #[cold]
    pub(crate) fn fill(&mut self, need: usize) -> std::io::Result<bool> {
        if self.pos + need > self.buf.len() {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        while self.end - self.pos < need {
            if self.end == self.buf.len() {
                // Grown as the bytes come, not as a (maybe corrupt)
                // length asks.
                let more = (self.buf.len() * 2).min(need.max(BUF_SIZE));
                self.buf.resize(more, 0);
            }
            match self.file.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// Records of a classic pcap file, parsed from a large buffer.
struct PcapRecords {
    input: Input,
    big_endian: bool,
    /// Nanoseconds per unit of a record's fractional timestamp.
    frac_ns: u64,
    linktype: u32,
    /// The header's snapshot length.
    snaplen: u32,
}

impl PcapRecords {
    /// The next record where it lies in the read buffer. Like libpcap, a
    /// record may be longer than the snapshot length.
    #[inline]
    fn next_raw(&mut self) -> Option<Result<RawFrame<'_>, String>> {
        let input = &mut self.input;
        if input.have() < 16 {
            match input.fill(16) {
                Ok(true) => {}
                Ok(false) if input.have() == 0 => return None,
                Ok(false) => return Some(Err(truncated("record header", input.have(), 16))),
                Err(e) => return Some(Err(format!("read failed: {e}"))),
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
                Err(e) => return Some(Err(format!("read failed: {e}"))),
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

/// A record as captured, where it lies in the reader's buffer: not yet
/// converted to Ethernet ([`RawFrame::to_ethernet_into`]).
#[derive(Clone, Copy, Debug)]
pub struct RawFrame<'a> {
    pub data: &'a [u8],
    /// The LINKTYPE_* number of the record's interface.
    pub linktype: u32,
    /// Length on the wire (may exceed the captured bytes).
    pub orig_len: u32,
    pub timestamp_ns: u64,
}

impl RawFrame<'_> {
    /// Appends the bytes, as Ethernet where the link type allows (see
    /// [`to_ethernet_into`]), to `out`; what they are.
    #[inline]
    pub fn to_ethernet_into(&self, out: &mut Vec<u8>) -> crate::LinkKind {
        if self.linktype == 1 {
            out.extend_from_slice(self.data);
            crate::LinkKind::Ethernet
        } else {
            to_ethernet_into(self.linktype, self.data, out)
        }
    }

    /// Whether the bytes are Ethernet as captured (no conversion).
    pub fn is_ethernet(&self) -> bool {
        self.linktype == 1
    }
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
}

/// The link type; the field's upper bits carry FCS information.
fn datalink_number(d: DataLink) -> u32 {
    u32::from(d) & 0xffff
}

impl PcapSource {
    pub fn open(path: &Path) -> Result<PcapSource, IoError> {
        let file = File::open(path).map_err(|e| IoError {
            path: path.to_path_buf(),
            packet: None,
            reason: e.to_string(),
        })?;
        PcapSource::from_reader(path, Box::new(file))
    }

    /// Reads a capture from `reader` (a file, bytes in memory); `path`
    /// names it in errors.
    pub fn from_reader(path: &Path, reader: Box<dyn Read + Send>) -> Result<PcapSource, IoError> {
        let err = |reason: String| IoError {
            path: path.to_path_buf(),
            packet: None,
            reason,
        };
        let mut input = Input::new(reader);
        if !input.fill(4).map_err(|e| err(e.to_string()))? {
            return Err(err("too short for a capture file".into()));
        }
        let reader = if input.buf[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
            Reader::PcapNg(Box::new(
                PcapNgRecords::open(input).map_err(|e| err(format!("pcapng: {e}")))?,
            ))
        } else {
            let not_pcap = |e: String| err(format!("not a pcap or pcapng file: {e}"));
            if !input.fill(24).map_err(|e| not_pcap(e.to_string()))? {
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
            })
        };
        Ok(PcapSource {
            path: path.to_path_buf(),
            reader,
            count: 0,
            failed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
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
        } = self;
        if *failed {
            return None;
        }
        let result = match reader {
            Reader::Pcap(r) => r.next_raw(),
            Reader::PcapNg(r) => r.next_raw(),
        };
        match result? {
            Ok(frame) => {
                *count += 1;
                Some(Ok(frame))
            }
            Err(reason) => {
                *failed = true;
                Some(Err(IoError {
                    path: path.clone(),
                    packet: Some(*count + 1),
                    reason,
                }))
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

/// Output formats.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum SinkFormat {
    /// Classic pcap, nanosecond timestamps, Ethernet.
    Pcap,
    /// pcapng, one Ethernet interface with nanosecond timestamps.
    PcapNg,
}

/// The snapshot length of written captures, tcpdump's default: a record
/// may not be longer (libpcap refuses longer records, pcap or pcapng), so
/// a longer packet is an error, never cut.
const SNAPLEN: u32 = 262_144;

/// A capture file being written (Ethernet unless made with
/// [`PcapSink::create_for`]), through a large buffer.
pub struct PcapSink {
    path: PathBuf,
    out: BufWriter<File>,
    format: SinkFormat,
    count: usize,
}

impl PcapSink {
    /// Creates `path`; `.pcapng` files get pcapng, others pcap.
    pub fn create(path: &Path) -> Result<PcapSink, IoError> {
        let format = if path.extension().is_some_and(|e| e == "pcapng") {
            SinkFormat::PcapNg
        } else {
            SinkFormat::Pcap
        };
        PcapSink::create_as(path, format)
    }

    pub fn create_as(path: &Path, format: SinkFormat) -> Result<PcapSink, IoError> {
        PcapSink::create_for(path, format, 1)
    }

    /// A capture of frames of link type `linktype` (LINKTYPE_* numbers),
    /// written as they are (`create_as` writes Ethernet).
    pub fn create_for(path: &Path, format: SinkFormat, linktype: u32) -> Result<PcapSink, IoError> {
        let datalink = DataLink::from(linktype);
        let err = |reason: String| IoError {
            path: path.to_path_buf(),
            packet: None,
            reason,
        };
        let file = File::create(path).map_err(|e| err(e.to_string()))?;
        let mut header = Vec::new();
        match format {
            SinkFormat::Pcap => {
                let header_fields = PcapHeader {
                    datalink,
                    ts_resolution: TsResolution::NanoSecond,
                    snaplen: SNAPLEN,
                    endianness: Endianness::Big,
                    ..PcapHeader::default()
                };
                header_fields
                    .write_to(&mut header)
                    .map_err(|e| err(e.to_string()))?;
            }
            SinkFormat::PcapNg => {
                // Native byte order, as the packet blocks below.
                let mut w = PcapNgWriter::with_endianness(&mut header, Endianness::native())
                    .map_err(|e| err(e.to_string()))?;
                let idb = InterfaceDescriptionBlock {
                    linktype: datalink,
                    snaplen: SNAPLEN,
                    options: vec![InterfaceDescriptionOption::IfTsResol(9)],
                };
                w.write_pcapng_block(idb).map_err(|e| err(e.to_string()))?;
            }
        }
        let mut out = BufWriter::with_capacity(BUF_SIZE, file);
        out.write_all(&header)
            .map_err(|e| err(format!("write failed: {e}")))?;
        Ok(PcapSink {
            path: path.to_path_buf(),
            out,
            format,
            count: 0,
        })
    }

    /// Writes a packet made of `data`.
    pub fn write(&mut self, data: &[u8], timestamp_ns: u64) -> Result<(), IoError> {
        self.write_parts(data, &[], timestamp_ns)
    }

    /// Writes one packet made of `head` then `tail` (e.g. a packet's
    /// linear part and its fragments), without joining them first.
    pub fn write_parts(
        &mut self,
        head: &[u8],
        tail: &[u8],
        timestamp_ns: u64,
    ) -> Result<(), IoError> {
        let len = head.len() + tail.len();
        self.write_with(head, tail, len, timestamp_ns)
    }

    /// Writes a record of `data` captured from a packet of `orig_len`
    /// bytes on the wire (a cut capture keeps its lengths).
    pub fn write_record(
        &mut self,
        data: &[u8],
        orig_len: u32,
        timestamp_ns: u64,
    ) -> Result<(), IoError> {
        let orig = (orig_len as usize).max(data.len());
        self.write_with(data, &[], orig, timestamp_ns)
    }

    fn write_with(
        &mut self,
        head: &[u8],
        tail: &[u8],
        orig: usize,
        timestamp_ns: u64,
    ) -> Result<(), IoError> {
        let len = head.len() + tail.len();
        let res = match self.format {
            SinkFormat::Pcap => {
                let secs = timestamp_ns / 1_000_000_000;
                if len > SNAPLEN as usize {
                    return Err(self.bad_packet(format!(
                        "packet of {len} bytes, over the snapshot length ({SNAPLEN})"
                    )));
                }
                let Ok(secs) = u32::try_from(secs) else {
                    return Err(self.bad_packet(format!(
                        "timestamp {secs} s is beyond what pcap can hold (2106)"
                    )));
                };
                let mut h = [0u8; 16];
                h[0..4].copy_from_slice(&secs.to_be_bytes());
                h[4..8].copy_from_slice(&((timestamp_ns % 1_000_000_000) as u32).to_be_bytes());
                h[8..12].copy_from_slice(&(len as u32).to_be_bytes());
                h[12..16].copy_from_slice(&(orig as u32).to_be_bytes());
                self.out
                    .write_all(&h)
                    .and_then(|()| self.out.write_all(head))
                    .and_then(|()| self.out.write_all(tail))
            }
            SinkFormat::PcapNg => {
                if len > SNAPLEN as usize {
                    return Err(self.bad_packet(format!(
                        "packet of {len} bytes, over the snapshot length ({SNAPLEN}) that libpcap reads"
                    )));
                }
                // An enhanced packet block of interface 0, nanosecond
                // timestamps, no options.
                let pad = (4 - len % 4) % 4;
                let Ok(block_len) = u32::try_from(32 + len + pad) else {
                    return Err(self.bad_packet(format!("packet of {len} bytes")));
                };
                let mut h = [0u8; 28];
                for (i, v) in [
                    ENHANCED_PACKET_BLOCK,
                    block_len,
                    0,
                    (timestamp_ns >> 32) as u32,
                    timestamp_ns as u32,
                    len as u32,
                    orig as u32,
                ]
                .into_iter()
                .enumerate()
                {
                    h[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
                }
                self.out
                    .write_all(&h)
                    .and_then(|()| self.out.write_all(head))
                    .and_then(|()| self.out.write_all(tail))
                    .and_then(|()| self.out.write_all(&[0; 3][..pad]))
                    .and_then(|()| self.out.write_all(&block_len.to_ne_bytes()))
            }
        };
        res.map_err(|e| self.write_failed(e))?;
        self.count += 1;
        Ok(())
    }

    #[cold]
    fn bad_packet(&self, reason: String) -> IoError {
        IoError {
            path: self.path.clone(),
            packet: Some(self.count + 1),
            reason,
        }
    }

    /// A failed write: the buffered packets, not only the last, are lost.
    #[cold]
    fn write_failed(&self, e: std::io::Error) -> IoError {
        IoError {
            path: self.path.clone(),
            packet: None,
            reason: format!("write failed: {e}"),
        }
    }

    /// Packets written.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Flushes the file.
    pub fn finish(mut self) -> Result<(), IoError> {
        self.out.flush().map_err(|e| self.write_failed(e))
    }
}
