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

/// `bpf_skb_adjust_room(skb, len_diff, mode, flags)`: grows or shrinks room
/// after the MAC header (`MAC` mode) or after the network header (`NET`).
fn skb_adjust_room(c: &mut Ctx) -> Ret {
    let (diff, mode) = (c.args[1] as i32 as i64, c.args[2]);
    let p = c.env.packet;
    let at_off = match mode {
        ADJ_ROOM_MAC => 14,
        ADJ_ROOM_NET => {
            14 + network_header_len(c)?.ok_or(HelperError("adjust_room: not IPv4/IPv6".into()))?
        }
        _ => return Ok(err(Errno::EINVAL)),
    };
    if at_off > p.len() {
        return Ok(err(Errno::EINVAL));
    }
    if diff >= 0 {
        let d = diff as u64;
        if p.data < p.hard_start + d {
            return Ok(err(Errno::ENOMEM));
        }
        // Move the headers before the room forward, and zero the room.
        move_bytes(c, p.data, p.data - d, at_off)?;
        zero_bytes(c, p.data - d + at_off, d)?;
        c.env.packet.data -= d;
    } else {
        let d = diff.unsigned_abs();
        if at_off + d > p.len() || p.len() - d < 14 {
            return Ok(err(Errno::EINVAL));
        }
        move_bytes(c, p.data, p.data + d, at_off)?;
        c.env.packet.data += d;
    }
    c.env.packet.meta = c.env.packet.data;
    sync(c)?;
    Ok(0)
}

/// Length of the IPv4/IPv6 header after an Ethernet header.
fn network_header_len(c: &Ctx) -> Result<Option<u64>, HelperError> {
    let p = c.env.packet;
    if p.len() < 15 {
        return Ok(None);
    }
    let eth = read(c, p.data + 12, 3)?;
    Ok(match [eth[0], eth[1]] {
        [0x08, 0x00] => Some(u64::from(eth[2] & 0xf) * 4),
        [0x86, 0xdd] => Some(40),
        _ => None,
    })
}

/// `bpf_skb_change_proto(skb, proto, flags)`: between IPv4 and IPv6, the
/// room for the larger header is made or removed after the MAC header.
fn skb_change_proto(c: &mut Ctx) -> Ret {
    // `proto` is a __be16 (bpf_htons(ETH_P_IPV6)).
    let (proto, flags) = ((c.args[1] as u16).swap_bytes(), c.args[2]);
    if flags != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let current = {
        let p = c.env.packet;
        let b = read(c, p.data + 12, 2)?;
        u16::from_be_bytes([b[0], b[1]])
    };
    let diff: i64 = match (current, proto) {
        (0x0800, 0x86dd) => 20,
        (0x86dd, 0x0800) => -20,
        (a, b) if a == b => 0,
        _ => return Ok(err(Errno::EOPNOTSUPP)),
    };
    if diff != 0 {
        c.args = [c.args[0], diff as u64, ADJ_ROOM_MAC, 0, 0];
        let r = skb_adjust_room(c)?;
        if r != 0 {
            return Ok(r);
        }
    }
    // skb->protocol follows (a __be16 as the program passed it).
    let p = c.env.packet;
    let v = u32::from(c.args[1] as u16);
    c.mem
        .helper_write(p.ctx + 16, 4)?
        .copy_from_slice(&v.to_le_bytes());
    Ok(0)
}

/// A deterministic flow hash of the packet's addresses and ports (the
/// kernel's differs per boot: its random seed makes it not comparable).
fn get_hash_recalc(c: &mut Ctx) -> Ret {
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
