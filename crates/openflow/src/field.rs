//! What the specification says of each OXM field: its number, width and
//! whether it may carry a mask.

use crate::types::{Field, any_reg};

/// `OFPXMC_OPENFLOW_BASIC`.
pub const OXM_CLASS_BASIC: u16 = 0x8000;
/// `OFPXMC_EXPERIMENTER`.
pub const OXM_CLASS_EXPERIMENTER: u16 = 0xffff;
/// The ONF's experimenter id, under which OVS sends TCP flags in 1.3.
pub const ONF_EXPERIMENTER: u32 = 0x4f4e_4600;
/// `NXM_NX`: Open vSwitch's own fields (its registers, here).
pub const OXM_CLASS_NXM1: u16 = 0x0001;

/// The registers in order.
const REGS: [Field; 16] = {
    use Field::*;
    [
        Reg0, Reg1, Reg2, Reg3, Reg4, Reg5, Reg6, Reg7, Reg8, Reg9, Reg10, Reg11, Reg12, Reg13,
        Reg14, Reg15,
    ]
};

impl Field {
    /// The `oxm_field` number (42 for TCP flags, under the ONF's
    /// experimenter class).
    pub fn code(self) -> u8 {
        match (self, self.register()) {
            (_, Some(n)) => n,
            (Field::TcpFlags, _) => 42,
            // The variants before TcpFlags are declared in oxm_field order.
            (f, None) => f as u8,
        }
    }

    /// The `oxm_class`.
    pub fn class(self) -> u16 {
        match (self, self.register()) {
            (_, Some(_)) => OXM_CLASS_NXM1,
            (Field::TcpFlags, _) => OXM_CLASS_EXPERIMENTER,
            _ => OXM_CLASS_BASIC,
        }
    }

    /// Register `n` (`reg0`..`reg15`).
    pub fn reg(n: u8) -> Option<Field> {
        REGS.get(usize::from(n)).copied()
    }

    /// The register's number, for a register.
    pub fn register(self) -> Option<u8> {
        REGS.iter().position(|&r| r == self).map(|n| n as u8)
    }

    /// The field of class `class` and number `code`, if it is one of ours
    /// (for the experimenter class, with the ONF's experimenter id).
    pub fn from_code(class: u16, code: u8) -> Option<Field> {
        match class {
            OXM_CLASS_BASIC => Field::ALL
                .get(usize::from(code))
                .copied()
                .filter(|f| f.class() == OXM_CLASS_BASIC),
            OXM_CLASS_EXPERIMENTER if code == 42 => Some(Field::TcpFlags),
            OXM_CLASS_NXM1 => Field::reg(code),
            _ => None,
        }
    }

    /// Bytes of the value on the wire.
    pub fn bytes(self) -> usize {
        use Field::*;
        match self {
            InPort
            | InPhyPort
            | Ipv4Src
            | Ipv4Dst
            | ArpSpa
            | ArpTpa
            | Ipv6Flabel
            | MplsLabel
            | any_reg!() => 4,
            Metadata | TunnelId => 8,
            EthDst | EthSrc | ArpSha | ArpTha | Ipv6NdSll | Ipv6NdTll => 6,
            EthType | VlanVid | TcpSrc | TcpDst | UdpSrc | UdpDst | SctpSrc | SctpDst | ArpOp
            | Ipv6Exthdr | TcpFlags => 2,
            VlanPcp | IpDscp | IpEcn | IpProto | Icmpv4Type | Icmpv4Code | Icmpv6Type
            | Icmpv6Code | MplsTc | MplsBos => 1,
            Ipv6Src | Ipv6Dst | Ipv6NdTarget => 16,
            PbbIsid => 3,
        }
    }

    /// Bits of the value that count (the rest must be zero).
    pub fn width_bits(self) -> u32 {
        use Field::*;
        match self {
            VlanVid => 13,
            VlanPcp | MplsTc => 3,
            IpDscp => 6,
            IpEcn => 2,
            MplsBos => 1,
            Ipv6Flabel | MplsLabel => 20,
            PbbIsid => 24,
            Ipv6Exthdr => 9,
            TcpFlags => 12,
            f => 8 * f.bytes() as u32,
        }
    }

    /// Whether a match may give a mask for the field: the specification's
    /// list, plus the transport ports and the neighbour-discovery fields,
    /// which Open vSwitch masks too (`ovs-ofctl` writes `tp_dst=0x50/0xfff0`
    /// and the switch takes it on the wire), so that what the parser reads
    /// the codec carries.
    pub fn maskable(self) -> bool {
        use Field::*;
        self.register().is_some()
            || matches!(
                self,
                Metadata
                    | TcpSrc
                    | TcpDst
                    | UdpSrc
                    | UdpDst
                    | SctpSrc
                    | SctpDst
                    | Ipv6NdTarget
                    | Ipv6NdSll
                    | Ipv6NdTll
                    | EthDst
                    | EthSrc
                    | VlanVid
                    | Ipv4Src
                    | Ipv4Dst
                    | ArpSpa
                    | ArpTpa
                    | ArpSha
                    | ArpTha
                    | Ipv6Src
                    | Ipv6Dst
                    | Ipv6Flabel
                    | PbbIsid
                    | TunnelId
                    | Ipv6Exthdr
                    | TcpFlags
            )
    }

    /// All ones over the field's width.
    pub fn full_mask(self) -> u128 {
        u128::MAX >> (128 - self.width_bits())
    }

    /// The specification's name without `OFPXMT_OFB_`, in lower case.
    pub fn name(self) -> &'static str {
        use Field::*;
        const REG_NAMES: [&str; 16] = [
            "reg0", "reg1", "reg2", "reg3", "reg4", "reg5", "reg6", "reg7", "reg8", "reg9",
            "reg10", "reg11", "reg12", "reg13", "reg14", "reg15",
        ];
        if let Some(n) = self.register() {
            return REG_NAMES[usize::from(n)];
        }
        match self {
            InPort => "in_port",
            InPhyPort => "in_phy_port",
            Metadata => "metadata",
            EthDst => "eth_dst",
            EthSrc => "eth_src",
            EthType => "eth_type",
            VlanVid => "vlan_vid",
            VlanPcp => "vlan_pcp",
            IpDscp => "ip_dscp",
            IpEcn => "ip_ecn",
            IpProto => "ip_proto",
            Ipv4Src => "ipv4_src",
            Ipv4Dst => "ipv4_dst",
            TcpSrc => "tcp_src",
            TcpDst => "tcp_dst",
            UdpSrc => "udp_src",
            UdpDst => "udp_dst",
            SctpSrc => "sctp_src",
            SctpDst => "sctp_dst",
            Icmpv4Type => "icmpv4_type",
            Icmpv4Code => "icmpv4_code",
            ArpOp => "arp_op",
            ArpSpa => "arp_spa",
            ArpTpa => "arp_tpa",
            ArpSha => "arp_sha",
            ArpTha => "arp_tha",
            Ipv6Src => "ipv6_src",
            Ipv6Dst => "ipv6_dst",
            Ipv6Flabel => "ipv6_flabel",
            Icmpv6Type => "icmpv6_type",
            Icmpv6Code => "icmpv6_code",
            Ipv6NdTarget => "ipv6_nd_target",
            Ipv6NdSll => "ipv6_nd_sll",
            Ipv6NdTll => "ipv6_nd_tll",
            MplsLabel => "mpls_label",
            MplsTc => "mpls_tc",
            MplsBos => "mpls_bos",
            PbbIsid => "pbb_isid",
            TunnelId => "tunnel_id",
            Ipv6Exthdr => "ipv6_exthdr",
            TcpFlags => "tcp_flags",
            any_reg!() => "reg",
        }
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
