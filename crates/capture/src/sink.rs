//! Captures written: pcap or pcapng, whole records through a large buffer.
//!
//! A failed write (a full file system, a device gone) is an error naming
//! the file and the cause; the file is then cut back to its last whole
//! record (where it can be: a regular file), so what was written is a
//! valid capture of the packets before it.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use pcap_file::pcap::PcapHeader;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::ENHANCED_PACKET_BLOCK;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::error::{IoError, cause};
use crate::input::BUF_SIZE;

/// Whether `path` names standard output (`-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
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
/// [`PcapSink::create_for`]), whole records through a large buffer.
pub struct PcapSink {
    path: PathBuf,
    file: File,
    format: SinkFormat,
    /// Records not yet written to the file (and, first, the header).
    buf: Vec<u8>,
    /// Where each packet record in `buf` ends.
    ends: Vec<usize>,
    /// Where the header ends in `buf` (0 once written).
    header_end: usize,
    /// Bytes and packets in the file.
    written: u64,
    flushed: usize,
    /// Packets taken (written or buffered).
    count: usize,
    /// The first write error, told again by every later call.
    failed: Option<IoError>,
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
    /// written as they are (`create_as` writes Ethernet). `-` is standard
    /// output, as `tcpdump -w -` has it.
    pub fn create_for(path: &Path, format: SinkFormat, linktype: u32) -> Result<PcapSink, IoError> {
        let datalink = DataLink::from(linktype);
        let err = |reason: String| IoError::op("creating", path, reason);
        let file = if is_stdout(path) {
            std::io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .map(File::from)
        } else {
            File::create(path)
        }
        .map_err(|e| err(cause(&e)))?;
        let mut header = Vec::with_capacity(BUF_SIZE);
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
        Ok(PcapSink {
            path: path.to_path_buf(),
            file,
            format,
            header_end: header.len(),
            buf: header,
            ends: Vec::new(),
            written: 0,
            flushed: 0,
            count: 0,
            failed: None,
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
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let len = head.len() + tail.len();
        if len > SNAPLEN as usize {
            let libpcap = match self.format {
                SinkFormat::Pcap => "",
                SinkFormat::PcapNg => " that libpcap reads",
            };
            return Err(self.bad_packet(format!(
                "packet of {len} bytes, over the snapshot length ({SNAPLEN}){libpcap}"
            )));
        }
        match self.format {
            SinkFormat::Pcap => {
                let secs = timestamp_ns / 1_000_000_000;
                let Ok(secs) = u32::try_from(secs) else {
                    return Err(self.bad_packet(format!(
                        "timestamp {secs} s is beyond what pcap can hold (2106)"
                    )));
                };
                let words = [
                    secs,
                    (timestamp_ns % 1_000_000_000) as u32,
                    len as u32,
                    orig as u32,
                ];
                // The header built apart and the record's room reserved
                // once: a record costs three copies, not a check per word.
                let mut header = [0u8; 16];
                for (at, v) in header.chunks_exact_mut(4).zip(words) {
                    at.copy_from_slice(&v.to_be_bytes());
                }
                self.buf.reserve(16 + len);
                self.buf.extend_from_slice(&header);
                self.buf.extend_from_slice(head);
                self.buf.extend_from_slice(tail);
            }
            SinkFormat::PcapNg => {
                // An enhanced packet block of interface 0, nanosecond
                // timestamps, no options.
                let pad = (4 - len % 4) % 4;
                let block_len = (32 + len + pad) as u32;
                let words = [
                    ENHANCED_PACKET_BLOCK,
                    block_len,
                    0,
                    (timestamp_ns >> 32) as u32,
                    timestamp_ns as u32,
                    len as u32,
                    orig as u32,
                ];
                let mut header = [0u8; 28];
                for (at, v) in header.chunks_exact_mut(4).zip(words) {
                    at.copy_from_slice(&v.to_ne_bytes());
                }
                self.buf.reserve(block_len as usize);
                self.buf.extend_from_slice(&header);
                self.buf.extend_from_slice(head);
                self.buf.extend_from_slice(tail);
                self.buf.extend_from_slice(&[0; 3][..pad]);
                self.buf.extend_from_slice(&block_len.to_ne_bytes());
            }
        }
        self.ends.push(self.buf.len());
        self.count += 1;
        if self.buf.len() >= BUF_SIZE {
            self.flush_buf()?;
        }
        Ok(())
    }

    #[cold]
    fn bad_packet(&self, reason: String) -> IoError {
        IoError {
            path: self.path.clone(),
            packet: Some(self.count + 1),
            reason,
            op: None,
        }
    }

    /// Writes the buffer to the file. On a failure the file is cut back
    /// to the last whole record that reached it, and the error says how
    /// many packets it holds.
    fn flush_buf(&mut self) -> Result<(), IoError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut done = 0;
        while done < self.buf.len() {
            match self.file.write(&self.buf[done..]) {
                Ok(0) => {
                    let e = std::io::Error::from(std::io::ErrorKind::WriteZero);
                    return Err(self.write_failed(done, &e));
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.write_failed(done, &e)),
            }
        }
        self.written += done as u64;
        self.flushed += self.ends.len();
        self.buf.clear();
        self.ends.clear();
        self.header_end = 0;
        Ok(())
    }

    /// The failure of a write after `done` bytes of the buffer reached the
    /// file: the file is cut to its last whole record (a regular file;
    /// elsewhere the bytes stay as they are), the sink fails from now on.
    #[cold]
    fn write_failed(&mut self, done: usize, e: &std::io::Error) -> IoError {
        let whole = self.ends.iter().take_while(|&&end| end <= done).count();
        let keep = match whole {
            0 if self.header_end <= done => self.header_end,
            0 => 0,
            n => self.ends[n - 1],
        };
        if keep < done {
            // Cutting back frees space: it works on a full file system.
            let _ = self.file.set_len(self.written + keep as u64);
        }
        let packets = self.flushed + whole;
        let err = IoError::op(
            "writing",
            &self.path,
            format!(
                "{} ({packets} packet{} written before it)",
                cause(e),
                if packets == 1 { "" } else { "s" }
            ),
        );
        self.buf.clear();
        self.ends.clear();
        self.failed = Some(err.clone());
        err
    }

    /// Packets written.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Writes what is buffered: the file is complete after it.
    pub fn finish(mut self) -> Result<(), IoError> {
        self.flush_buf()
    }
}

impl Drop for PcapSink {
    /// A sink dropped without [`finish`](PcapSink::finish) still writes
    /// what it holds (errors are then lost: call `finish`).
    fn drop(&mut self) {
        if self.failed.is_none() && !self.buf.is_empty() {
            let _ = self.flush_buf();
        }
    }
}
