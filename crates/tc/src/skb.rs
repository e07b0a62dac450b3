//! The packet as tc sees it. At clsact the kernel has already parsed the
//! Ethernet header and taken an outer VLAN tag out of the frame into the
//! skb's metadata, so `protocol` is the EtherType after that tag and every
//! classifier offset (u32's `at`) counts from the network header. The frame
//! keeps its bytes as they arrived; only the view starts later.

/// 802.1Q and 802.1ad: the tags the kernel takes off at ingress.
const VLAN_TPIDS: [u16; 2] = [0x8100, 0x88a8];

/// A packet and the skb fields classifiers read and actions set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skb {
    /// The frame, from its Ethernet header.
    pub data: Vec<u8>,
    /// Where the network header starts in `data`.
    pub network: usize,
    /// `skb->protocol`: the EtherType after an outer VLAN tag.
    pub protocol: u16,
    /// The outer VLAN tag taken off the frame (TPID, TCI), if any.
    pub vlan: Option<(u16, u16)>,
    pub mark: u32,
    pub priority: u32,
    pub queue_mapping: u16,
    /// The interface the packet arrived on (ingress) or leaves by.
    pub ifindex: u32,
    /// `skb->tc_index`: the minor of the class a filter chose.
    pub tc_index: u16,
    /// The packet's time (its capture time), in nanoseconds: the clock
    /// `police` runs on. 0 unless set ([`Skb::at`]).
    pub tstamp: u64,
    /// The outer tag is held in the skb's metadata, not in the bytes the
    /// kernel counts (`skb_vlan_untag` on receive): so for every packet
    /// the kernel received (at ingress, and what actions sent on from
    /// there), not for a frame a local socket sends at egress.
    pub vlan_in_meta: bool,
}

impl Skb {
    /// The skb of an Ethernet frame arriving on `ifindex`. A frame too
    /// short for its Ethernet header (and tag) has protocol 0 and its
    /// network header at its end: no classifier offset reads into it.
    pub fn from_frame(frame: &[u8], ifindex: u32) -> Skb {
        let mut skb = Skb {
            data: frame.to_vec(),
            ifindex,
            ..Skb::default()
        };
        skb.reparse();
        skb
    }

    /// [`Skb::from_frame`] into a buffer the caller had (its bytes
    /// replaced), so that a stream of packets need not allocate one each.
    pub fn from_frame_in(mut buffer: Vec<u8>, frame: &[u8], ifindex: u32) -> Skb {
        buffer.clear();
        buffer.extend_from_slice(frame);
        let mut skb = Skb {
            data: buffer,
            ifindex,
            ..Skb::default()
        };
        skb.reparse();
        skb
    }

    /// The same skb with its time set to `tstamp` nanoseconds.
    pub fn at(mut self, tstamp: u64) -> Skb {
        self.tstamp = tstamp;
        self
    }

    /// Sets `network`, `protocol` and `vlan` from the frame's bytes (after
    /// an action changed its headers).
    pub fn reparse(&mut self) {
        let be16 = |at: usize| -> Option<u16> {
            self.data
                .get(at..at + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]))
        };
        let (mut network, mut protocol, mut vlan) = (self.data.len(), 0, None);
        if let Some(ty) = be16(12) {
            if VLAN_TPIDS.contains(&ty) {
                if let (Some(tci), Some(inner)) = (be16(14), be16(16)) {
                    (network, protocol, vlan) = (18, inner, Some((ty, tci)));
                }
            } else {
                (network, protocol) = (14, ty);
            }
        }
        self.network = network;
        self.protocol = protocol;
        self.vlan = vlan;
    }

    /// The protocol filters match (the kernel's `skb_protocol(skb,
    /// false)`): the outer tag's TPID for a tagged frame (`protocol
    /// 802.1Q`), else the EtherType. Checked on this kernel: a tagged IPv4
    /// frame passes `protocol ip` filters by and is seen by `protocol
    /// 802.1Q` ones, with offsets from the header after the tag.
    pub fn filter_protocol(&self) -> u16 {
        self.vlan.map_or(self.protocol, |(tpid, _)| tpid)
    }

    /// The frame as a program at the hook sees it: the outer tag taken
    /// out (the kernel keeps it in the skb's metadata).
    pub fn untagged(&self) -> std::borrow::Cow<'_, [u8]> {
        match self.vlan {
            Some(_) if self.data.len() >= 18 => {
                let mut f = self.data[..12].to_vec();
                f.extend_from_slice(&self.data[16..]);
                std::borrow::Cow::Owned(f)
            }
            _ => std::borrow::Cow::Borrowed(&self.data),
        }
    }

    /// Puts back a frame a program changed (as [`Skb::untagged`] gave
    /// it), with the outer tag in its place again.
    pub fn set_untagged(&mut self, frame: &[u8]) {
        match self.vlan {
            Some((tpid, tci)) if frame.len() >= 12 => {
                let mut f = frame[..12].to_vec();
                f.extend_from_slice(&tpid.to_be_bytes());
                f.extend_from_slice(&tci.to_be_bytes());
                f.extend_from_slice(&frame[12..]);
                self.data = f;
            }
            _ => self.data = frame.to_vec(),
        }
        self.reparse();
    }

    /// Bytes of the frame as the kernel counts them at egress
    /// (`skb->len`): without an outer tag held in the metadata.
    pub fn frame_len(&self) -> usize {
        let tag = if self.vlan.is_some() && self.vlan_in_meta {
            4
        } else {
            0
        };
        self.data.len() - tag
    }

    /// Bytes from the network header on (`skb->len` at ingress).
    pub fn len(&self) -> usize {
        self.data.len() - self.network
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `n` bytes at `off` from the network header (negative: into the
    /// link-layer header), or `None` outside the frame. (The kernel reads
    /// whatever lies in the skb's headroom before the frame; sluice counts
    /// such a read as failing, which ends the classification unmatched.)
    pub fn bytes(&self, off: i64, n: usize) -> Option<&[u8]> {
        let start = usize::try_from(self.network as i64 + off).ok()?;
        self.data.get(start..start.checked_add(n)?)
    }

    /// The big-endian 32-bit word at `off` from the network header.
    pub fn word(&self, off: i64) -> Option<u32> {
        self.bytes(off, 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_starts_after_ethernet_and_an_outer_tag() {
        let mut f = vec![0u8; 14 + 20];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        let s = Skb::from_frame(&f, 3);
        assert_eq!(
            (s.network, s.protocol, s.vlan, s.len()),
            (14, 0x800, None, 20)
        );
        assert_eq!(s.word(0), Some(0x4500_0000));
        assert_eq!(s.bytes(-2, 2), Some(&[0x08, 0x00][..]));
        assert_eq!(s.word(17), None);
        assert_eq!(s.bytes(-15, 1), None);
        let mut t = vec![0u8; 18 + 40];
        t[12..18].copy_from_slice(&[0x81, 0x00, 0x20, 0x05, 0x86, 0xdd]);
        let s = Skb::from_frame(&t, 3);
        assert_eq!(
            (s.network, s.protocol, s.vlan),
            (18, 0x86dd, Some((0x8100, 0x2005)))
        );
        assert_eq!(s.filter_protocol(), 0x8100);
        let u = s.untagged().into_owned();
        assert_eq!((u.len(), &u[12..14]), (t.len() - 4, &[0x86, 0xdd][..]));
        let mut s2 = s.clone();
        s2.set_untagged(&u);
        assert_eq!(s2, s);
        let s = Skb::from_frame(&[0; 10], 1);
        assert_eq!((s.protocol, s.len(), s.word(0)), (0, 0, None));
    }
}
