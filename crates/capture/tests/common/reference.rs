//! The reader as it was before `read_into` (pcap-file's readers, a new
//! `Vec` per frame), kept to check the new one against.

#![allow(dead_code)]

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use capture::{Frame, LinkKind};
use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::{DataLink, TsResolution};

/// Where and why reading stopped early.
#[derive(Debug, PartialEq, Eq)]
pub struct OldError {
    pub path: PathBuf,
    pub packet: Option<usize>,
    pub reason: String,
}

enum Reader {
    Pcap(PcapReader<BufReader<File>>),
    PcapNg(Box<PcapNgReader<BufReader<File>>>),
}

pub struct OldSource {
    path: PathBuf,
    reader: Reader,
    count: usize,
    failed: bool,
}

fn datalink_number(d: DataLink) -> u32 {
    u32::from(d) & 0xffff
}

impl OldSource {
    pub fn open(path: &Path) -> Result<OldSource, String> {
        let mut file = File::open(path).map_err(|e| e.to_string())?;
        let mut magic = [0u8; 4];
        file.read_exact(&mut magic)
            .map_err(|_| "too short for a capture file".to_string())?;
        let file = File::open(path).map_err(|e| e.to_string())?;
        let reader = if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
            Reader::PcapNg(Box::new(
                PcapNgReader::new(BufReader::new(file)).map_err(|e| format!("pcapng: {e}"))?,
            ))
        } else {
            Reader::Pcap(
                PcapReader::new(BufReader::new(file))
                    .map_err(|e| format!("not a pcap or pcapng file: {e}"))?,
            )
        };
        Ok(OldSource {
            path: path.to_path_buf(),
            reader,
            count: 0,
            failed: false,
        })
    }

    pub fn is_pcapng(&self) -> bool {
        matches!(self.reader, Reader::PcapNg(_))
    }

    pub fn next_frame(&mut self) -> Option<Result<Frame, OldError>> {
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
                Some(Err(OldError {
                    path: self.path.clone(),
                    packet: Some(index),
                    reason,
                }))
            }
        }
    }
}

pub const FAKE_SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
pub const FAKE_DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

fn with_ethernet(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(14 + payload.len());
    v.extend_from_slice(&FAKE_DST);
    v.extend_from_slice(&FAKE_SRC);
    v.extend_from_slice(&ethertype.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

fn ip_ethertype(payload: &[u8]) -> u16 {
    match payload.first().map(|b| b >> 4) {
        Some(6) => 0x86dd,
        _ => 0x0800,
    }
}

/// The frame as Ethernet, for link type `linktype` (LINKTYPE_* numbers).
pub fn to_ethernet(linktype: u32, data: &[u8]) -> (Vec<u8>, LinkKind) {
    match linktype {
        1 => (data.to_vec(), LinkKind::Ethernet),
        // Raw IP (DLT_RAW on some systems, LINKTYPE_RAW, IPV4, IPV6).
        12 | 14 | 101 | 228 | 229 => (with_ethernet(ip_ethertype(data), data), LinkKind::Converted),
        // BSD loopback: a 4-byte address family (host or network order).
        0 | 108 if data.len() >= 4 => {
            let payload = &data[4..];
            (
                with_ethernet(ip_ethertype(payload), payload),
                LinkKind::Converted,
            )
        }
        // Linux cooked captures (their pseudo-protocols) and 802.11 are
        // converted since: compared as the crate converts them now (the
        // conversions are tested on their own in `frames.rs`).
        other => capture::to_ethernet(other, data),
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
