//! A bucket of a flow-affine partition as bytes: the packets of one
//! range that shard to one worker, in source order, each with its global
//! order (the range's place in the plan, the packet's number in the
//! range), timestamp, wire length, link kind and the bytes the program
//! sees. [`Partition`](crate::Partition) writes them; a
//! [`BucketRunSpec`](crate::BucketRunSpec) reads them back
//! ([`Bucket::parse`]), every field exactly as written.
//!
//! The layout (little-endian): the magic `SLUICEBK`, a version byte, the
//! sharding (0 symmetric, 1 directional), the bucket and the buckets
//! (u32), the range's plan index (u32), the frames the range read (u64,
//! skipped ones included: the packet numbers of the ranges after it start
//! past them), the packets (u64); then per packet its number in the range
//! (u64), timestamp in ns (u64), wire length (u32), link kind (u8: 0
//! Ethernet, 1 converted, 2 without an Ethernet form), the capture's
//! LINKTYPE_* (u32), the length of its bytes (u32) and the bytes.

use capture::LinkKind;
use pipeline::Sharding;

const MAGIC: &[u8; 8] = b"SLUICEBK";
const VERSION: u8 = 1;
/// Magic, version, sharding, bucket, buckets, index, frames, packets.
const HEADER: usize = 8 + 1 + 1 + 4 + 4 + 4 + 8 + 8;
/// Number, timestamp, wire length, link kind, link type, length.
const RECORD: usize = 8 + 8 + 4 + 1 + 4 + 4;

/// Why bytes are not a bucket, or buckets do not go together.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// Not the bytes [`Partition`](crate::Partition) wrote.
    #[error("blob {blob}: not a bucket of a flow-affine partition ({why})")]
    NotABucket { blob: usize, why: String },
    /// A bucket of another worker, worker count or sharding than the run's.
    #[error(
        "blob {blob}: bucket {bucket} of {buckets} ({shard}), but the run is bucket {want} of {want_buckets} ({want_shard})"
    )]
    Mismatch {
        blob: usize,
        bucket: u32,
        buckets: u32,
        shard: &'static str,
        want: u32,
        want_buckets: u32,
        want_shard: &'static str,
    },
    /// Buckets of ranges given out of the plan's order.
    #[error(
        "blob {blob}: range {index} after range {before}: give one blob per range, in plan order"
    )]
    Order {
        blob: usize,
        index: u32,
        before: u32,
    },
    /// A worker count of 0, or past what a bucket records.
    #[error("buckets must be between 1 and 4294967295, not {0}")]
    Buckets(usize),
    /// A bucket at or past the worker count.
    #[error("bucket {bucket} is not one of {buckets} (0 to {})", buckets.saturating_sub(1))]
    Bucket { bucket: usize, buckets: usize },
    /// Round robin goes by packet numbers across the whole plan, which a
    /// range alone does not know.
    #[error("flow-affine runs shard by flow (symmetric or directional), not round-robin")]
    RoundRobin,
    /// A source that is not a capture file or a range of one.
    #[error("a flow-affine partition reads a capture file or a range of one, not {0}")]
    Source(String),
}

/// The name `--shard` gives a sharding.
pub(crate) fn shard_name(shard: Sharding) -> &'static str {
    match shard {
        Sharding::Symmetric => "symmetric",
        Sharding::Directional => "directional",
        Sharding::RoundRobin => "round-robin",
    }
}

fn shard_code(shard: Sharding) -> u8 {
    match shard {
        Sharding::Symmetric => 0,
        Sharding::Directional => 1,
        Sharding::RoundRobin => 2,
    }
}

fn shard_of(code: u8) -> Option<Sharding> {
    match code {
        0 => Some(Sharding::Symmetric),
        1 => Some(Sharding::Directional),
        _ => None,
    }
}

/// One packet of a bucket, as the range's reader gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketPacket<'a> {
    /// The packet's number in its range, from 1 (frames skipped for want
    /// of an Ethernet form counted, as a capture numbers them).
    pub number: u64,
    pub timestamp_ns: u64,
    /// Its length on the wire (the captured bytes may be fewer).
    pub wire_len: u32,
    /// How the captured frame became [`BucketPacket::data`].
    pub link: LinkKind,
    /// The capture's LINKTYPE_* for the record.
    pub linktype: u32,
    /// The bytes the program sees.
    pub data: &'a [u8],
}

/// A bucket's bytes being written.
pub(crate) struct BucketWriter {
    bytes: Vec<u8>,
    packets: u64,
}

impl BucketWriter {
    pub(crate) fn new() -> BucketWriter {
        BucketWriter {
            bytes: vec![0; HEADER],
            packets: 0,
        }
    }

    pub(crate) fn push(&mut self, p: &BucketPacket<'_>) {
        let b = &mut self.bytes;
        b.extend_from_slice(&p.number.to_le_bytes());
        b.extend_from_slice(&p.timestamp_ns.to_le_bytes());
        b.extend_from_slice(&p.wire_len.to_le_bytes());
        let (kind, linktype) = match p.link {
            LinkKind::Ethernet => (0u8, p.linktype),
            LinkKind::Converted => (1, p.linktype),
            LinkKind::Foreign(l) => (2, l),
        };
        b.push(kind);
        b.extend_from_slice(&linktype.to_le_bytes());
        b.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        b.extend_from_slice(p.data);
        self.packets += 1;
    }

    /// The bytes, with the header: bucket `bucket` of `buckets` by
    /// `shard`, of the range at `index` that read `frames` frames.
    pub(crate) fn finish(
        mut self,
        shard: Sharding,
        bucket: u32,
        buckets: u32,
        index: u32,
        frames: u64,
    ) -> Vec<u8> {
        let mut h = Vec::with_capacity(HEADER);
        h.extend_from_slice(MAGIC);
        h.push(VERSION);
        h.push(shard_code(shard));
        h.extend_from_slice(&bucket.to_le_bytes());
        h.extend_from_slice(&buckets.to_le_bytes());
        h.extend_from_slice(&index.to_le_bytes());
        h.extend_from_slice(&frames.to_le_bytes());
        h.extend_from_slice(&self.packets.to_le_bytes());
        self.bytes[..HEADER].copy_from_slice(&h);
        self.bytes
    }
}

/// A bucket read back: its header, and its packets checked to lie within
/// the bytes.
#[derive(Clone, Debug)]
pub struct Bucket<'a> {
    pub shard: Sharding,
    pub bucket: u32,
    pub buckets: u32,
    /// The range's place in the plan.
    pub index: u32,
    /// The frames the range read.
    pub frames: u64,
    /// The packets of the bucket.
    pub packets: u64,
    body: &'a [u8],
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl<'a> Bucket<'a> {
    /// Reads the bytes of a bucket; `blob` numbers it in errors.
    pub fn parse(bytes: &'a [u8], blob: usize) -> Result<Bucket<'a>, PartitionError> {
        let bad = |why: String| PartitionError::NotABucket { blob, why };
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(bad("no SLUICEBK header".into()));
        }
        if bytes[8] != VERSION {
            return Err(bad(format!(
                "version {} (this sluice reads {VERSION})",
                bytes[8]
            )));
        }
        let shard = shard_of(bytes[9]).ok_or_else(|| bad(format!("sharding {}", bytes[9])))?;
        let bucket = Bucket {
            shard,
            bucket: u32_at(bytes, 10),
            buckets: u32_at(bytes, 14),
            index: u32_at(bytes, 18),
            frames: u64_at(bytes, 22),
            packets: u64_at(bytes, 30),
            body: &bytes[HEADER..],
        };
        if bucket.buckets == 0 || bucket.bucket >= bucket.buckets {
            return Err(bad(format!(
                "bucket {} of {}",
                bucket.bucket, bucket.buckets
            )));
        }
        // Every record within the bytes, as many as the header says.
        let (mut at, mut n) = (0usize, 0u64);
        while at < bucket.body.len() {
            let rest = &bucket.body[at..];
            if rest.len() < RECORD {
                return Err(bad(format!("packet {} cut short", n + 1)));
            }
            if rest[20] > 2 {
                return Err(bad(format!("packet {}: link kind {}", n + 1, rest[20])));
            }
            let len = u32_at(rest, 25) as usize;
            if rest.len() - RECORD < len {
                return Err(bad(format!("packet {} cut short", n + 1)));
            }
            at += RECORD + len;
            n += 1;
        }
        if n != bucket.packets {
            return Err(bad(format!(
                "{n} packets, the header says {}",
                bucket.packets
            )));
        }
        Ok(bucket)
    }

    /// The packets, in source order.
    pub fn iter(&self) -> impl Iterator<Item = BucketPacket<'a>> + 'a {
        let body = self.body;
        let mut at = 0usize;
        std::iter::from_fn(move || {
            let r = body.get(at..at + RECORD)?;
            let len = u32_at(r, 25) as usize;
            let linktype = u32_at(r, 21);
            let link = match r[20] {
                0 => LinkKind::Ethernet,
                1 => LinkKind::Converted,
                _ => LinkKind::Foreign(linktype),
            };
            let data = &body[at + RECORD..at + RECORD + len];
            at += RECORD + len;
            Some(BucketPacket {
                number: u64_at(r, 0),
                timestamp_ns: u64_at(r, 8),
                wire_len: u32_at(r, 16),
                link,
                linktype,
                data,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_survives_and_damage_is_named() {
        let mut w = BucketWriter::new();
        let packets = [
            BucketPacket {
                number: 3,
                timestamp_ns: u64::MAX - 7,
                wire_len: 1514,
                link: LinkKind::Ethernet,
                linktype: 1,
                data: &[1, 2, 3],
            },
            BucketPacket {
                number: 9,
                timestamp_ns: 0,
                wire_len: 40,
                link: LinkKind::Converted,
                linktype: 113,
                data: &[],
            },
            BucketPacket {
                number: 10,
                timestamp_ns: 5,
                wire_len: 7,
                link: LinkKind::Foreign(105),
                linktype: 105,
                data: &[9; 7],
            },
        ];
        for p in &packets {
            w.push(p);
        }
        let bytes = w.finish(Sharding::Directional, 2, 4, 7, 11);
        let b = Bucket::parse(&bytes, 0).unwrap();
        assert_eq!(
            (b.shard, b.bucket, b.buckets),
            (Sharding::Directional, 2, 4)
        );
        assert_eq!((b.index, b.frames, b.packets), (7, 11, 3));
        assert_eq!(b.iter().collect::<Vec<_>>(), packets);
        for cut in [0, 10, HEADER + 5, bytes.len() - 1] {
            let e = Bucket::parse(&bytes[..cut], 4).unwrap_err();
            assert!(e.to_string().starts_with("blob 4: not a bucket"), "{e}");
        }
        let mut other = bytes.clone();
        other[8] = 99;
        let e = Bucket::parse(&other, 0).unwrap_err().to_string();
        assert!(e.contains("version 99"), "{e}");
    }
}
