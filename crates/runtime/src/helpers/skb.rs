//! Socket-buffer helpers of tc and socket-filter programs.

use maps::Errno;
use vm::{HelperError, HelperFn};

use super::packet::{move_bytes, sync, zero_bytes};
use super::{Ctx, Ret, err, read};
use crate::Env;

pub const TC: &[(&str, HelperFn<Env>)] = &[
    ("skb_load_bytes", skb_load_bytes),
    ("skb_store_bytes", skb_store_bytes),
    ("skb_pull_data", skb_pull_data),
    ("skb_change_tail", skb_change_tail),
    ("skb_change_head", skb_change_head),
    ("skb_adjust_room", skb_adjust_room),
    ("skb_change_proto", skb_change_proto),
    ("get_hash_recalc", get_hash_recalc),
    ("set_hash", set_hash),
    ("get_cgroup_classid", zero),
    ("get_route_realm", zero),
    ("skb_change_type", skb_change_type),
    ("skb_ecn_set_ce", skb_ecn_set_ce),
    ("skb_load_bytes_relative", skb_load_bytes_relative),
    ("set_hash_invalid", set_hash_invalid),
    ("csum_update", csum_update),
    ("csum_level", csum_level),
];

pub const SOCKET: &[(&str, HelperFn<Env>)] = &[
    ("skb_load_bytes", skb_load_bytes),
    ("get_socket_cookie", zero),
    ("get_socket_uid", zero),
];

const F_RECOMPUTE_CSUM: u64 = 1;
const F_INVALIDATE_HASH: u64 = 2;

fn zero(_: &mut Ctx) -> Ret {
    Ok(0)
}

fn range(c: &Ctx, off: u64, len: u64) -> Option<u64> {
    let p = c.env.packet;
    let end = off.checked_add(len)?;
    (off <= 0xffff && end <= p.len()).then_some(p.data + off)
}

fn skb_load_bytes(c: &mut Ctx) -> Ret {
    let (off, to, len) = (c.args[1] & 0xffff_ffff, c.args[2], c.args[3] & 0xffff_ffff);
    let Some(at) = range(c, off, len) else {
        // The kernel clears the destination on failure.
        c.mem.write(to, len as usize)?.fill(0);
        return Ok(err(Errno::EFAULT));
    };
    let bytes = read(c, at, len as usize)?;
    c.mem.write(to, len as usize)?.copy_from_slice(&bytes);
    Ok(0)
}

fn skb_store_bytes(c: &mut Ctx) -> Ret {
    let (off, from, len, flags) = (
        c.args[1] & 0xffff_ffff,
        c.args[2],
        c.args[3] & 0xffff_ffff,
        c.args[4],
    );
    if flags & !(F_RECOMPUTE_CSUM | F_INVALIDATE_HASH) != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let Some(at) = range(c, off, len) else {
        return Ok(err(Errno::EFAULT));
    };
    let bytes = read(c, from, len as usize)?;
    c.mem.write(at, len as usize)?.copy_from_slice(&bytes);
    Ok(0)
}

/// The whole packet is linear here, so there is nothing to pull; lengths
/// beyond the packet fail as in the kernel.
fn skb_pull_data(c: &mut Ctx) -> Ret {
    let len = c.args[1] & 0xffff_ffff;
    if len > c.env.packet.len() {
        return Ok(err(Errno::ENOMEM));
    }
    sync(c)?;
    Ok(0)
}

fn skb_change_tail(c: &mut Ctx) -> Ret {
    let (new_len, flags) = (c.args[1] & 0xffff_ffff, c.args[2]);
    let p = c.env.packet;
    if flags != 0 || new_len < 14 || p.data + new_len > p.hard_end {
        return Ok(err(Errno::EINVAL));
    }
    let end = p.data + new_len;
    if end > p.data_end {
        zero_bytes(c, p.data_end, end - p.data_end)?;
    }
    c.env.packet.data_end = end;
    sync(c)?;
    Ok(0)
}

/// `bpf_skb_change_head(skb, len, flags)`: `len` zeroed bytes in front.
fn skb_change_head(c: &mut Ctx) -> Ret {
    let (len, flags) = (c.args[1] & 0xffff_ffff, c.args[2]);
    let p = c.env.packet;
    if flags != 0 || p.data < p.hard_start + len {
        return Ok(err(Errno::EINVAL));
    }
    let data = p.data - len;
    zero_bytes(c, data, len)?;
    c.env.packet.data = data;
    c.env.packet.meta = data;
    sync(c)?;
    Ok(0)
}

const ADJ_ROOM_NET: u64 = 0;
const ADJ_ROOM_MAC: u64 = 1;
/// `-ENOTSUPP`, the kernel-internal errno the skb helpers return.
const ENOTSUPP: Errno = Errno(524);
const ETH_HLEN: u64 = 14;
const F_ADJ_ROOM_FIXED_GSO: u64 = 1;
const F_ADJ_ROOM_ENCAP_L3_IPV4: u64 = 1 << 1;
const F_ADJ_ROOM_ENCAP_L3_IPV6: u64 = 1 << 2;
const F_ADJ_ROOM_ENCAP_L4_GRE: u64 = 1 << 3;
const F_ADJ_ROOM_ENCAP_L4_UDP: u64 = 1 << 4;
const F_ADJ_ROOM_NO_CSUM_RESET: u64 = 1 << 5;
const F_ADJ_ROOM_ENCAP_L2_ETH: u64 = 1 << 6;
const F_ADJ_ROOM_DECAP_L3_IPV4: u64 = 1 << 7;
const F_ADJ_ROOM_DECAP_L3_IPV6: u64 = 1 << 8;
/// `BPF_F_ADJ_ROOM_ENCAP_L2(len)`: the inner MAC header length.
const F_ADJ_ROOM_ENCAP_L2_MASK: u64 = 0xff << 56;
const DECAP_L3: u64 = F_ADJ_ROOM_DECAP_L3_IPV4 | F_ADJ_ROOM_DECAP_L3_IPV6;
const ENCAP_L3: u64 = F_ADJ_ROOM_ENCAP_L3_IPV4 | F_ADJ_ROOM_ENCAP_L3_IPV6;
/// Largest skb the helpers grow to (`SKB_MAX_ALLOC` on 4 KiB pages).
const SKB_MAX_LEN: u64 = 16064;

/// `skb->protocol` as the context holds it (a __be16, host-loaded).
fn skb_protocol(c: &Ctx) -> Result<u16, HelperError> {
    let b = read(c, c.env.packet.ctx + 16, 4)?;
    Ok(u16::from_le_bytes([b[0], b[1]]).swap_bytes())
}

fn set_skb_protocol(c: &mut Ctx, proto: u16) -> Result<(), HelperError> {
    let p = c.env.packet;
    let v = u32::from(proto.swap_bytes());
    c.mem
        .helper_write(p.ctx + 16, 4)?
        .copy_from_slice(&v.to_le_bytes());
    Ok(())
}

/// `sizeof(struct iphdr)` or `sizeof(struct ipv6hdr)` by protocol.
fn net_base_len(proto: u16) -> u64 {
    if proto == 0x86dd { 40 } else { 20 }
}

/// Inserts `diff` zeroed bytes at `off` (or removes `-diff` bytes there),
/// moving the headers in front of `off`.
fn room_at(c: &mut Ctx, off: u64, diff: i64) -> Result<u64, HelperError> {
    let p = c.env.packet;
    if diff >= 0 {
        let d = diff as u64;
        if p.data < p.hard_start + d {
            return Ok(err(Errno::ENOMEM));
        }
        move_bytes(c, p.data, p.data - d, off)?;
        zero_bytes(c, p.data - d + off, d)?;
        c.env.packet.data -= d;
    } else {
        let d = diff.unsigned_abs();
        if off + d > p.len() {
            return Ok(err(Errno::ENOMEM));
        }
        move_bytes(c, p.data, p.data + d, off)?;
        c.env.packet.data += d;
    }
    c.env.packet.meta = c.env.packet.data;
    sync(c)?;
    Ok(0)
}

/// `bpf_skb_adjust_room(skb, len_diff, mode, flags)`: grows or shrinks room
/// after the MAC header (`MAC` mode) or after the base network header
/// (`NET`: 20 bytes for IPv4, 40 for IPv6, options or not), with the
/// kernel's checks and return codes.
fn skb_adjust_room(c: &mut Ctx) -> Ret {
    let (diff, mode, flags) = (c.args[1] as i32 as i64, c.args[2], c.args[3]);
    let allowed = F_ADJ_ROOM_FIXED_GSO
        | ENCAP_L3
        | F_ADJ_ROOM_ENCAP_L4_GRE
        | F_ADJ_ROOM_ENCAP_L4_UDP
        | F_ADJ_ROOM_NO_CSUM_RESET
        | F_ADJ_ROOM_ENCAP_L2_ETH
        | F_ADJ_ROOM_ENCAP_L2_MASK
        | DECAP_L3;
    if flags & !allowed != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let abs = diff.unsigned_abs();
    if abs > 0xfff {
        return Ok(err(Errno::EFAULT));
    }
    let proto = skb_protocol(c)?;
    if proto != 0x0800 && proto != 0x86dd {
        return Ok(err(ENOTSUPP));
    }
    let shrink = diff < 0;
    if (shrink && flags & DECAP_L3 == DECAP_L3) || (!shrink && flags & DECAP_L3 != 0) {
        return Ok(err(Errno::EINVAL));
    }
    let off = match mode {
        ADJ_ROOM_MAC => ETH_HLEN,
        ADJ_ROOM_NET => ETH_HLEN + net_base_len(proto),
        _ => return Ok(err(ENOTSUPP)),
    };
    let len_min = match (shrink, flags & DECAP_L3) {
        (true, F_ADJ_ROOM_DECAP_L3_IPV6) => 40,
        (true, F_ADJ_ROOM_DECAP_L3_IPV4) => 20,
        _ => net_base_len(proto),
    };
    let len = c.env.packet.len();
    let len_cur = len.saturating_sub(ETH_HLEN);
    if (shrink && (abs >= len_cur || len_cur - abs < len_min))
        || (!shrink && len + abs > SKB_MAX_LEN)
    {
        return Ok(err(ENOTSUPP));
    }
    if shrink {
        if flags & !(F_ADJ_ROOM_FIXED_GSO | DECAP_L3 | F_ADJ_ROOM_NO_CSUM_RESET) != 0 {
            return Ok(err(Errno::EINVAL));
        }
    } else {
        let l4 = flags & (F_ADJ_ROOM_ENCAP_L4_GRE | F_ADJ_ROOM_ENCAP_L4_UDP);
        let encap = flags & (ENCAP_L3 | l4 | F_ADJ_ROOM_ENCAP_L2_ETH | F_ADJ_ROOM_ENCAP_L2_MASK);
        if flags & DECAP_L3 != 0
            || flags & ENCAP_L3 == ENCAP_L3
            || l4 == F_ADJ_ROOM_ENCAP_L4_GRE | F_ADJ_ROOM_ENCAP_L4_UDP
            || (encap != 0 && flags & ENCAP_L3 == 0)
        {
            return Ok(err(Errno::EINVAL));
        }
    }
    let r = room_at(c, off, diff)?;
    if r != 0 {
        return Ok(r);
    }
    // skb->protocol follows the new outer header.
    let outer = match (proto, flags) {
        (0x0800, f) if f & (F_ADJ_ROOM_ENCAP_L3_IPV6 | F_ADJ_ROOM_DECAP_L3_IPV6) != 0 => 0x86dd,
        (0x86dd, f) if f & (F_ADJ_ROOM_ENCAP_L3_IPV4 | F_ADJ_ROOM_DECAP_L3_IPV4) != 0 => 0x0800,
        _ => proto,
    };
    if outer != proto {
        set_skb_protocol(c, outer)?;
    }
    Ok(0)
}

/// `bpf_skb_change_proto(skb, proto, flags)`: between IPv4 and IPv6, room
/// for the larger header is made or removed after the MAC header (the
/// program rewrites the headers themselves).
fn skb_change_proto(c: &mut Ctx) -> Ret {
    // `proto` is a __be16 (bpf_htons(ETH_P_IPV6)).
    let (proto, flags) = ((c.args[1] as u16).swap_bytes(), c.args[2]);
    if flags != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let current = skb_protocol(c)?;
    let diff: i64 = match (current, proto) {
        (0x0800, 0x86dd) => 20,
        (0x86dd, 0x0800) => -20,
        // The same protocol included: there is nothing to translate.
        _ => return Ok(err(ENOTSUPP)),
    };
    let r = room_at(c, ETH_HLEN, diff)?;
    if r != 0 {
        return Ok(r);
    }
    set_skb_protocol(c, proto)?;
    Ok(0)
}

/// A deterministic flow hash of the packet's addresses and ports (the
/// kernel's differs per boot: its random seed makes it not comparable).
fn get_hash_recalc(c: &mut Ctx) -> Ret {
    c.env.unreproducible.push("bpf_get_hash_recalc");
    let p = c.env.packet;
    let n = p.len().min(54) as usize;
    let head = read(c, p.data, n)?;
    let mut h: u32 = 0x811c_9dc5;
    for &b in head.get(26..n).unwrap_or(&[]) {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    c.env.last_hash = h;
    c.mem
        .helper_write(p.ctx + 68, 4)?
        .copy_from_slice(&h.to_le_bytes());
    Ok(u64::from(h))
}

fn set_hash(c: &mut Ctx) -> Ret {
    let h = c.args[1] as u32;
    c.env.last_hash = h;
    let p = c.env.packet;
    c.mem
        .helper_write(p.ctx + 68, 4)?
        .copy_from_slice(&h.to_le_bytes());
    Ok(0)
}

/// `bpf_skb_change_type(skb, type)`: `skb->pkt_type` between
/// `PACKET_HOST` (0) and `PACKET_OTHERHOST` (3).
fn skb_change_type(c: &mut Ctx) -> Ret {
    let p = c.env.packet;
    let current = u32::from_le_bytes(read(c, p.ctx + 4, 4)?.try_into().expect("4 bytes"));
    let t = c.args[1] as u32;
    if current > 3 || t > 3 {
        return Ok(err(Errno::EINVAL));
    }
    c.mem
        .helper_write(p.ctx + 4, 4)?
        .copy_from_slice(&t.to_le_bytes());
    Ok(0)
}

/// The network header's offset: tc programs see the frame from its
/// Ethernet header, and the kernel puts the network header right after it
/// (`eth_type_trans`), VLAN tags in the frame or not.
const NETWORK_HEADER: u64 = 14;

/// The network protocol as the kernel's `skb_protocol(skb, true)` gives
/// it: `skb->protocol`, or for a VLAN protocol the type after the tags
/// carried in the frame (`vlan_get_protocol`).
fn network_protocol(c: &Ctx) -> Result<u16, HelperError> {
    let mut proto = skb_protocol(c)?;
    let p = c.env.packet;
    let mut at = 12;
    // The kernel follows at most 8 nested tags.
    for _ in 0..8 {
        if !matches!(proto, 0x8100 | 0x88a8) {
            break;
        }
        if at + 4 + 2 > p.len() {
            return Ok(0);
        }
        let b = read(c, p.data + at + 4, 2)?;
        proto = u16::from_be_bytes([b[0], b[1]]);
        at += 4;
    }
    Ok(proto)
}

/// `bpf_skb_ecn_set_ce(skb)`: the kernel's `INET_ECN_set_ce`. An IPv4
/// packet whose ECN field is ECT(0) or ECT(1) gets CE, its header checksum
/// updated (one's complement, as `IP_ECN_set_ce` adds the difference); an
/// IPv6 packet with ECT(0), ECT(1) or CE gets CE. Returns 1 when the packet
/// now carries CE (an IPv4 packet that already did counts too, as in the
/// kernel), else 0: not ECN-capable, not IP, or a header that does not fit.
fn skb_ecn_set_ce(c: &mut Ctx) -> Ret {
    const ECN_MASK: u8 = 3;
    const CE: u8 = 3;
    let p = c.env.packet;
    let at = p.data + NETWORK_HEADER;
    match network_protocol(c)? {
        0x0800 if NETWORK_HEADER + 20 <= p.len() => {
            let h = read(c, at, 12)?;
            let tos = h[1];
            let ecn = tos.wrapping_add(1) & ECN_MASK;
            if ecn & 2 == 0 {
                // Not ECT (01 after the add) gives 0, CE (00) gives 1.
                return Ok(u64::from(ecn == 0));
            }
            // ECT(1) -> CE adds 2 to the header's second 16-bit word,
            // ECT(0) -> CE adds 1: the checksum takes the one's complement
            // of that (0xfffd or 0xfffe), with the end-around carry.
            let check = u32::from(u16::from_be_bytes([h[10], h[11]]));
            let sum = check + 0xfffb + u32::from(ecn);
            let check = ((sum & 0xffff) + (sum >> 16)) as u16;
            let w = c.mem.write(at, 12)?;
            w[1] = tos | CE;
            w[10..12].copy_from_slice(&check.to_be_bytes());
            Ok(1)
        }
        0x86dd if NETWORK_HEADER + 40 <= p.len() => {
            let h = read(c, at, 4)?;
            let first = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            // The traffic class sits in bits 20..28; ECN is its low two bits.
            if (first >> 20) as u8 & ECN_MASK == 0 {
                return Ok(0);
            }
            let to = first | (u32::from(CE) << 20);
            c.mem.write(at, 4)?.copy_from_slice(&to.to_be_bytes());
            Ok(1)
        }
        _ => Ok(0),
    }
}

/// `bpf_skb_load_bytes_relative(skb, off, to, len, start)`: like
/// `bpf_skb_load_bytes` from the MAC header (`BPF_HDR_START_MAC`, 0: the
/// frame's start) or the network header (`BPF_HDR_START_NET`, 1); offsets
/// above 0xffff, other starts and reads past the end clear `to` and give
/// `-EFAULT`.
fn skb_load_bytes_relative(c: &mut Ctx) -> Ret {
    let (off, to, len, start) = (
        c.args[1] & 0xffff_ffff,
        c.args[2],
        c.args[3] & 0xffff_ffff,
        c.args[4] & 0xffff_ffff,
    );
    let p = c.env.packet;
    let base = match start {
        0 => Some(0),
        1 => Some(NETWORK_HEADER),
        _ => None,
    };
    let from = base
        .filter(|_| off <= 0xffff)
        .map(|b| b + off)
        .filter(|&at| at + len <= p.len());
    let Some(at) = from else {
        c.mem.write(to, len as usize)?.fill(0);
        return Ok(err(Errno::EFAULT));
    };
    let bytes = read(c, p.data + at, len as usize)?;
    c.mem.write(to, len as usize)?.copy_from_slice(&bytes);
    Ok(0)
}

/// `bpf_set_hash_invalid(skb)`: clears the flow hash (the kernel's
/// `skb_clear_hash`); the next `bpf_get_hash_recalc` computes it again.
fn set_hash_invalid(c: &mut Ctx) -> Ret {
    c.env.last_hash = 0;
    let p = c.env.packet;
    c.mem.helper_write(p.ctx + 68, 4)?.fill(0);
    Ok(0)
}

/// `bpf_csum_update(skb, csum)`: adds to `skb->csum` of a
/// `CHECKSUM_COMPLETE` packet; replayed packets carry no checksum state
/// (`CHECKSUM_NONE`, as the kernel's test run builds them), so
/// `-ENOTSUPP`.
fn csum_update(_: &mut Ctx) -> Ret {
    Ok((-524i64) as u64)
}

/// `bpf_csum_level(skb, level)`: the `CHECKSUM_UNNECESSARY` level, which
/// a packet starts without (`CHECKSUM_NONE`). `BPF_CSUM_LEVEL_QUERY` (0)
/// gives the level or `-EACCES`; `_INC` (1) makes a packet without one
/// level 0 and raises it up to 3; `_DEC` (2) lowers it, level 0 going back
/// to none; `_RESET` (3) drops it; other levels are `-EINVAL`.
fn csum_level(c: &mut Ctx) -> Ret {
    const MAX_LEVEL: u8 = 3;
    let state = &mut c.env.csum_unnecessary;
    match c.args[1] {
        0 => {
            return Ok(match *state {
                Some(level) => u64::from(level),
                None => err(Errno::EACCES),
            });
        }
        1 => {
            *state = Some(state.map_or(0, |l| (l + 1).min(MAX_LEVEL)));
        }
        2 => {
            *state = match *state {
                Some(0) | None => None,
                Some(l) => Some(l - 1),
            };
        }
        3 => *state = None,
        _ => return Ok(err(Errno::EINVAL)),
    }
    Ok(0)
}
