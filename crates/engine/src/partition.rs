//! The shuffle of a flow-affine run ([`partition`]): one range of a
//! capture read and its packets split by flow into the buckets the
//! workers of `sluice run --threads N` would run, each a compact blob
//! ([`crate::bucket`]) in source order. The range's [`capture::Boundary`]
//! is kept for the proof that it was read from a true record start
//! (docs/shards.md).

use std::sync::atomic::AtomicBool;

use capture::{LinkKind, PcapSource};
use pipeline::{Foreign, Sharding};

use crate::Error;
use crate::bucket::{BucketPacket, BucketWriter, PartitionError};
use crate::source::{Origin, Skipped, SourceSpec};

/// A range read and split into buckets.
#[derive(Clone, Debug)]
pub struct Partition {
    /// The range's place in the plan.
    pub index: u32,
    pub shard: Sharding,
    /// One blob per bucket ([`crate::Bucket::parse`] reads it).
    pub buckets: Vec<Vec<u8>>,
    /// Where the range's reader began and where its records crossed the
    /// range's end (`None` for a whole capture).
    pub boundary: Option<capture::Boundary>,
    /// Frames read (those skipped for want of an Ethernet form included).
    pub frames: u64,
    /// Packets put in the buckets.
    pub packets: u64,
    /// Packets per bucket.
    pub per_bucket: Vec<u64>,
    /// Frames skipped for want of an Ethernet form, per link type.
    pub skipped: Skipped,
    /// Frames shorter than on the wire (the capture's snapshot length).
    pub snapped: u64,
    /// The error the reading ended on (every packet before it is in the
    /// buckets), as a run's `source_error` says it.
    pub source_error: Option<String>,
}

/// Reads `source` (a range of a capture, [`Origin::Range`], or a whole
/// capture file), the `index`-th of its plan, and splits its packets over
/// `buckets` workers by `shard`, as the workers of a run with `buckets`
/// threads take them: the same frames (converted to Ethernet, foreign
/// ones skipped or passed, the source's tcpdump filter applied) given to
/// the same worker ([`Sharding::worker`]). `stop`, once set, ends the
/// reading (the partition is then incomplete: its boundary is `None`).
pub fn partition(
    source: &SourceSpec,
    index: u32,
    buckets: usize,
    shard: Sharding,
    stop: Option<&'static AtomicBool>,
) -> Result<Partition, Error> {
    if buckets == 0 || u32::try_from(buckets).is_err() {
        return Err(PartitionError::Buckets(buckets).into());
    }
    if shard == Sharding::RoundRobin {
        return Err(PartitionError::RoundRobin.into());
    }
    let opening = |e: capture::IoError| pipeline::SourceError(e.to_string());
    let (mut reader, foreign) = match &source.origin {
        Origin::Range {
            path,
            start,
            end,
            proven,
            foreign,
        } => (
            crate::source::open_range(path, *start, *end, proven.as_ref(), stop)?,
            *foreign,
        ),
        Origin::Capture { path, foreign } if !capture::is_stdin(path) => (
            PcapSource::open_with(path, stop).map_err(opening)?,
            *foreign,
        ),
        _ => return Err(PartitionError::Source(source.describe()).into()),
    };
    let filter = match &source.filter {
        Some(expr) => {
            let prog = cbpf::compile_expr(expr, cbpf::ETHERNET, cbpf::DEFAULT_SNAPLEN).map_err(
                |cause| Error::Filter {
                    expr: expr.clone(),
                    cause,
                },
            )?;
            Some(cbpf::Filter::new(&prog))
        }
        None => None,
    };
    let mut writers: Vec<BucketWriter> = (0..buckets).map(|_| BucketWriter::new()).collect();
    let mut per_bucket = vec![0u64; buckets];
    let (mut frames, mut packets, mut snapped) = (0u64, 0u64, 0u64);
    let mut skipped: Vec<(u32, u64)> = Vec::new();
    let mut source_error = None;
    let mut data = Vec::new();
    loop {
        let frame = match reader.next_raw() {
            None => break,
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                source_error = Some(e.to_string());
                break;
            }
        };
        // Numbered, converted and skipped as a capture source does.
        frames += 1;
        snapped += u64::from(frame.data.len() < frame.orig_len as usize);
        data.clear();
        let link = frame.to_ethernet_into(&mut data);
        if let LinkKind::Foreign(linktype) = link
            && foreign == Foreign::Skip
        {
            match skipped.iter_mut().find(|(l, _)| *l == linktype) {
                Some((_, n)) => *n += 1,
                None => skipped.push((linktype, 1)),
            }
            continue;
        }
        // The filter sees what the hook would (as `--filter` does).
        if let Some(f) = &filter
            && !f
                .run(&data, &cbpf::Meta::default())
                .is_ok_and(|v| v.ret != 0)
        {
            continue;
        }
        let w = shard.worker(buckets, frames, &data);
        writers[w].push(&BucketPacket {
            number: frames,
            timestamp_ns: frame.timestamp_ns,
            wire_len: frame.orig_len,
            link,
            linktype: frame.linktype,
            data: &data,
        });
        per_bucket[w] += 1;
        packets += 1;
    }
    let boundary = reader.boundary();
    let n = buckets as u32;
    let buckets = writers
        .into_iter()
        .enumerate()
        .map(|(b, w)| w.finish(shard, b as u32, n, index, frames))
        .collect();
    let skipped = Skipped(
        skipped
            .into_iter()
            .map(|(l, n)| (capture::describe_linktype(l), n))
            .collect(),
    );
    Ok(Partition {
        index,
        shard,
        buckets,
        boundary,
        frames,
        packets,
        per_bucket,
        skipped,
        snapped,
        source_error,
    })
}
