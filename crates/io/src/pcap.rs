//! pcap and pcapng files in and out.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::{Block, PcapNgReader, PcapNgWriter};
use pcap_file::{DataLink, TsResolution};

use crate::frame::{Frame, to_ethernet};

/// A capture that cannot be read or written, with where.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {reason}", path.display(), packet.map(|p| format!(", packet {p}")).unwrap_or_default())]
pub struct IoError {
    pub path: PathBuf,
    /// 1-based index of the packet at fault.
    pub packet: Option<usize>,
    pub reason: String,
}

enum Reader {
    Pcap(PcapReader<BufReader<File>>),
    PcapNg(Box<PcapNgReader<BufReader<File>>>),
}

/// Frames of a pcap or pcapng file, in order.
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
        let err = |reason: String| IoError {
            path: path.to_path_buf(),
            packet: None,
            reason,
        };
        let mut file = File::open(path).map_err(|e| err(e.to_string()))?;
        let mut magic = [0u8; 4];
        file.read_exact(&mut magic)
            .map_err(|_| err("too short for a capture file".into()))?;
        let file = File::open(path).map_err(|e| err(e.to_string()))?;
        let reader = if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
            Reader::PcapNg(Box::new(
                PcapNgReader::new(BufReader::new(file)).map_err(|e| err(format!("pcapng: {e}")))?,
            ))
        } else {
            Reader::Pcap(
                PcapReader::new(BufReader::new(file))
                    .map_err(|e| err(format!("not a pcap or pcapng file: {e}")))?,
            )
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

    /// Frames read so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The next frame; after an error (a truncated or corrupt record) the
    /// source ends, having delivered every frame before it.
    pub fn next_frame(&mut self) -> Option<Result<Frame, IoError>> {
        if self.failed {
            return None;
        }
        let index = self.count + 1;
        let result = match &mut self.reader {
            Reader::Pcap(r) => {
                let header = r.header();
                let linktype = datalink_number(header.datalink);
                let frac_ns = match header.ts_resolution {
                    TsResolution::MicroSecond => 1_000,
                    TsResolution::NanoSecond => 1,
                };
                // Raw records: like libpcap, accept lengths beyond the
                // snapshot length (truncated or odd captures).
                r.next_raw_packet().map(|p| {
                    p.map(|p| {
                        let (data, link) = to_ethernet(linktype, &p.data);
                        Frame {
                            data,
                            orig_len: p.orig_len,
                            timestamp_ns: u64::from(p.ts_sec) * 1_000_000_000
                                + u64::from(p.ts_frac) * frac_ns,
                            link,
                        }
                    })
                    .map_err(|e| e.to_string())
                })
            }
            Reader::PcapNg(r) => next_pcapng(r),
        };
        match result {
            None => None,
            Some(Ok(frame)) => {
                self.count = index;
                Some(Ok(frame))
            }
            Some(Err(reason)) => {
                self.failed = true;
                Some(Err(IoError {
                    path: self.path.clone(),
                    packet: Some(index),
                    reason,
                }))
            }
        }
    }
}

impl Iterator for PcapSource {
    type Item = Result<Frame, IoError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_frame()
    }
}

/// Converts a timestamp in an interface's `if_tsresol` units (default: µs)
/// to nanoseconds.
fn to_ns(raw: u64, idb: &InterfaceDescriptionBlock) -> u64 {
    let resol = idb
        .options
        .iter()
        .find_map(|o| match o {
            InterfaceDescriptionOption::IfTsResol(r) => Some(*r),
            _ => None,
        })
        .unwrap_or(6);
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

fn next_pcapng(r: &mut PcapNgReader<BufReader<File>>) -> Option<Result<Frame, String>> {
    loop {
        let block = match r.next_block()? {
            Ok(b) => b,
            Err(e) => return Some(Err(e.to_string())),
        };
        let (interface, raw_ts, data, orig_len) = match &block {
            Block::EnhancedPacket(p) => (
                Some(p.interface_id),
                p.timestamp.as_nanos() as u64,
                p.data.to_vec(),
                p.original_len,
            ),
            Block::SimplePacket(p) => (Some(0), 0, p.data.to_vec(), p.original_len),
            Block::Packet(p) => (
                Some(u32::from(p.interface_id)),
                p.timestamp,
                p.data.to_vec(),
                p.original_len,
            ),
            _ => (None, 0, Vec::new(), 0),
        };
        let Some(interface) = interface else { continue };
        let idb = r.interfaces().get(interface as usize);
        let Some(idb) = idb else {
            return Some(Err(format!(
                "packet of interface {interface}, which was never described"
            )));
        };
        let linktype = datalink_number(idb.linktype);
        let ts = to_ns(raw_ts, idb);
        let (data, link) = to_ethernet(linktype, &data);
        return Some(Ok(Frame {
            data,
            orig_len,
            timestamp_ns: ts,
            link,
        }));
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

enum Writer {
    Pcap(PcapWriter<BufWriter<File>>),
    PcapNg(PcapNgWriter<BufWriter<File>>),
}

/// An Ethernet capture file being written.
pub struct PcapSink {
    path: PathBuf,
    writer: Writer,
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
        let err = |reason: String| IoError {
            path: path.to_path_buf(),
            packet: None,
            reason,
        };
        let file = BufWriter::new(File::create(path).map_err(|e| err(e.to_string()))?);
        let writer = match format {
            SinkFormat::Pcap => {
                let header = PcapHeader {
                    datalink: DataLink::ETHERNET,
                    ts_resolution: TsResolution::NanoSecond,
                    snaplen: 262_144,
                    ..PcapHeader::default()
                };
                Writer::Pcap(PcapWriter::with_header(file, header).map_err(|e| err(e.to_string()))?)
            }
            SinkFormat::PcapNg => {
                let mut w = PcapNgWriter::new(file).map_err(|e| err(e.to_string()))?;
                let idb = InterfaceDescriptionBlock {
                    linktype: DataLink::ETHERNET,
                    snaplen: 262_144,
                    options: vec![InterfaceDescriptionOption::IfTsResol(9)],
                };
                w.write_pcapng_block(idb).map_err(|e| err(e.to_string()))?;
                Writer::PcapNg(w)
            }
        };
        Ok(PcapSink {
            path: path.to_path_buf(),
            writer,
            count: 0,
        })
    }

    pub fn write(&mut self, data: &[u8], timestamp_ns: u64) -> Result<(), IoError> {
        self.count += 1;
        let ts = Duration::from_nanos(timestamp_ns);
        let res = match &mut self.writer {
            Writer::Pcap(w) => w
                .write_packet(&PcapPacket::new(ts, data.len() as u32, data))
                .map(|_| ()),
            Writer::PcapNg(w) => w
                .write_pcapng_block(EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp: ts,
                    original_len: data.len() as u32,
                    data: data.into(),
                    options: vec![],
                })
                .map(|_| ()),
        };
        res.map_err(|e| IoError {
            path: self.path.clone(),
            packet: Some(self.count),
            reason: e.to_string(),
        })
    }

    pub fn count(&self) -> usize {
        self.count
    }

    /// Flushes the file.
    pub fn finish(self) -> Result<(), IoError> {
        let path = self.path.clone();
        let res = match self.writer {
            Writer::Pcap(w) => w.into_writer().flush(),
            Writer::PcapNg(w) => w.into_inner().flush(),
        };
        res.map_err(|e| IoError {
            path,
            packet: None,
            reason: e.to_string(),
        })
    }
}
