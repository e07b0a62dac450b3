//! A batch: up to [`BATCH`] packets in one reused byte buffer, with their
//! metadata. Sources fill batches, hooks run them, nothing is allocated per
//! packet once the buffers have grown to their working size.

use capture::LinkKind;

/// Packets per batch, as the kernel's NAPI budget and AF_XDP rings batch.
pub const BATCH: usize = 64;

/// What a source knows of one packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    /// Position in the source, from 1 (reports name packets by it).
    pub seq: u64,
    pub timestamp_ns: u64,
    /// How the captured frame became these bytes.
    pub link: LinkKind,
    start: u32,
    len: u32,
}

/// Up to [`BATCH`] packets.
#[derive(Default)]
pub struct Batch {
    bytes: Vec<u8>,
    packets: Vec<PacketInfo>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch {
            bytes: Vec::with_capacity(BATCH * 2048),
            packets: Vec::with_capacity(BATCH),
        }
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.packets.clear();
    }

    /// Keeps the packets `keep` takes (their bytes stay in the buffer until
    /// the batch is cleared).
    pub fn retain(&mut self, mut keep: impl FnMut(&PacketInfo, &[u8]) -> bool) {
        let bytes = &self.bytes;
        self.packets.retain(|p| {
            let s = p.start as usize;
            keep(p, &bytes[s..s + p.len as usize])
        });
    }

    /// Keeps the first `n` packets.
    pub fn truncate(&mut self, n: usize) {
        if let Some(p) = self.packets.get(n) {
            self.bytes.truncate(p.start as usize);
            self.packets.truncate(n);
        }
    }

    /// Adds `base` to every packet's sequence number (a byte range's
    /// packets, numbered from 1 by its reader, placed among the others').
    pub(crate) fn offset_seqs(&mut self, base: u64) {
        for p in &mut self.packets {
            p.seq += base;
        }
    }

    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.packets.len() >= BATCH
    }

    /// Appends a packet whose bytes a writer puts at the end of the
    /// buffer; `write` returns false to withdraw it (nothing is kept).
    #[inline]
    pub fn push_with(
        &mut self,
        seq: u64,
        timestamp_ns: u64,
        link: LinkKind,
        write: impl FnOnce(&mut Vec<u8>) -> bool,
    ) -> bool {
        let start = self.bytes.len();
        if !write(&mut self.bytes) {
            self.bytes.truncate(start);
            return false;
        }
        let len = self.bytes.len() - start;
        self.packets.push(PacketInfo {
            seq,
            timestamp_ns,
            link,
            start: start as u32,
            len: len as u32,
        });
        true
    }

    /// Sets the timestamp and link kind of the last packet (for writers
    /// that learn them while writing the bytes).
    pub(crate) fn set_last(&mut self, timestamp_ns: u64, link: LinkKind) {
        if let Some(p) = self.packets.last_mut() {
            p.timestamp_ns = timestamp_ns;
            p.link = link;
        }
    }

    /// Appends a copy of `data`, whole: a packet longer than 64 KiB goes
    /// to an XDP program as its linear part and fragments.
    pub fn push(&mut self, seq: u64, timestamp_ns: u64, link: LinkKind, data: &[u8]) {
        self.push_with(seq, timestamp_ns, link, |buf| {
            buf.extend_from_slice(data);
            true
        });
    }

    /// The packets with their bytes, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&PacketInfo, &[u8])> {
        self.packets.iter().map(|p| {
            let s = p.start as usize;
            (p, &self.bytes[s..s + p.len as usize])
        })
    }

    /// Packet `i`'s bytes.
    #[inline]
    pub fn data(&self, i: usize) -> &[u8] {
        let p = &self.packets[i];
        &self.bytes[p.start as usize..(p.start + p.len) as usize]
    }

    #[inline]
    pub fn info(&self, i: usize) -> &PacketInfo {
        &self.packets[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_keep_their_bytes_and_order() {
        let mut b = Batch::new();
        b.push(1, 10, LinkKind::Ethernet, &[1, 2, 3]);
        assert!(!b.push_with(2, 20, LinkKind::Ethernet, |v| {
            v.push(9);
            false
        }));
        b.push(3, 30, LinkKind::Converted, &[4]);
        let got: Vec<_> = b.iter().map(|(p, d)| (p.seq, d.to_vec())).collect();
        assert_eq!(got, vec![(1, vec![1, 2, 3]), (3, vec![4])]);
        assert_eq!(b.info(1).link, LinkKind::Converted);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn long_packets_are_kept_whole() {
        let mut b = Batch::new();
        let long: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        b.push(1, 0, LinkKind::Ethernet, &long);
        assert!(b.push_with(2, 0, LinkKind::Ethernet, |v| {
            v.extend_from_slice(&long);
            true
        }));
        assert_eq!(b.data(0), &long[..]);
        assert_eq!(b.data(1), &long[..]);
    }
}
