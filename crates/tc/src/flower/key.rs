//! The flow key (the kernel's `struct fl_flow_key`, reduced to what a
//! packet here can carry): a fixed-size plain struct of integers with no
//! implicit padding, so a key (and a mask, which is a key too) can be seen
//! as its bytes or its 64-bit words. Masking is a word-wise AND; a rule's
//! key is stored masked, and a packet's key masked by a rule's mask finds
//! it by equality. Multi-byte fields hold their values as numbers (not
//! network byte order): AND and equality do not care.

/// `FLOW_DIS_IS_FRAGMENT` / `FLOW_DIS_FIRST_FRAG` in [`FlowerKey::flags`].
pub const FRAG: u32 = 1;
pub const FIRST_FRAG: u32 = 2;

/// [`FlowerKey::addr_type`]: which addresses the key holds.
pub const ADDR_V4: u8 = 1;
pub const ADDR_V6: u8 = 2;

/// How many MPLS label stack entries a key holds (`FLOW_DIS_MPLS_MAX`).
pub const MPLS_MAX: usize = 7;

/// The key: what flower matches on.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowerKey {
    /// `indev`: the interface the packet came in by.
    pub ifindex: u32,
    /// The dissector's control flags ([`FRAG`], [`FIRST_FRAG`]).
    pub flags: u32,
    /// The EtherType after every VLAN tag (`basic.n_proto`).
    pub n_proto: u16,
    pub ip_proto: u8,
    /// [`ADDR_V4`] or [`ADDR_V6`] when the addresses were read.
    pub addr_type: u8,
    /// The outer tag: TPID, VLAN id and the EtherType after it.
    pub vlan_tpid: u16,
    pub vlan_id: u16,
    pub vlan_eth_type: u16,
    /// The second tag.
    pub cvlan_tpid: u16,
    pub cvlan_id: u16,
    pub cvlan_eth_type: u16,
    pub vlan_prio: u8,
    pub cvlan_prio: u8,
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub ip_tos: u8,
    pub ip_ttl: u8,
    /// IPv4 addresses in the first 4 bytes, IPv6 in all 16.
    pub src_ip: [u8; 16],
    pub dst_ip: [u8; 16],
    pub src_port: u16,
    pub dst_port: u16,
    /// The 12 flag bits of the TCP header.
    pub tcp_flags: u16,
    pub icmp_type: u8,
    pub icmp_code: u8,
    /// Port ranges (`tp_range.tp_min/tp_max`): rules only; a packet's key
    /// has 0 here and its ports in `src_port`/`dst_port`.
    pub dst_port_min: u16,
    pub dst_port_max: u16,
    pub src_port_min: u16,
    pub src_port_max: u16,
    pub arp_sip: [u8; 4],
    pub arp_tip: [u8; 4],
    pub arp_sha: [u8; 6],
    pub arp_tha: [u8; 6],
    pub arp_op: u8,
    /// Bit N: label stack entry N is present (`used_lses`).
    pub mpls_used: u8,
    pub _pad0: [u8; 2],
    /// Label stack entries as on the wire: label << 12 | tc << 9 | bos <<
    /// 8 | ttl.
    pub mpls: [u32; MPLS_MAX],
    pub _pad1: [u8; 4],
}

/// The key's size in bytes and in 64-bit words.
pub const KEY_BYTES: usize = 144;
pub const KEY_WORDS: usize = KEY_BYTES / 8;

// The fields above add up to the size: there is no implicit padding, so
// every byte of a key is a field's byte (what makes the views below sound).
const _: () = assert!(std::mem::size_of::<FlowerKey>() == KEY_BYTES);
const _: () = assert!(
    4 + 4
        + 2
        + 1
        + 1
        + 6 * 2
        + 1
        + 1
        + 6
        + 6
        + 1
        + 1
        + 16
        + 16
        + 2 * 3
        + 1
        + 1
        + 2 * 4
        + 4
        + 4
        + 6
        + 6
        + 1
        + 1
        + 2
        + 4 * MPLS_MAX
        + 4
        == KEY_BYTES
);

impl FlowerKey {
    /// The key's bytes (in the machine's byte order for multi-byte fields).
    pub fn as_bytes(&self) -> &[u8; KEY_BYTES] {
        // SAFETY: FlowerKey is repr(C), exactly KEY_BYTES long with no
        // padding (asserted above), so all its bytes are initialised; u8
        // has alignment 1; the borrow keeps `self` alive and unchanged.
        unsafe { &*(self as *const FlowerKey).cast::<[u8; KEY_BYTES]>() }
    }

    /// The key as 64-bit words (what a tuple-space lookup hashes and
    /// compares).
    pub fn as_words(&self) -> &[u64; KEY_WORDS] {
        // SAFETY: as for `as_bytes`; FlowerKey is aligned to 8 (repr align),
        // and every bit pattern of the bytes is a valid u64.
        unsafe { &*(self as *const FlowerKey).cast::<[u64; KEY_WORDS]>() }
    }

    fn as_words_mut(&mut self) -> &mut [u64; KEY_WORDS] {
        // SAFETY: as for `as_words`; and every bit pattern of the words is
        // a valid FlowerKey (all its fields are integers or integer arrays),
        // so writing any words leaves a valid key.
        unsafe { &mut *(self as *mut FlowerKey).cast::<[u64; KEY_WORDS]>() }
    }

    /// `self & mask`, word by word.
    pub fn masked(&self, mask: &FlowerKey) -> FlowerKey {
        let mut out = *self;
        for (w, m) in out.as_words_mut().iter_mut().zip(mask.as_words()) {
            *w &= m;
        }
        out
    }

    pub fn is_zero(&self) -> bool {
        self.as_words().iter().all(|&w| w == 0)
    }

    /// Whether a rule with this mask checks port ranges (the kernel's
    /// `TCA_FLOWER_MASK_FLAGS_RANGE`).
    pub fn has_range(&self) -> bool {
        self.dst_port_min != 0
            || self.dst_port_max != 0
            || self.src_port_min != 0
            || self.src_port_max != 0
    }
}

/// An MPLS label stack entry's fields: (label, tc, bos, ttl).
pub fn lse_fields(lse: u32) -> (u32, u8, u8, u8) {
    (
        lse >> 12,
        ((lse >> 9) & 7) as u8,
        ((lse >> 8) & 1) as u8,
        (lse & 0xff) as u8,
    )
}

/// The masks of an entry's fields.
pub const LSE_LABEL: u32 = 0xfffff << 12;
pub const LSE_TC: u32 = 7 << 9;
pub const LSE_BOS: u32 = 1 << 8;
pub const LSE_TTL: u32 = 0xff;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_its_words_and_masks_word_by_word() {
        let mut k = FlowerKey {
            n_proto: 0x0800,
            ip_proto: 6,
            dst_port: 80,
            ..FlowerKey::default()
        };
        k.src_ip[..4].copy_from_slice(&[10, 0, 0, 1]);
        let mut m = FlowerKey {
            n_proto: 0xffff,
            ip_proto: 0xff,
            ..FlowerKey::default()
        };
        m.src_ip[..4].copy_from_slice(&[255, 255, 255, 0]);
        let km = k.masked(&m);
        assert_eq!(km.src_ip[..4], [10, 0, 0, 0]);
        assert_eq!((km.n_proto, km.ip_proto, km.dst_port), (0x0800, 6, 0));
        assert_eq!(k.as_bytes().len(), KEY_BYTES);
        assert_eq!(k.as_words().len(), KEY_WORDS);
        assert!(FlowerKey::default().is_zero() && !k.is_zero());
        // The words are the bytes.
        let b = k.as_bytes();
        let w0 = u64::from_ne_bytes(b[..8].try_into().unwrap());
        assert_eq!(k.as_words()[0], w0);
        assert_eq!(lse_fields(5 << 12 | 3 << 9 | 1 << 8 | 64), (5, 3, 1, 64));
    }
}
