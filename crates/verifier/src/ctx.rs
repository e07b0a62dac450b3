//! Which context fields a program may read or write, per program type, and
//! what a read gives: the kernel's `xdp_is_valid_access`,
//! `tc_cls_act_is_valid_access` and `sk_filter_is_valid_access` over
//! `struct xdp_md` and `struct __sk_buff`.

use obj::{ProgramKind, XdpAttach};

use crate::state::Kind;

/// What a context access yields.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Field {
    /// A number (or nothing, for writes).
    Scalar,
    /// A pointer of this kind (`data`, `data_end`, `data_meta`, `sk`).
    Pointer(Kind),
}

/// The context's size in bytes.
pub fn size(kind: &ProgramKind) -> u32 {
    if kind.is_xdp() { XDP_MD } else { SK_BUFF }
}

const XDP_MD: u32 = 24;
const SK_BUFF: u32 = 192;

/// Whether a `size`-byte access at `off` is allowed; `None` when the kernel
/// refuses it (`invalid bpf_context access`).
pub fn access(kind: &ProgramKind, off: i64, size: u32, write: bool) -> Option<Field> {
    match kind {
        ProgramKind::Xdp { attach, .. } => xdp(*attach, off, size, write),
        ProgramKind::SchedCls | ProgramKind::SchedAct => skb(off, size, write, true),
        ProgramKind::SocketFilter => skb(off, size, write, false),
        ProgramKind::Unsupported(_) => None,
    }
}

fn xdp(attach: XdpAttach, off: i64, size: u32, write: bool) -> Option<Field> {
    // data, data_end, data_meta, ingress_ifindex, rx_queue_index,
    // egress_ifindex (devmap programs only): 32-bit reads only.
    if write || size != 4 || !(0..XDP_MD as i64).contains(&off) || off % 4 != 0 {
        return None;
    }
    Some(match off {
        0 => Field::Pointer(Kind::Packet),
        4 => Field::Pointer(Kind::PacketEnd),
        8 => Field::Pointer(Kind::PacketMeta),
        20 if attach != XdpAttach::Devmap => return None,
        _ => Field::Scalar,
    })
}

/// `struct __sk_buff` offsets.
mod skb {
    pub const MARK: i64 = 8;
    pub const QUEUE_MAPPING: i64 = 12;
    pub const PRIORITY: i64 = 32;
    pub const TC_INDEX: i64 = 44;
    pub const CB: i64 = 48;
    pub const CB_END: i64 = 68;
    pub const TC_CLASSID: i64 = 72;
    pub const DATA: i64 = 76;
    pub const DATA_END: i64 = 80;
    pub const FAMILY: i64 = 88;
    pub const LOCAL_PORT_END: i64 = 140;
    pub const DATA_META: i64 = 140;
    pub const FLOW_KEYS: i64 = 144;
    pub const TSTAMP: i64 = 152;
    pub const WIRE_LEN: i64 = 160;
    pub const SK: i64 = 168;
    pub const TSTAMP_TYPE: i64 = 180;
    pub const HWTSTAMP: i64 = 184;
}

/// The field (start, default size) that byte `off` belongs to.
fn skb_field(off: i64) -> (i64, i64) {
    match off {
        skb::CB..skb::CB_END => (skb::CB, 20),
        skb::FLOW_KEYS..skb::TSTAMP => (skb::FLOW_KEYS, 8),
        skb::TSTAMP..skb::WIRE_LEN => (skb::TSTAMP, 8),
        skb::SK..176 => (skb::SK, 8),
        skb::TSTAMP_TYPE => (skb::TSTAMP_TYPE, 1),
        181..skb::HWTSTAMP => (181, 3),
        skb::HWTSTAMP..192 => (skb::HWTSTAMP, 8),
        // remote_ip6 and local_ip6 are arrays of 32-bit words.
        o => (o & !3, 4),
    }
}

fn skb(off: i64, size: u32, write: bool, tc: bool) -> Option<Field> {
    let size_i = size as i64;
    if !(0..SK_BUFF as i64).contains(&off) || off % size_i != 0 {
        return None;
    }
    let (field, _) = skb_field(off);
    if tc {
        if write
            && !matches!(
                field,
                skb::MARK
                    | skb::TC_INDEX
                    | skb::PRIORITY
                    | skb::TC_CLASSID
                    | skb::CB
                    | skb::TSTAMP
                    | skb::QUEUE_MAPPING
            )
        {
            return None;
        }
        if (skb::FAMILY..skb::LOCAL_PORT_END).contains(&field) {
            return None;
        }
        if field == skb::TSTAMP_TYPE {
            return (!write && size == 1).then_some(Field::Scalar);
        }
    } else {
        if matches!(
            field,
            skb::TC_CLASSID
                | skb::DATA
                | skb::DATA_META
                | skb::DATA_END
                | skb::TSTAMP
                | skb::WIRE_LEN
                | skb::HWTSTAMP
        ) || (skb::FAMILY..skb::LOCAL_PORT_END).contains(&field)
        {
            return None;
        }
        if write && field != skb::CB {
            return None;
        }
    }
    // bpf_skb_is_valid_access.
    match field {
        skb::CB => (off + size_i <= skb::CB_END).then_some(Field::Scalar),
        skb::DATA => (size == 4).then_some(Field::Pointer(Kind::Packet)),
        skb::DATA_END => (size == 4).then_some(Field::Pointer(Kind::PacketEnd)),
        skb::DATA_META => (size == 4).then_some(Field::Pointer(Kind::PacketMeta)),
        f if (skb::FAMILY..skb::LOCAL_PORT_END).contains(&f) => {
            (size == 4).then_some(Field::Scalar)
        }
        skb::FLOW_KEYS | skb::TSTAMP_TYPE | 181 => None,
        skb::HWTSTAMP => (!write && size == 8).then_some(Field::Scalar),
        skb::TSTAMP => (size == 8).then_some(Field::Scalar),
        skb::SK => (!write && size == 8).then_some(Field::Pointer(Kind::Sock {
            null: true,
            common: true,
        })),
        _ if write => (size == 4).then_some(Field::Scalar),
        // Narrow reads of a 32-bit field: aligned, inside the field.
        _ => (size <= 4).then_some(Field::Scalar),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdp_fields() {
        let k = ProgramKind::Xdp {
            attach: XdpAttach::Device,
            frags: false,
        };
        assert_eq!(access(&k, 0, 4, false), Some(Field::Pointer(Kind::Packet)));
        assert_eq!(
            access(&k, 4, 4, false),
            Some(Field::Pointer(Kind::PacketEnd))
        );
        assert_eq!(access(&k, 12, 4, false), Some(Field::Scalar));
        assert_eq!(access(&k, 12, 4, true), None);
        assert_eq!(access(&k, 0, 8, false), None);
        assert_eq!(access(&k, 20, 4, false), None);
        assert_eq!(access(&k, 24, 4, false), None);
    }

    #[test]
    fn tc_fields() {
        let k = ProgramKind::SchedCls;
        assert_eq!(access(&k, 8, 4, true), Some(Field::Scalar)); // mark
        assert_eq!(access(&k, 0, 4, true), None); // len
        assert_eq!(access(&k, 0, 2, false), Some(Field::Scalar));
        assert_eq!(access(&k, 76, 4, false), Some(Field::Pointer(Kind::Packet)));
        assert_eq!(access(&k, 76, 2, false), None);
        assert_eq!(access(&k, 48, 8, true), Some(Field::Scalar)); // cb[0..1]
        assert_eq!(access(&k, 64, 8, true), None); // past cb[4]
        assert_eq!(access(&k, 92, 4, false), None); // remote_ip4: not for tc
        assert_eq!(access(&k, 152, 8, true), Some(Field::Scalar)); // tstamp
        assert_eq!(access(&k, 0, 8, false), None);
        let s = ProgramKind::SocketFilter;
        assert_eq!(access(&s, 76, 4, false), None);
        assert_eq!(access(&s, 8, 4, true), None);
        assert_eq!(access(&s, 52, 4, true), Some(Field::Scalar));
    }
}
