//! 802.11 frames as Ethernet: data frames carrying LLC/SNAP become the
//! Ethernet frame a bridge (an access point) would make of them. The radio
//! headers in front of them (radiotap, Prism, AVS) are stripped.

/// Radiotap `Flags` bits.
const RADIOTAP_FCS_AT_END: u8 = 0x10;
const RADIOTAP_DATAPAD: u8 = 0x20;
/// The Prism monitoring header's fixed length.
const PRISM_HEADER: usize = 144;
/// AVS capture header magic numbers (version 1 and 2), big-endian.
const AVS_MAGIC: [u32; 2] = [0x8021_1001, 0x8021_1002];

/// An 802.11 frame and what its radio header says of it.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Dot11<'a> {
    pub frame: &'a [u8],
    /// The frame ends in a 4-byte FCS.
    pub fcs: bool,
    /// Padding between the 802.11 header and the body, to 4 bytes.
    pub datapad: bool,
}

impl<'a> Dot11<'a> {
    pub fn plain(frame: &'a [u8]) -> Dot11<'a> {
        Dot11 {
            frame,
            fcs: false,
            datapad: false,
        }
    }

    /// LINKTYPE_IEEE802_11_RADIOTAP: a little-endian header of `it_len`
    /// bytes; its `Flags` field (bit 1 of the first presence word, after
    /// the 8-byte-aligned TSFT of bit 0) says whether an FCS ends the frame
    /// and whether the body is padded.
    pub fn radiotap(data: &'a [u8]) -> Option<Dot11<'a>> {
        let le16 = |i: usize| Some(u16::from_le_bytes(data.get(i..i + 2)?.try_into().ok()?));
        let le32 = |i: usize| Some(u32::from_le_bytes(data.get(i..i + 4)?.try_into().ok()?));
        if *data.first()? != 0 {
            return None;
        }
        let len = usize::from(le16(2)?);
        if len < 8 || len > data.len() {
            return None;
        }
        let first = le32(4)?;
        // Presence words go on while bit 31 is set.
        let mut at = 4;
        loop {
            let word = le32(at)?;
            at += 4;
            if at > len {
                return None;
            }
            if word & (1 << 31) == 0 {
                break;
            }
        }
        if first & 1 != 0 {
            at = at.next_multiple_of(8) + 8;
        }
        let flags = if first & 2 != 0 && at < len {
            data[at]
        } else {
            0
        };
        Some(Dot11 {
            frame: &data[len..],
            fcs: flags & RADIOTAP_FCS_AT_END != 0,
            datapad: flags & RADIOTAP_DATAPAD != 0,
        })
    }

    /// LINKTYPE_IEEE802_11_AVS: a big-endian header whose length is its
    /// second word.
    pub fn avs(data: &'a [u8]) -> Option<Dot11<'a>> {
        let be32 = |i: usize| Some(u32::from_be_bytes(data.get(i..i + 4)?.try_into().ok()?));
        if !AVS_MAGIC.contains(&be32(0)?) {
            return None;
        }
        let len = be32(4)? as usize;
        Some(Dot11::plain(data.get(len..)?))
    }

    /// LINKTYPE_IEEE802_11_PRISM: a 144-byte header, or an AVS header
    /// (which some drivers give under this link type; its magic tells).
    pub fn prism(data: &'a [u8]) -> Option<Dot11<'a>> {
        Dot11::avs(data).or_else(|| Some(Dot11::plain(data.get(PRISM_HEADER..)?)))
    }

    /// Appends the frame as Ethernet to `out` if it is a data frame
    /// carrying LLC/SNAP (RFC 1042 or 802.1H encapsulation): destination
    /// and source from the address fields ToDS and FromDS select, the
    /// EtherType from the SNAP header. Management, control, null and
    /// protected (encrypted) frames, fragments and A-MSDUs are not
    /// converted (false, nothing appended).
    pub fn to_ethernet_into(self, out: &mut Vec<u8>) -> bool {
        let mut f = self.frame;
        if self.fcs {
            let Some(n) = f.len().checked_sub(4) else {
                return false;
            };
            f = &f[..n];
        }
        if f.len() < 24 {
            return false;
        }
        let (fc0, fc1) = (f[0], f[1]);
        let (version, kind, subtype) = (fc0 & 3, (fc0 >> 2) & 3, fc0 >> 4);
        // Data frames (type 2) with a body (subtypes without bit 2).
        if version != 0 || kind != 2 || subtype & 0x4 != 0 {
            return false;
        }
        let (to_ds, from_ds) = (fc1 & 0x01 != 0, fc1 & 0x02 != 0);
        let (more_frags, protected, order) = (fc1 & 0x04 != 0, fc1 & 0x40 != 0, fc1 & 0x80 != 0);
        let fragment = f[22] & 0x0f;
        if protected || more_frags || fragment != 0 {
            return false;
        }
        let mut header = if to_ds && from_ds { 30 } else { 24 };
        if subtype & 0x8 != 0 {
            // QoS Control; bit 7 of its first byte: the body is an A-MSDU.
            let Some(&qos) = f.get(header) else {
                return false;
            };
            if qos & 0x80 != 0 {
                return false;
            }
            header += 2;
            // In QoS data frames the Order bit says an HT Control follows.
            if order {
                header += 4;
            }
        }
        if self.datapad {
            header = header.next_multiple_of(4);
        }
        let Some(body) = f.get(header..) else {
            return false;
        };
        let snap = body.get(..8);
        let ethertype = match snap {
            Some([0xaa, 0xaa, 0x03, 0, 0, 0 | 0xf8, hi, lo]) => [*hi, *lo],
            _ => return false,
        };
        let addr = |i: usize| &f[4 + 6 * (i - 1)..4 + 6 * i];
        let a4 = &f[24..30.min(f.len())];
        let (dst, src) = match (to_ds, from_ds) {
            (false, false) => (addr(1), addr(2)),
            (false, true) => (addr(1), addr(3)),
            (true, false) => (addr(3), addr(2)),
            (true, true) => (addr(3), a4),
        };
        let payload = &body[8..];
        out.reserve(14 + payload.len());
        out.extend_from_slice(dst);
        out.extend_from_slice(src);
        out.extend_from_slice(&ethertype);
        out.extend_from_slice(payload);
        true
    }
}
