//! A flow key is a packet's header fields at fixed bit positions in
//! [`WORDS`] 64-bit words, so that a match is a (mask, value) pair over the
//! words and a lookup masks and hashes whole words. Fields that never occur
//! together share a place, as in Open vSwitch: ARP's addresses sit in the
//! IPv4 addresses' place, ICMP's type and code in the L4 ports', the ND
//! link-layer addresses in ARP's hardware addresses'.

use openflow::Field;

/// Words in a flow key.
pub const WORDS: usize = 16;

/// The header fields of one packet (and its metadata: port, OpenFlow
/// metadata) at the positions [`FieldSlot`] gives.
pub type PackedKey = [u64; WORDS];

/// Words of the key the OpenFlow tables look up: a packet's [`WORDS`], then
/// Open vSwitch's sixteen 32-bit registers, two to a word.
pub const PIPELINE_WORDS: usize = WORDS + 8;

/// A packet's key as the OpenFlow pipeline sees it: its fields, then the
/// registers its actions wrote ([`slot::reg`]). The registers are zero
/// when a packet comes in and are never part of a datapath flow: they are
/// a function of the packet's fields that the translation read.
pub type PipelineKey = [u64; PIPELINE_WORDS];

/// `key` with all registers zero, as a packet enters the pipeline.
pub fn pipeline_key(key: &PackedKey) -> PipelineKey {
    let mut k = [0u64; PIPELINE_WORDS];
    k[..WORDS].copy_from_slice(key);
    k
}

/// The packet's part of a pipeline key (or mask): what a datapath flow
/// holds.
pub fn datapath_part(key: &PipelineKey) -> PackedKey {
    let mut k = [0u64; WORDS];
    k.copy_from_slice(&key[..WORDS]);
    k
}

/// Where a field's bits are: `bits` bits of word `word` from bit `shift`
/// (the field's least significant bit); 128-bit fields take two words,
/// the high half first. The same slot reads a [`PackedKey`] or a
/// [`PipelineKey`] (registers only the latter).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct FieldSlot {
    pub word: usize,
    pub shift: u32,
    pub bits: u32,
}

impl FieldSlot {
    const fn new(word: usize, shift: u32, bits: u32) -> FieldSlot {
        FieldSlot { word, shift, bits }
    }

    #[inline]
    fn low_mask(self) -> u128 {
        if self.bits == 128 {
            u128::MAX
        } else {
            (1u128 << self.bits) - 1
        }
    }

    /// The field's value in `key`.
    #[inline]
    pub fn get<const W: usize>(self, key: &[u64; W]) -> u128 {
        if self.bits > 64 {
            (u128::from(key[self.word]) << 64) | u128::from(key[self.word + 1])
        } else {
            u128::from(key[self.word] >> self.shift) & self.low_mask()
        }
    }

    /// Sets the field in `key` to `value` (bits past the field ignored).
    #[inline]
    pub fn set<const W: usize>(self, key: &mut [u64; W], value: u128) {
        if self.bits > 64 {
            key[self.word] = (value >> 64) as u64;
            key[self.word + 1] = value as u64;
        } else {
            let m = (self.low_mask() as u64) << self.shift;
            key[self.word] = (key[self.word] & !m) | (((value as u64) << self.shift) & m);
        }
    }

    /// Adds `mask` (the field's bits that matter) to a key-wide mask.
    #[inline]
    pub fn or_mask<const W: usize>(self, key_mask: &mut [u64; W], mask: u128) {
        let mask = mask & self.low_mask();
        if self.bits > 64 {
            key_mask[self.word] |= (mask >> 64) as u64;
            key_mask[self.word + 1] |= mask as u64;
        } else {
            key_mask[self.word] |= (mask as u64) << self.shift;
        }
    }

    /// The whole field in a key-wide mask.
    #[inline]
    pub fn or_all<const W: usize>(self, key_mask: &mut [u64; W]) {
        self.or_mask(key_mask, u128::MAX);
    }
}

/// The places of the key's fields.
pub mod slot {
    use super::FieldSlot;

    pub const IN_PORT: FieldSlot = FieldSlot::new(0, 32, 32);
    pub const ETH_TYPE: FieldSlot = FieldSlot::new(0, 16, 16);
    /// The 802.1Q TCI as OpenFlow sees it: PCP in bits 15-13, bit 12 set
    /// when a tag is present (`OFPVID_PRESENT`), the VID in bits 11-0.
    pub const VLAN_TCI: FieldSlot = FieldSlot::new(0, 0, 16);
    /// `vlan_vid`: the present bit and the VID.
    pub const VLAN_VID: FieldSlot = FieldSlot::new(0, 0, 13);
    pub const VLAN_PCP: FieldSlot = FieldSlot::new(0, 13, 3);
    pub const METADATA: FieldSlot = FieldSlot::new(1, 0, 64);
    pub const ETH_DST: FieldSlot = FieldSlot::new(2, 16, 48);
    pub const NW_PROTO: FieldSlot = FieldSlot::new(2, 8, 8);
    /// The IP TOS byte: DSCP in bits 7-2, ECN in bits 1-0.
    pub const NW_TOS: FieldSlot = FieldSlot::new(2, 0, 8);
    pub const IP_DSCP: FieldSlot = FieldSlot::new(2, 2, 6);
    pub const IP_ECN: FieldSlot = FieldSlot::new(2, 0, 2);
    pub const ETH_SRC: FieldSlot = FieldSlot::new(3, 16, 48);
    pub const NW_TTL: FieldSlot = FieldSlot::new(3, 8, 8);
    /// [`crate::flow::FRAG_ANY`] and [`crate::flow::FRAG_LATER`].
    pub const NW_FRAG: FieldSlot = FieldSlot::new(3, 0, 8);
    /// IPv4 source, or ARP's sender protocol address.
    pub const NW_SRC: FieldSlot = FieldSlot::new(4, 32, 32);
    /// IPv4 destination, or ARP's target protocol address.
    pub const NW_DST: FieldSlot = FieldSlot::new(4, 0, 32);
    /// L4 source port, or ICMP type.
    pub const TP_SRC: FieldSlot = FieldSlot::new(5, 48, 16);
    /// L4 destination port, or ICMP code.
    pub const TP_DST: FieldSlot = FieldSlot::new(5, 32, 16);
    pub const ICMP_TYPE: FieldSlot = FieldSlot::new(5, 48, 8);
    pub const ICMP_CODE: FieldSlot = FieldSlot::new(5, 32, 8);
    pub const TCP_FLAGS: FieldSlot = FieldSlot::new(5, 16, 12);
    pub const ARP_OP: FieldSlot = FieldSlot::new(5, 0, 16);
    pub const IPV6_SRC: FieldSlot = FieldSlot::new(6, 0, 128);
    pub const IPV6_DST: FieldSlot = FieldSlot::new(8, 0, 128);
    /// ARP's sender hardware address, or ND's source link-layer address.
    pub const ARP_SHA: FieldSlot = FieldSlot::new(10, 16, 48);
    /// ARP's target hardware address, or ND's target link-layer address.
    pub const ARP_THA: FieldSlot = FieldSlot::new(11, 16, 48);
    pub const ND_TARGET: FieldSlot = FieldSlot::new(12, 0, 128);
    pub const IPV6_FLABEL: FieldSlot = FieldSlot::new(14, 0, 20);
    pub const TUNNEL_ID: FieldSlot = FieldSlot::new(15, 0, 64);

    /// Register `n` (0-15) of a [`PipelineKey`](super::PipelineKey).
    pub const fn reg(n: u8) -> FieldSlot {
        let n = n as usize % 16;
        FieldSlot::new(
            super::WORDS + n / 2,
            if n.is_multiple_of(2) { 32 } else { 0 },
            32,
        )
    }
}

/// Where an OpenFlow match field lives in the key; `None` for fields this
/// switch does not parse (MPLS, PBB, IPv6 extension headers).
pub fn slot_of(field: Field) -> Option<FieldSlot> {
    use Field::*;
    Some(match field {
        InPort | InPhyPort => slot::IN_PORT,
        Metadata => slot::METADATA,
        EthDst => slot::ETH_DST,
        EthSrc => slot::ETH_SRC,
        EthType => slot::ETH_TYPE,
        VlanVid => slot::VLAN_VID,
        VlanPcp => slot::VLAN_PCP,
        IpDscp => slot::IP_DSCP,
        IpEcn => slot::IP_ECN,
        IpProto => slot::NW_PROTO,
        Ipv4Src | ArpSpa => slot::NW_SRC,
        Ipv4Dst | ArpTpa => slot::NW_DST,
        TcpSrc | UdpSrc | SctpSrc => slot::TP_SRC,
        TcpDst | UdpDst | SctpDst => slot::TP_DST,
        Icmpv4Type | Icmpv6Type => slot::ICMP_TYPE,
        Icmpv4Code | Icmpv6Code => slot::ICMP_CODE,
        ArpOp => slot::ARP_OP,
        ArpSha | Ipv6NdSll => slot::ARP_SHA,
        ArpTha | Ipv6NdTll => slot::ARP_THA,
        Ipv6Src => slot::IPV6_SRC,
        Ipv6Dst => slot::IPV6_DST,
        Ipv6Flabel => slot::IPV6_FLABEL,
        Ipv6NdTarget => slot::ND_TARGET,
        TunnelId => slot::TUNNEL_ID,
        TcpFlags => slot::TCP_FLAGS,
        MplsLabel | MplsTc | MplsBos | PbbIsid | Ipv6Exthdr => return None,
        // Not the packet's: see `pipeline_slot_of`.
        Reg0 | Reg1 | Reg2 | Reg3 | Reg4 | Reg5 | Reg6 | Reg7 | Reg8 | Reg9 | Reg10 | Reg11
        | Reg12 | Reg13 | Reg14 | Reg15 => return None,
    })
}

/// Where a field lives in a [`PipelineKey`]: the packet's fields as
/// [`slot_of`] says, and the registers.
pub fn pipeline_slot_of(field: Field) -> Option<FieldSlot> {
    match field.register() {
        Some(n) => Some(slot::reg(n)),
        None => slot_of(field),
    }
}

/// The fields of a [`PipelineKey`] for the classifier's narrowing of a
/// miss (`tss::Tss::with_fields`), as Open vSwitch tracks them: IP
/// addresses and transport ports by prefix (OVS's prefix and port tries),
/// every other field whole (its staged lookup).
pub fn classifier_fields() -> Vec<tss::FieldBits> {
    use slot::*;
    let whole = [
        IN_PORT,
        ETH_TYPE,
        VLAN_TCI,
        METADATA,
        ETH_DST,
        NW_PROTO,
        NW_TOS,
        ETH_SRC,
        NW_TTL,
        NW_FRAG,
        TCP_FLAGS,
        ARP_OP,
        ARP_SHA,
        ARP_THA,
        ND_TARGET,
        IPV6_FLABEL,
        TUNNEL_ID,
    ];
    let prefix = [NW_SRC, NW_DST, TP_SRC, TP_DST, IPV6_SRC, IPV6_DST];
    let regs = (0..16).map(reg);
    let bits = |s: FieldSlot, prefix: bool| {
        // A 128-bit field is two words, the high one first.
        let words = if s.bits > 64 {
            vec![(s.word, !0u64), (s.word + 1, !0u64)]
        } else {
            vec![(s.word, (s.low_mask() as u64) << s.shift)]
        };
        words
            .into_iter()
            .map(move |(word, mask)| tss::FieldBits { word, mask, prefix })
    };
    whole
        .into_iter()
        .chain(regs)
        .flat_map(|s| bits(s, false))
        .chain(prefix.into_iter().flat_map(|s| bits(s, true)))
        .collect()
}

/// `key` with only the bits of `mask`.
#[inline]
pub fn masked(key: &PackedKey, mask: &PackedKey) -> PackedKey {
    let mut m = [0u64; WORDS];
    for i in 0..WORDS {
        m[i] = key[i] & mask[i];
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_sharing_a_word_keep_their_own_bits() {
        let mut k = [0u64; WORDS];
        slot::IN_PORT.set(&mut k, 7);
        slot::ETH_TYPE.set(&mut k, 0x0800);
        slot::VLAN_TCI.set(&mut k, 0xffff);
        slot::VLAN_VID.set(&mut k, 0x1005);
        assert_eq!(slot::IN_PORT.get(&k), 7);
        assert_eq!(slot::ETH_TYPE.get(&k), 0x0800);
        assert_eq!(slot::VLAN_TCI.get(&k), 0xf005);
        assert_eq!(slot::VLAN_PCP.get(&k), 7);
        slot::IPV6_SRC.set(&mut k, 0x0123_4567_89ab_cdef_0011_2233_4455_6677);
        assert_eq!(k[6], 0x0123_4567_89ab_cdef);
        assert_eq!(
            slot::IPV6_SRC.get(&k),
            0x0123_4567_89ab_cdef_0011_2233_4455_6677
        );
        let mut m = [0u64; WORDS];
        slot::IP_DSCP.or_mask(&mut m, 0x3f);
        assert_eq!(m[2], 0xfc);
    }

    #[test]
    fn every_parsed_field_has_a_slot_that_fits_its_width() {
        // Widths from OpenFlow 1.3's OXM table.
        let widths = [
            (Field::InPort, 32),
            (Field::EthDst, 48),
            (Field::VlanVid, 13),
            (Field::IpDscp, 6),
            (Field::Ipv4Src, 32),
            (Field::TcpDst, 16),
            (Field::Icmpv6Code, 8),
            (Field::Ipv6Flabel, 20),
            (Field::Ipv6NdTarget, 128),
            (Field::TcpFlags, 12),
        ];
        for (f, w) in widths {
            assert_eq!(slot_of(f).unwrap().bits, w, "{f:?}");
        }
    }
}
