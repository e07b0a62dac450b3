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

/// Whether a `size`-byte read at `off` of a `struct bpf_sock` is allowed:
/// the kernel's `bpf_sock_is_valid_access`, and for a `sock_common` (the
/// `sk` field of `__sk_buff`, `bpf_skc_lookup_tcp`)
/// `bpf_sock_common_is_valid_access`, which refuses `type` to `priority`.
/// Writes are refused before (`cannot write into sock`).
pub fn sock_access(common: bool, off: i64, size: u32) -> bool {
    // struct bpf_sock: bound_dev_if 0, family 4, type 8, protocol 12,
    // mark 16, priority 20, src_ip4 24, src_ip6 28..44, src_port 44,
    // dst_port 48 (16 bits, then 16 of padding), dst_ip4 52,
    // dst_ip6 56..72, state 72, rx_queue_mapping 76; 80 bytes.
    if !(0..80).contains(&off) || !matches!(size, 1 | 2 | 4 | 8) || off % i64::from(size) != 0 {
        return false;
    }
    if common && (8..24).contains(&off) {
        return false;
    }
    match off {
        // family, type, protocol, src_port, state, rx_queue_mapping: narrow
        // reads from the field's start only; the addresses: any aligned
        // narrow read inside them.
        4 | 8 | 12 | 44 | 72 | 76 | 24..44 | 52..72 => size <= 4,
        // dst_port: all 4 bytes, or inside the 16-bit port.
        48 | 49 => size <= 2 || size == 4,
        // The padding after it.
        50 | 51 => false,
        // bound_dev_if, mark, priority and the rest: 32-bit reads only.
        _ => size == 4,
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
        assert_eq!(
            access(&k, 168, 8, false),
            Some(Field::Pointer(Kind::Sock {
                null: true,
                common: true
            }))
        );
        let s = ProgramKind::SocketFilter;
        assert_eq!(access(&s, 76, 4, false), None);
        assert_eq!(access(&s, 8, 4, true), None);
        assert_eq!(access(&s, 52, 4, true), Some(Field::Scalar));
    }

    #[test]
    fn sock_fields() {
        // family: from its start only; a sock_common has no type or mark.
        assert!(sock_access(true, 4, 4));
        assert!(sock_access(true, 4, 1));
        assert!(!sock_access(true, 5, 1));
        assert!(!sock_access(true, 8, 4));
        assert!(sock_access(false, 8, 4));
        assert!(!sock_access(true, 16, 4));
        assert!(sock_access(false, 16, 4));
        assert!(!sock_access(false, 16, 2));
        // Addresses: any aligned narrow read; dst_port and its padding.
        assert!(sock_access(true, 31, 1));
        assert!(!sock_access(true, 32, 8));
        assert!(sock_access(true, 48, 4));
        assert!(sock_access(true, 49, 1));
        assert!(!sock_access(true, 50, 2));
        assert!(sock_access(true, 76, 4));
        assert!(!sock_access(true, 80, 4));
        assert!(!sock_access(true, 0, 8));
    }
}
