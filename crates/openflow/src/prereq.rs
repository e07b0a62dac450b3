//! The prerequisites of OpenFlow 1.3's match fields (section 7.2.3.8):
//! a field of a protocol may only be matched when the match pins the
//! fields that say the packet has that protocol.

use crate::decode_error::DecodeError;
use crate::types::{Field, Match, VID_PRESENT, any_reg, error};

const IPV4: u128 = 0x0800;
const IPV6: u128 = 0x86dd;
const ARP: u128 = 0x0806;
const MPLS: u128 = 0x8847;
const MPLS_MC: u128 = 0x8848;
const PBB: u128 = 0x88e7;

/// What a field needs: another field matched exactly on one of some values.
enum Need {
    None,
    Present(Field),
    OneOf(Field, &'static [u128]),
    VlanTagged,
}

fn need(f: Field) -> Need {
    use Field::*;
    match f {
        InPhyPort => Need::Present(InPort),
        VlanPcp => Need::VlanTagged,
        IpDscp | IpEcn | IpProto => Need::OneOf(EthType, &[IPV4, IPV6]),
        Ipv4Src | Ipv4Dst => Need::OneOf(EthType, &[IPV4]),
        TcpSrc | TcpDst | TcpFlags => Need::OneOf(IpProto, &[6]),
        UdpSrc | UdpDst => Need::OneOf(IpProto, &[17]),
        SctpSrc | SctpDst => Need::OneOf(IpProto, &[132]),
        Icmpv4Type | Icmpv4Code => Need::OneOf(IpProto, &[1]),
        ArpOp | ArpSpa | ArpTpa | ArpSha | ArpTha => Need::OneOf(EthType, &[ARP]),
        Ipv6Src | Ipv6Dst | Ipv6Flabel | Ipv6Exthdr => Need::OneOf(EthType, &[IPV6]),
        Icmpv6Type | Icmpv6Code => Need::OneOf(IpProto, &[58]),
        Ipv6NdTarget => Need::OneOf(Icmpv6Type, &[135, 136]),
        Ipv6NdSll => Need::OneOf(Icmpv6Type, &[135]),
        Ipv6NdTll => Need::OneOf(Icmpv6Type, &[136]),
        MplsLabel | MplsTc | MplsBos => Need::OneOf(EthType, &[MPLS, MPLS_MC]),
        PbbIsid => Need::OneOf(EthType, &[PBB]),
        InPort | Metadata | EthDst | EthSrc | EthType | VlanVid | TunnelId | any_reg!() => {
            Need::None
        }
    }
}

impl Match {
    /// The exact value matched on `field` (no mask, or a full one).
    fn exact(&self, field: Field) -> Option<u128> {
        let o = self.get(field)?;
        match o.mask {
            Some(m) if m & field.full_mask() != field.full_mask() => None,
            _ => Some(o.value),
        }
    }

    /// Checks that every field's prerequisites are in the match (a
    /// prerequisite's own ones too, since it is a field of the match).
    pub fn check_prerequisites(&self) -> Result<(), DecodeError> {
        for o in &self.fields {
            let ok = match need(o.field) {
                Need::None => true,
                Need::Present(f) => self.get(f).is_some(),
                Need::OneOf(f, values) => self.exact(f).is_some_and(|v| values.contains(&v)),
                // VLAN_VID != NONE: the match requires a tag.
                Need::VlanTagged => self.get(Field::VlanVid).is_some_and(|v| {
                    let present = u128::from(VID_PRESENT);
                    v.value & present != 0 && v.mask.is_none_or(|m| m & present != 0)
                }),
            };
            if !ok {
                let what = match need(o.field) {
                    Need::None => String::new(),
                    Need::Present(f) => format!("{f} in the match"),
                    Need::OneOf(f, values) => {
                        let v: Vec<String> = values.iter().map(|v| format!("{v:#x}")).collect();
                        format!("{f} = {}", v.join(" or "))
                    }
                    Need::VlanTagged => "vlan_vid with OFPVID_PRESENT".to_string(),
                };
                return Err(DecodeError::new(
                    error::BAD_MATCH,
                    error::BAD_MATCH_BAD_PREREQ,
                    format!("match: {} needs {what}", o.field),
                ));
            }
        }
        Ok(())
    }
}
