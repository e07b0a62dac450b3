//! Nicira extensions as Open vSwitch sends them in OpenFlow 1.3: the
//! experimenter actions of vendor `0x00002320` that OVS users write every
//! day (`resubmit`, `load`, `move`, `note`), and the NXM field headers
//! their subfields name. The layouts are OVS's (`nx_action_resubmit`,
//! `nx_action_reg_load`, `nx_action_reg_move`, `nx_action_note`), checked
//! against the bytes `ovs-ofctl` sends (crates/openflow/tests/ovs_capture.rs).

use crate::decode_error::DecodeError;
use crate::nx_types::{Learn, NxAction, SubField};
use crate::types::{Field, error};
use crate::wire::{Put, Reader};

/// Nicira's vendor (experimenter) id.
pub const NX_VENDOR_ID: u32 = 0x0000_2320;

/// `NXAST_*` subtypes.
pub mod nx_subtype {
    pub const RESUBMIT: u16 = 1;
    pub const REG_MOVE: u16 = 6;
    pub const REG_LOAD: u16 = 7;
    pub const NOTE: u16 = 8;
    pub const RESUBMIT_TABLE: u16 = 14;
    pub const LEARN: u16 = 16;
}
use nx_subtype as st;

/// `resubmit`'s table for "this table".
pub const RESUBMIT_THIS_TABLE: u8 = 255;

/// `NXM_OF_IN_PORT`: OpenFlow 1.0's 16-bit port number.
pub const NXM_OF_IN_PORT: u32 = 0x0000_0002;
/// `NXM_OF_VLAN_TCI`: the 802.1Q TCI, its CFI bit set when a tag is there.
pub const NXM_OF_VLAN_TCI: u32 = 0x0000_0802;

/// NXM headers by name: class 0 (`NXM_OF_*`, OpenFlow 1.0's fields) and
/// class 1 (`NXM_NX_*`), the field each reads and the bits it has.
const NXM_FIELDS: &[(&str, u32, Option<Field>, u16)] = &[
    ("NXM_OF_IN_PORT", NXM_OF_IN_PORT, Some(Field::InPort), 16),
    ("NXM_OF_ETH_DST", 0x0000_0206, Some(Field::EthDst), 48),
    ("NXM_OF_ETH_SRC", 0x0000_0406, Some(Field::EthSrc), 48),
    ("NXM_OF_ETH_TYPE", 0x0000_0602, Some(Field::EthType), 16),
    ("NXM_OF_VLAN_TCI", NXM_OF_VLAN_TCI, None, 16),
    ("NXM_OF_IP_TOS", 0x0000_0a01, None, 8),
    ("NXM_OF_IP_PROTO", 0x0000_0c01, Some(Field::IpProto), 8),
    ("NXM_OF_IP_SRC", 0x0000_0e04, Some(Field::Ipv4Src), 32),
    ("NXM_OF_IP_DST", 0x0000_1004, Some(Field::Ipv4Dst), 32),
    ("NXM_OF_TCP_SRC", 0x0000_1202, Some(Field::TcpSrc), 16),
    ("NXM_OF_TCP_DST", 0x0000_1402, Some(Field::TcpDst), 16),
    ("NXM_OF_UDP_SRC", 0x0000_1602, Some(Field::UdpSrc), 16),
    ("NXM_OF_UDP_DST", 0x0000_1802, Some(Field::UdpDst), 16),
    ("NXM_OF_ICMP_TYPE", 0x0000_1a01, Some(Field::Icmpv4Type), 8),
    ("NXM_OF_ICMP_CODE", 0x0000_1c01, Some(Field::Icmpv4Code), 8),
    ("NXM_OF_ARP_OP", 0x0000_1e02, Some(Field::ArpOp), 16),
    ("NXM_OF_ARP_SPA", 0x0000_2004, Some(Field::ArpSpa), 32),
    ("NXM_OF_ARP_TPA", 0x0000_2204, Some(Field::ArpTpa), 32),
    ("NXM_NX_TUN_ID", 0x0001_2008, Some(Field::TunnelId), 64),
    ("NXM_NX_ARP_SHA", 0x0001_2206, Some(Field::ArpSha), 48),
    ("NXM_NX_ARP_THA", 0x0001_2406, Some(Field::ArpTha), 48),
    ("NXM_NX_IPV6_SRC", 0x0001_2610, Some(Field::Ipv6Src), 128),
    ("NXM_NX_IPV6_DST", 0x0001_2810, Some(Field::Ipv6Dst), 128),
    (
        "NXM_NX_ICMPV6_TYPE",
        0x0001_2a01,
        Some(Field::Icmpv6Type),
        8,
    ),
    (
        "NXM_NX_ICMPV6_CODE",
        0x0001_2c01,
        Some(Field::Icmpv6Code),
        8,
    ),
    (
        "NXM_NX_ND_TARGET",
        0x0001_2e10,
        Some(Field::Ipv6NdTarget),
        128,
    ),
    ("NXM_NX_ND_SLL", 0x0001_3006, Some(Field::Ipv6NdSll), 48),
    ("NXM_NX_ND_TLL", 0x0001_3206, Some(Field::Ipv6NdTll), 48),
];

/// The header of `field` as an OXM (class `OFPXMC_OPENFLOW_BASIC`, or
/// class 1 for registers), unmasked.
pub fn oxm_header(field: Field) -> u32 {
    u32::from(field.class()) << 16 | u32::from(field.code()) << 9 | field.bytes() as u32
}

impl SubField {
    /// The whole of `field`.
    pub fn whole(field: Field) -> SubField {
        SubField {
            header: oxm_header(field),
            ofs: 0,
            n_bits: field.width_bits() as u16,
        }
    }

    /// The field the header names, if this switch knows it.
    pub fn field(&self) -> Option<Field> {
        field_of(self.header)
    }

    /// Bits of the field the header names (0: unknown header).
    pub fn field_bits(&self) -> u16 {
        header_bits(self.header)
    }

    /// Whether the bits lie within the field.
    pub fn fits(&self) -> bool {
        self.n_bits > 0
            && u32::from(self.ofs) + u32::from(self.n_bits) <= u32::from(self.field_bits())
    }

    /// The mask of the bits within the field's value.
    pub fn mask(&self) -> u128 {
        let ones = if self.n_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << self.n_bits) - 1
        };
        ones << self.ofs
    }

    /// The header's name as OVS prints it: `NXM_NX_REG0`, `NXM_OF_IN_PORT`,
    /// `OXM_OF_METADATA`; an unknown one as its number.
    pub fn header_name(&self) -> String {
        header_name(self.header)
    }
}

/// The field of an NXM or OXM header (its has-mask bit ignored).
pub fn field_of(header: u32) -> Option<Field> {
    let header = header & !0x100;
    if let Some(&(_, _, f, _)) = NXM_FIELDS.iter().find(|e| e.1 == header) {
        return f;
    }
    let (class, code) = ((header >> 16) as u16, ((header >> 9) & 0x7f) as u8);
    let f = Field::from_code(class, code)?;
    (oxm_header(f) == header).then_some(f)
}

fn header_bits(header: u32) -> u16 {
    let header = header & !0x100;
    if let Some(e) = NXM_FIELDS.iter().find(|e| e.1 == header) {
        return e.3;
    }
    field_of(header).map_or(0, |f| f.width_bits() as u16)
}

/// The name OVS prints for an NXM or OXM header.
pub fn header_name(header: u32) -> String {
    let header = header & !0x100;
    if let Some(e) = NXM_FIELDS.iter().find(|e| e.1 == header) {
        return e.0.to_string();
    }
    let Some(f) = field_of(header) else {
        return format!("0x{header:08x}");
    };
    if let Some(n) = f.register() {
        return format!("NXM_NX_REG{n}");
    }
    // A field OpenFlow 1.0 or Nicira named too, as wide: by that name.
    let same =
        |e: &&(&str, u32, Option<Field>, u16)| e.2 == Some(f) && u32::from(e.3) == f.width_bits();
    match NXM_FIELDS.iter().find(same) {
        Some(e) => e.0.to_string(),
        None => format!("OXM_OF_{}", f.name().to_ascii_uppercase()),
    }
}

/// The header `ovs-ofctl` writes for a field named the OpenFlow way
/// (`reg0[]`, `eth_src[]`): its NXM header where it has one (`in_port`
/// is OpenFlow 1.0's 16-bit one), else its OXM header.
pub fn preferred_header(field: Field) -> u32 {
    NXM_FIELDS
        .iter()
        .find(|e| e.2 == Some(field))
        .map_or_else(|| oxm_header(field), |e| e.1)
}

/// The header a name gives: `NXM_*`/`OXM_OF_*` names, and the short names
/// of registers (`reg0`) OVS also takes in a subfield.
pub fn header_by_name(name: &str) -> Option<u32> {
    if let Some(e) = NXM_FIELDS.iter().find(|e| e.0.eq_ignore_ascii_case(name)) {
        return Some(e.1);
    }
    let upper = name.to_ascii_uppercase();
    let reg = upper
        .strip_prefix("NXM_NX_REG")
        .or_else(|| upper.strip_prefix("REG"))
        .and_then(|n| n.parse::<u8>().ok())
        .and_then(Field::reg);
    if let Some(f) = reg {
        return Some(oxm_header(f));
    }
    let oxm = upper.strip_prefix("OXM_OF_")?.to_ascii_lowercase();
    Field::ALL
        .iter()
        .find(|f| f.name() == oxm)
        .map(|&f| oxm_header(f))
}

fn bad(code: u16, reason: String) -> DecodeError {
    DecodeError::new(error::BAD_ACTION, code, reason)
}

impl NxAction {
    /// The `NXAST_*` subtype.
    pub fn subtype(&self) -> u16 {
        match self {
            NxAction::Resubmit { .. } => st::RESUBMIT_TABLE,
            NxAction::RegLoad { .. } => st::REG_LOAD,
            NxAction::RegMove { .. } => st::REG_MOVE,
            NxAction::Note(_) => st::NOTE,
            NxAction::Learn(_) => st::LEARN,
        }
    }

    /// Appends the action's body after the vendor id (the caller pads the
    /// action to 8 bytes).
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.u16(self.subtype());
        match self {
            NxAction::Resubmit { in_port, table } => {
                out.u16(port_to_16(*in_port));
                out.u8(table.unwrap_or(RESUBMIT_THIS_TABLE));
                out.zeros(3);
            }
            NxAction::RegLoad { dst, value } => {
                out.u16(dst.ofs << 6 | (dst.n_bits.max(1) - 1));
                out.u32(dst.header);
                out.u64(*value);
            }
            NxAction::RegMove { src, dst } => {
                out.u16(src.n_bits);
                out.u16(src.ofs);
                out.u16(dst.ofs);
                out.u32(src.header);
                out.u32(dst.header);
            }
            NxAction::Note(bytes) => out.extend_from_slice(bytes),
            NxAction::Learn(l) => l.encode_body(out),
        }
    }

    /// Reads a Nicira action's body (after the vendor id); `None` for a
    /// subtype this switch does not know (kept as an experimenter action).
    pub(crate) fn decode_body(b: &mut Reader, at: usize) -> Result<Option<NxAction>, DecodeError> {
        let subtype = b.u16("Nicira subtype")?;
        let a = match subtype {
            st::RESUBMIT | st::RESUBMIT_TABLE => {
                let in_port = port_from_16(b.u16("resubmit in_port")?);
                let table = b.u8("resubmit table")?;
                let table = (subtype == st::RESUBMIT_TABLE && table != RESUBMIT_THIS_TABLE)
                    .then_some(table);
                NxAction::Resubmit { in_port, table }
            }
            st::REG_LOAD => {
                let ofs_nbits = b.u16("reg_load ofs_nbits")?;
                let dst = SubField {
                    header: b.u32("reg_load dst")?,
                    ofs: ofs_nbits >> 6,
                    n_bits: (ofs_nbits & 0x3f) + 1,
                };
                let value = b.u64("reg_load value")?;
                check(&dst, "load destination", at)?;
                if dst.n_bits < 64 && value >> dst.n_bits != 0 {
                    return Err(bad(
                        error::BAD_ACTION_BAD_ARGUMENT,
                        format!(
                            "action at byte {at}: load value 0x{value:x} is wider than {} bits",
                            dst.n_bits
                        ),
                    ));
                }
                NxAction::RegLoad { dst, value }
            }
            st::REG_MOVE => {
                let n_bits = b.u16("reg_move n_bits")?;
                let src_ofs = b.u16("reg_move src_ofs")?;
                let dst_ofs = b.u16("reg_move dst_ofs")?;
                let src = SubField {
                    header: b.u32("reg_move src")?,
                    ofs: src_ofs,
                    n_bits,
                };
                let dst = SubField {
                    header: b.u32("reg_move dst")?,
                    ofs: dst_ofs,
                    n_bits,
                };
                check(&src, "move source", at)?;
                check(&dst, "move destination", at)?;
                NxAction::RegMove { src, dst }
            }
            st::NOTE => NxAction::Note(b.rest().to_vec()),
            st::LEARN => NxAction::Learn(Box::new(Learn::decode_body(b, at)?)),
            _ => return Ok(None),
        };
        Ok(Some(a))
    }
}

/// A subfield must name a field this switch knows, within its bits (the
/// action at byte `at` is refused otherwise).
pub(crate) fn check(s: &SubField, what: &str, at: usize) -> Result<(), DecodeError> {
    if s.field_bits() == 0 {
        return Err(bad(
            error::BAD_ACTION_BAD_ARGUMENT,
            format!(
                "action at byte {at}: {what} names unknown field header 0x{:08x}",
                s.header
            ),
        ));
    }
    if !s.fits() {
        return Err(bad(
            error::BAD_ACTION_BAD_ARGUMENT,
            format!(
                "action at byte {at}: {what} bits {}..{} are outside {} ({} bits)",
                s.ofs,
                u32::from(s.ofs) + u32::from(s.n_bits),
                s.header_name(),
                s.field_bits()
            ),
        ));
    }
    Ok(())
}

/// A 32-bit port as OpenFlow 1.0's 16 bits: the reserved ports
/// (0xfffffff8..) map to 0xfff8..
fn port_to_16(p: u32) -> u16 {
    if p >= 0xffff_ff00 {
        (p & 0xffff) as u16 | 0xff00
    } else {
        p as u16
    }
}

fn port_from_16(p: u16) -> u32 {
    if p >= 0xff00 {
        0xffff_0000 | u32::from(p)
    } else {
        u32::from(p)
    }
}
