//! The TABLE_FEATURES reply (OpenFlow 1.3, 7.3.5.5): what each table
//! matches, which instructions and actions it takes, and where it may go
//! next. `ovs-ofctl` reads it before sending a flow-mod. Written here,
//! byte by byte, since only this switch ever sends one.

use openflow::{Field, HEADER_LEN, MULTIPART_MORE, VERSION, msg_type, multipart_type};

use crate::flow::slot_of;
use crate::ofproto::N_TABLES;

/// Tables per reply part.
const PER_PART: u8 = 16;

/// `ofp_instruction_type`s this switch takes.
const INSTRUCTIONS: [u16; 5] = [1, 2, 3, 4, 5];
/// `ofp_action_type`s: output, push/pop VLAN, set_queue, group, set and
/// decrement the IP TTL, set_field.
const ACTIONS: [u16; 8] = [0, 17, 18, 21, 22, 23, 24, 25];

/// `ofp_table_feature_prop_type`.
mod prop {
    pub const INSTRUCTIONS: u16 = 0;
    pub const NEXT_TABLES: u16 = 2;
    pub const WRITE_ACTIONS: u16 = 4;
    pub const APPLY_ACTIONS: u16 = 6;
    pub const MATCH: u16 = 8;
    pub const WILDCARDS: u16 = 10;
    pub const WRITE_SETFIELD: u16 = 12;
    pub const APPLY_SETFIELD: u16 = 14;
}

/// OXM headers of the basic-class fields the key holds.
fn oxm_headers(maskable_only: bool, settable: bool) -> Vec<u32> {
    Field::ALL
        .iter()
        .filter(|f| f.class() == openflow::OXM_CLASS_BASIC && slot_of(**f).is_some())
        .filter(|f| !maskable_only || f.maskable())
        .filter(|f| {
            !settable
                || !matches!(
                    f,
                    Field::InPort
                        | Field::InPhyPort
                        | Field::TunnelId
                        | Field::EthType
                        | Field::IpProto
                )
        })
        .map(|f| {
            let has_mask = u32::from(maskable_only);
            let len = f.bytes() as u32 * (1 + has_mask);
            (u32::from(f.class()) << 16) | (u32::from(f.code()) << 9) | (has_mask << 8) | len
        })
        .collect()
}

fn property(out: &mut Vec<u8>, kind: u16, content: &[u8]) {
    let len = 4 + content.len();
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(content);
    out.resize(out.len() + (8 - len % 8) % 8, 0);
}

fn headers16(list: &[u16]) -> Vec<u8> {
    list.iter()
        .flat_map(|t| [t.to_be_bytes(), 4u16.to_be_bytes()].concat())
        .collect()
}

fn table(t: u8) -> Vec<u8> {
    let mut b = vec![0u8; 64];
    b[2] = t;
    // The name stays empty: tables are known by number.
    b[40..48].copy_from_slice(&u64::MAX.to_be_bytes());
    b[48..56].copy_from_slice(&u64::MAX.to_be_bytes());
    b[60..64].copy_from_slice(&1_000_000u32.to_be_bytes());
    let oxm = |list: Vec<u32>| {
        list.iter()
            .flat_map(|h| h.to_be_bytes())
            .collect::<Vec<u8>>()
    };
    property(&mut b, prop::INSTRUCTIONS, &headers16(&INSTRUCTIONS));
    let next: Vec<u8> = (t + 1..N_TABLES).collect();
    property(&mut b, prop::NEXT_TABLES, &next);
    property(&mut b, prop::WRITE_ACTIONS, &headers16(&ACTIONS));
    property(&mut b, prop::APPLY_ACTIONS, &headers16(&ACTIONS));
    property(&mut b, prop::MATCH, &oxm(oxm_headers(false, false)));
    property(&mut b, prop::WILDCARDS, &oxm(oxm_headers(false, false)));
    property(&mut b, prop::WRITE_SETFIELD, &oxm(oxm_headers(false, true)));
    property(&mut b, prop::APPLY_SETFIELD, &oxm(oxm_headers(false, true)));
    let len = b.len() as u16;
    b[0..2].copy_from_slice(&len.to_be_bytes());
    b
}

/// The reply's messages for request `xid`.
pub fn reply(xid: u32) -> Vec<Vec<u8>> {
    (0..N_TABLES)
        .step_by(usize::from(PER_PART))
        .map(|first| {
            let last = (first + PER_PART).min(N_TABLES);
            let mut m = vec![VERSION, msg_type::MULTIPART_REPLY, 0, 0];
            m.extend_from_slice(&xid.to_be_bytes());
            m.extend_from_slice(&multipart_type::TABLE_FEATURES.to_be_bytes());
            let flags = if last < N_TABLES { MULTIPART_MORE } else { 0 };
            m.extend_from_slice(&flags.to_be_bytes());
            m.extend_from_slice(&[0; 4]);
            for t in first..last {
                m.extend_from_slice(&table(t));
            }
            let len = m.len() as u16;
            m[2..4].copy_from_slice(&len.to_be_bytes());
            debug_assert!(m.len() > HEADER_LEN);
            m
        })
        .collect()
}
