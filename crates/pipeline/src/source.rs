//! Sources: where packets come from. A source fills batches and never
//! looks inside a packet beyond its link layer.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use capture::LinkKind;

use crate::batch::Batch;

/// Why a source stopped early; every packet before it was delivered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(pub String);

/// A stream of packets in batches.
pub trait Source: Send {
    /// Fills an empty `batch` until it is full or the source ends: a
    /// batch left empty means the source has ended.
    fn fill(&mut self, batch: &mut Batch) -> Result<(), SourceError>;

    /// How many packets the source holds, when it knows.
    fn expected(&self) -> Option<u64> {
        None
    }

    /// What the source has to tell of its reading beyond the packets it
    /// gave (a live interface: frames the kernel dropped, frames cut).
    fn note(&self) -> Option<String> {
        None
    }

    /// Whether the source ends by itself once the replay's stop flag is
    /// set (it was given the flag), after the packets it holds: the
    /// replay then reads it to its end rather than stop at once, so no
    /// packet the source took in is lost (a capture from a pipe).
    fn ends_on_stop(&self) -> bool {
        false
    }

    /// Frames read but not given, per LINKTYPE_* number: frames without
    /// an Ethernet form a capture skipped ([`Foreign::Skip`]).
    fn skipped(&self) -> Vec<(u32, u64)> {
        Vec::new()
    }

    /// Frames given shorter than they were on the wire (a capture's
    /// snapshot length cut them): how many so far.
    fn snapped(&self) -> u64 {
        0
    }

    /// A byte range of a capture read to its end: the proof of where its
    /// reader began and where its records crossed the range's end
    /// ([`capture::Boundary`], docs/shards.md); `None` for other sources,
    /// and before the end.
    fn boundary(&self) -> Option<capture::Boundary> {
        None
    }

    /// Another source over the same packets, from the first, for a worker
    /// that reads them all and keeps its share (a file is opened again,
    /// traffic generated again); `None` where packets can be read once
    /// only.
    fn fork(&self) -> Option<Box<dyn Source>> {
        None
    }

    /// The capture file this source reads whole from its start, unread
    /// yet, when it is a regular file: one that can be cut into byte
    /// ranges, each read by its own [`range`](Source::range). `None` for
    /// streams, bytes in memory, a range already, and other sources.
    fn cuttable(&self) -> Option<&Path> {
        None
    }

    /// The records of the byte range `range` of the [`cuttable`](Source::cuttable)
    /// file, read from `from` (a record's start, proven; with the range's
    /// bytes when its walk read them), as this source gives them (frames
    /// without an Ethernet form, a filter), counted with this source (a
    /// filter's counts in its note).
    fn range(
        &self,
        range: &capture::Shard,
        from: capture::RangeStart,
    ) -> Result<Box<dyn Source>, SourceError> {
        let _ = from;
        Err(SourceError(format!(
            "{}: not a capture file that can be cut into byte ranges",
            range.path.display()
        )))
    }

    /// Reads up to `max` packets into an empty `batch`, keeping only those
    /// `keep` takes (by sequence number and bytes), until the batch is
    /// full: how many packets were read, kept or not (0: the source has
    /// ended), and how reading ended. A worker that reads a whole source
    /// for its own flows skips the others here, without a second pass.
    /// The default reads a whole batch and cuts it at `max`, losing the
    /// rest: sources that [`fork`](Source::fork) read exactly `max`.
    fn fill_where(
        &mut self,
        batch: &mut Batch,
        max: u64,
        keep: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> (u64, Result<(), SourceError>) {
        let result = self.fill(batch);
        if (batch.len() as u64) > max {
            batch.truncate(max as usize);
        }
        let read = batch.len() as u64;
        batch.retain(|info, data| keep(info.seq, data));
        (read, result)
    }
}

/// What a capture does with frames that have no Ethernet form
/// ([`LinkKind::Foreign`]: 802.11 management or encrypted frames, PPP, ...).
#[derive(Copy, Clone, Default, PartialEq, Eq, Debug)]
pub enum Foreign {
    /// Not given to the program; counted ([`Source::skipped`]).
    #[default]
    Skip,
    /// Given to the program as captured.
    Pass,
}

/// A pcap or pcapng capture, read as a stream: a file, a FIFO, or
/// standard input (`-`).
pub struct Capture {
    reader: capture::PcapSource,
    stop: Option<&'static AtomicBool>,
    seq: u64,
    foreign: Foreign,
    /// Frames skipped per link type, in order of first appearance.
    skipped: Vec<(u32, u64)>,
    /// Frames read shorter than on the wire.
    snapped: u64,
    /// A capture in memory: its name and bytes, to read again (a fork).
    bytes: Option<(std::path::PathBuf, std::sync::Arc<[u8]>)>,
}

impl Capture {
    /// Opens a capture that skips frames without an Ethernet form.
    pub fn open(path: &Path) -> Result<Capture, SourceError> {
        Capture::open_with(path, None)
    }

    /// Like [`open`](Capture::open), reading no more once `stop` is set
    /// (the replay's stop flag): the capture then ends after the packets
    /// it holds, and a pipe's reader waiting for its writer ends within
    /// 50 ms ([`capture::PcapSource::open_with`]).
    pub fn open_with(
        path: &Path,
        stop: Option<&'static AtomicBool>,
    ) -> Result<Capture, SourceError> {
        let reader =
            capture::PcapSource::open_with(path, stop).map_err(|e| SourceError(e.to_string()))?;
        Ok(Capture::from_reader(reader, stop))
    }

    /// A capture read by `reader` (one byte range of a file, say:
    /// [`capture::PcapSource::open_range_with`]), that skips frames
    /// without an Ethernet form; `stop` as for [`open_with`](Capture::open_with).
    pub fn from_reader(reader: capture::PcapSource, stop: Option<&'static AtomicBool>) -> Capture {
        Capture {
            reader,
            stop,
            seq: 0,
            foreign: Foreign::Skip,
            skipped: Vec::new(),
            snapped: 0,
            bytes: None,
        }
    }

    /// A whole capture (pcap or pcapng) held in memory; `name` names it in
    /// errors, as a file's path does. The replay's stop flag ends it
    /// between batches.
    pub fn from_bytes(name: &Path, bytes: std::sync::Arc<[u8]>) -> Result<Capture, SourceError> {
        let cursor = std::io::Cursor::new(bytes.clone());
        let reader = capture::PcapSource::from_reader(name, Box::new(cursor))
            .map_err(|e| SourceError(e.to_string()))?;
        let mut capture = Capture::from_reader(reader, None);
        capture.bytes = Some((name.to_path_buf(), bytes));
        Ok(capture)
    }

    /// What to do with frames without an Ethernet form.
    pub fn foreign(mut self, foreign: Foreign) -> Capture {
        self.foreign = foreign;
        self
    }

    #[cold]
    fn count_skipped(&mut self, linktype: u32) {
        match self.skipped.iter_mut().find(|(l, _)| *l == linktype) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((linktype, 1)),
        }
    }
}

impl Source for Capture {
    /// A file opened again, bytes in memory read again; a stream (a pipe,
    /// standard input) is read once.
    fn fork(&self) -> Option<Box<dyn Source>> {
        if let Some((name, bytes)) = &self.bytes {
            let fork = Capture::from_bytes(name, bytes.clone()).ok()?;
            return Some(Box::new(fork.foreign(self.foreign)));
        }
        if self.reader.is_stream() {
            return None;
        }
        // A byte range is read again from where it began.
        if let Some((shard, first)) = self.reader.range_start() {
            let reader =
                capture::PcapSource::open_range_with(shard, Some(first), self.stop).ok()?;
            return Some(Box::new(
                Capture::from_reader(reader, self.stop).foreign(self.foreign),
            ));
        }
        let fork = Capture::open_with(self.reader.path(), self.stop).ok()?;
        Some(Box::new(fork.foreign(self.foreign)))
    }

    fn ends_on_stop(&self) -> bool {
        self.stop.is_some()
    }

    fn cuttable(&self) -> Option<&Path> {
        let whole = self.bytes.is_none() && self.reader.range_start().is_none();
        (whole && self.seq == 0 && !self.reader.is_stream()).then(|| self.reader.path())
    }

    fn range(
        &self,
        range: &capture::Shard,
        from: capture::RangeStart,
    ) -> Result<Box<dyn Source>, SourceError> {
        let reader = capture::PcapSource::open_range_from(range, from, self.stop)
            .map_err(|e| SourceError(e.to_string()))?;
        Ok(Box::new(
            Capture::from_reader(reader, self.stop).foreign(self.foreign),
        ))
    }

    fn skipped(&self) -> Vec<(u32, u64)> {
        self.skipped.clone()
    }

    fn snapped(&self) -> u64 {
        self.snapped
    }

    fn boundary(&self) -> Option<capture::Boundary> {
        self.reader.boundary()
    }

    fn fill(&mut self, batch: &mut Batch) -> Result<(), SourceError> {
        self.fill_where(batch, u64::MAX, &mut |_, _| true).1
    }

    /// Skipped frames count neither as read nor against `max`, but keep
    /// their sequence numbers: packets are numbered as in the capture.
    fn fill_where(
        &mut self,
        batch: &mut Batch,
        max: u64,
        keep: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> (u64, Result<(), SourceError>) {
        let mut read = 0u64;
        let skip = self.foreign == Foreign::Skip;
        while !batch.is_full() && read < max {
            // A stream between bursts: what came so far goes now.
            if read > 0 && self.reader.would_wait() {
                break;
            }
            let frame = match self.reader.next_raw() {
                None => break,
                Some(Ok(f)) => f,
                Some(Err(e)) => return (read, Err(SourceError(e.to_string()))),
            };
            self.seq += 1;
            self.snapped += u64::from(frame.data.len() < frame.orig_len as usize);
            let (seq, ts) = (self.seq, frame.timestamp_ns);
            if frame.is_ethernet() {
                read += 1;
                // Looked at where it lies; copied only when kept.
                if keep(seq, frame.data) {
                    batch.push(seq, ts, LinkKind::Ethernet, frame.data);
                }
            } else {
                // Converted into the batch, and withdrawn if skipped or
                // not kept.
                let mut link = LinkKind::Ethernet;
                let mut skipped = None;
                let kept = batch.push_with(seq, ts, link, |buf| {
                    let start = buf.len();
                    link = frame.to_ethernet_into(buf);
                    match link {
                        LinkKind::Foreign(linktype) if skip => {
                            skipped = Some(linktype);
                            false
                        }
                        _ => keep(seq, &buf[start..]),
                    }
                });
                if let Some(linktype) = skipped {
                    self.count_skipped(linktype);
                    continue;
                }
                read += 1;
                if kept {
                    batch.set_last(ts, link);
                }
            }
        }
        (read, Ok(()))
    }
}

/// Generated traffic: one or more streams merged by timestamp.
pub struct Generated {
    specs: Vec<packet::GenSpec>,
    packets: Box<dyn Iterator<Item = (u64, Vec<u8>)> + Send>,
    total: u64,
    seq: u64,
    stop: Option<&'static AtomicBool>,
}

impl Generated {
    /// Streams from specs like `udp,flows=1000,size=64,count=1000000`.
    pub fn parse(specs: &[String]) -> Result<Generated, SourceError> {
        let specs = specs
            .iter()
            .map(|s| packet::GenSpec::parse(s).map_err(|e| SourceError(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Generated::new(&specs))
    }

    pub fn new(specs: &[packet::GenSpec]) -> Generated {
        Generated {
            specs: specs.to_vec(),
            packets: Box::new(packet::merge(specs)),
            total: specs.iter().map(|s| s.count).sum(),
            seq: 0,
            stop: None,
        }
    }

    /// Makes no more packets once `stop` is set (the replay's stop flag),
    /// as a capture opened with one reads no more.
    pub fn stop_on(mut self, stop: &'static AtomicBool) -> Generated {
        self.stop = Some(stop);
        self
    }
}

impl Source for Generated {
    fn fork(&self) -> Option<Box<dyn Source>> {
        let fork = Generated::new(&self.specs);
        Some(Box::new(match self.stop {
            Some(stop) => fork.stop_on(stop),
            None => fork,
        }))
    }

    fn ends_on_stop(&self) -> bool {
        self.stop.is_some()
    }

    fn fill(&mut self, batch: &mut Batch) -> Result<(), SourceError> {
        self.fill_where(batch, u64::MAX, &mut |_, _| true).1
    }

    fn fill_where(
        &mut self,
        batch: &mut Batch,
        max: u64,
        keep: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> (u64, Result<(), SourceError>) {
        let stopped = |stop: Option<&AtomicBool>| stop.is_some_and(|s| s.load(Ordering::Relaxed));
        if stopped(self.stop) {
            return (0, Ok(()));
        }
        let (packets, seq, stop) = (&mut self.packets, &mut self.seq, self.stop);
        // A fork keeps few packets of its own (`keep`): the flag is looked
        // at as packets are made, not only per batch, lest it make them
        // all before a batch fills.
        let mut made = 0u32;
        fill_ethernet(batch, max, keep, seq, || {
            made = made.wrapping_add(1);
            if made.is_multiple_of(4096) && stopped(stop) {
                return None;
            }
            packets.next()
        })
    }

    fn expected(&self) -> Option<u64> {
        Some(self.total)
    }
}

/// Reads Ethernet frames from `next` into `batch` (numbered on from
/// `seq`), as [`Source::fill_where`] does: at most `max`, kept as `keep`
/// says, until the batch is full or `next` has no more.
fn fill_ethernet<D: AsRef<[u8]>>(
    batch: &mut Batch,
    max: u64,
    keep: &mut dyn FnMut(u64, &[u8]) -> bool,
    seq: &mut u64,
    mut next: impl FnMut() -> Option<(u64, D)>,
) -> (u64, Result<(), SourceError>) {
    let mut read = 0;
    while !batch.is_full() && read < max {
        let Some((ts, data)) = next() else {
            break;
        };
        *seq += 1;
        read += 1;
        if keep(*seq, data.as_ref()) {
            batch.push(*seq, ts, LinkKind::Ethernet, data.as_ref());
        }
    }
    (read, Ok(()))
}

/// Packets held in memory (tests, benchmarks, packets a caller built).
pub struct Packets {
    packets: std::sync::Arc<[(u64, Vec<u8>)]>,
    next: usize,
}

impl Packets {
    /// `(timestamp_ns, Ethernet frame)` pairs.
    pub fn new(packets: Vec<(u64, Vec<u8>)>) -> Packets {
        Packets {
            packets: packets.into(),
            next: 0,
        }
    }
}

impl Source for Packets {
    fn fill(&mut self, batch: &mut Batch) -> Result<(), SourceError> {
        self.fill_where(batch, u64::MAX, &mut |_, _| true).1
    }

    fn fill_where(
        &mut self,
        batch: &mut Batch,
        max: u64,
        keep: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> (u64, Result<(), SourceError>) {
        // Packets are numbered by position, from 1.
        let (packets, next) = (&self.packets, &mut self.next);
        let mut seq = *next as u64;
        fill_ethernet(batch, max, keep, &mut seq, || {
            let p = packets.get(*next)?;
            *next += 1;
            Some((p.0, p.1.as_slice()))
        })
    }

    fn fork(&self) -> Option<Box<dyn Source>> {
        Some(Box::new(Packets {
            packets: self.packets.clone(),
            next: 0,
        }))
    }

    fn expected(&self) -> Option<u64> {
        Some(self.packets.len() as u64)
    }
}

/// Hands every packet of `source` (the first `limit` of them) to `each`,
/// in order; stops at the source's error, after the packets before it.
pub fn for_each_packet(
    source: &mut dyn Source,
    limit: Option<u64>,
    mut each: impl FnMut(&crate::PacketInfo, &[u8]),
) -> Result<u64, SourceError> {
    for_each_step(source, limit, |step| {
        if let Step::Packet(info, data) = step {
            each(info, data)
        }
    })
}

/// One step of [`for_each_step`]: a packet, or the end of a batch the
/// source gave (a stream that pauses, such as a pipe between bursts, ends
/// a batch: a reader that publishes as it goes does it there).
pub enum Step<'a> {
    Packet(&'a crate::PacketInfo, &'a [u8]),
    BatchEnd,
}

/// [`for_each_packet`] that also tells `each` when each batch is done;
/// how many packets were read, or why the source stopped.
pub fn for_each_step(
    source: &mut dyn Source,
    limit: Option<u64>,
    mut each: impl FnMut(Step<'_>),
) -> Result<u64, SourceError> {
    let mut batch = Batch::new();
    let mut seen = 0u64;
    loop {
        batch.clear();
        if limit.is_some_and(|l| seen >= l) {
            return Ok(seen);
        }
        let err = source.fill(&mut batch);
        for (info, data) in batch.iter() {
            if limit.is_some_and(|l| seen >= l) {
                break;
            }
            seen += 1;
            each(Step::Packet(info, data));
        }
        each(Step::BatchEnd);
        err?;
        if batch.is_empty() {
            return Ok(seen);
        }
    }
}
