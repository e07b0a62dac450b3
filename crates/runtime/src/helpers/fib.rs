//! `bpf_fib_lookup` against the user-space table (`crate::fib`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use maps::Errno;
use vm::HelperFn;

use super::{Ctx, Ret, err, read};
use crate::Env;
use crate::fib::RouteKind;

pub const HELPERS: &[(&str, HelperFn<Env>)] = &[("fib_lookup", fib_lookup)];

/// `bpf_check_mtu` of XDP programs.
pub const XDP: &[(&str, HelperFn<Env>)] = &[("check_mtu", xdp_check_mtu)];

/// `bpf_check_mtu` of tc programs.
pub const TC: &[(&str, HelperFn<Env>)] = &[("check_mtu", skb_check_mtu)];

/// `BPF_MTU_CHK_SEGS`, the only flag (tc only).
const MTU_CHK_SEGS: u64 = 1;
/// `BPF_MTU_CHK_RET_FRAG_NEEDED`.
const MTU_FRAG_NEEDED: u64 = 1;
/// Ethernet's header, which a device's MTU does not count.
const HARD_HEADER_LEN: i64 = 14;
/// The loopback device's MTU, for index 1 when the table has no link 1
/// (`sluice diff` compares on loopback).
const LOOPBACK_MTU: u32 = 65536;
/// The MTU of the device a packet arrived on when the table does not
/// list it: Ethernet's.
const DEFAULT_MTU: u32 = 1500;

/// The MTU of device `ifindex` (0: the packet's own, `own`): a `--fib`
/// link, loopback for 1, Ethernet's for the packet's own device; `None`
/// for a device the replay does not know (the kernel's `-ENODEV`).
fn device_mtu(c: &Ctx, ifindex: u32, own: u32) -> Option<u32> {
    let index = if ifindex == 0 { own } else { ifindex };
    if let Some(l) = c.env.fib.link(index) {
        return Some(l.mtu);
    }
    match index {
        1 => Some(LOOPBACK_MTU),
        _ if index == own => Some(DEFAULT_MTU),
        _ => None,
    }
}

fn ctx_u32(c: &Ctx, off: u64) -> Result<u32, vm::HelperError> {
    let b = read(c, c.env.packet.ctx + off, 4)?;
    Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// `bpf_check_mtu(skb, ifindex, &mtu_len, len_diff, flags)`: whether the
/// packet (or `*mtu_len` bytes of L3, when non-zero), grown by
/// `len_diff`, fits the device's MTU plus its Ethernet header: 0, or
/// `BPF_MTU_CHK_RET_FRAG_NEEDED` (1); `*mtu_len` gets the MTU, and is left
/// alone after an error (as Linux 6.18 does). Replayed packets are not
/// GSO, so `BPF_MTU_CHK_SEGS` changes nothing but forbids `len_diff` and
/// `*mtu_len`.
fn skb_check_mtu(c: &mut Ctx) -> Ret {
    let (ifindex, mtu_at, len_diff, flags) =
        (c.args[1] as u32, c.args[2], c.args[3] as i32, c.args[4]);
    let asked = u32::from_le_bytes(read(c, mtu_at, 4)?.try_into().expect("4 bytes"));
    let own = ctx_u32(c, 40)?;
    if flags & !MTU_CHK_SEGS != 0 || (flags & MTU_CHK_SEGS != 0 && (len_diff != 0 || asked != 0)) {
        return Ok(err(Errno::EINVAL));
    }
    let Some(mtu) = device_mtu(c, ifindex, own) else {
        return Ok(err(Errno::ENODEV));
    };
    let len = if asked != 0 {
        i64::from(asked) + HARD_HEADER_LEN
    } else {
        c.env.packet.len() as i64 + c.env.frags.len() as i64
    } + i64::from(len_diff);
    let fits = len <= i64::from(mtu) + HARD_HEADER_LEN;
    c.mem.write(mtu_at, 4)?.copy_from_slice(&mtu.to_le_bytes());
    Ok(if fits { 0 } else { MTU_FRAG_NEEDED })
}

/// `bpf_check_mtu(xdp, ifindex, &mtu_len, len_diff, flags)`: as for tc on
/// the frame's linear part, and any flag is `-EINVAL`.
fn xdp_check_mtu(c: &mut Ctx) -> Ret {
    let (ifindex, mtu_at, len_diff, flags) =
        (c.args[1] as u32, c.args[2], c.args[3] as i32, c.args[4]);
    if flags != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let own = ctx_u32(c, 12)?;
    let Some(mtu) = device_mtu(c, ifindex, own) else {
        return Ok(err(Errno::ENODEV));
    };
    let asked = u32::from_le_bytes(read(c, mtu_at, 4)?.try_into().expect("4 bytes"));
    let len = if asked != 0 {
        i64::from(asked) + HARD_HEADER_LEN
    } else {
        c.env.packet.len() as i64
    } + i64::from(len_diff);
    let ret = if len > i64::from(mtu) + HARD_HEADER_LEN {
        MTU_FRAG_NEEDED
    } else {
        0
    };
    c.mem.write(mtu_at, 4)?.copy_from_slice(&mtu.to_le_bytes());
    Ok(ret)
}

const PARAMS_SIZE: u64 = 64;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const EAFNOSUPPORT: i32 = 97;

/// `BPF_FIB_LKUP_RET_*`.
mod ret {
    pub const SUCCESS: u64 = 0;
    pub const BLACKHOLE: u64 = 1;
    pub const UNREACHABLE: u64 = 2;
    pub const PROHIBIT: u64 = 3;
    pub const NOT_FWDED: u64 = 4;
    pub const NO_NEIGH: u64 = 7;
    pub const FRAG_NEEDED: u64 = 8;
}

fn fib_lookup(c: &mut Ctx) -> Ret {
    // The kernel consults its own routing table, not this one.
    c.env.unreproducible.push("bpf_fib_lookup");
    let (params, plen) = (c.args[1], c.args[2]);
    if plen < PARAMS_SIZE {
        return Ok(err(Errno::EINVAL));
    }
    let mut p = read(c, params, PARAMS_SIZE as usize)?;
    let dst = match p[0] {
        AF_INET => IpAddr::V4(Ipv4Addr::new(p[32], p[33], p[34], p[35])),
        AF_INET6 => IpAddr::V6(Ipv6Addr::from(
            <[u8; 16]>::try_from(&p[32..48]).expect("16 bytes"),
        )),
        _ => return Ok(err(Errno(EAFNOSUPPORT))),
    };
    let tot_len = u16::from_le_bytes([p[6], p[7]]);
    let fib = &c.env.fib;
    let Some(route) = fib.lookup(dst) else {
        return Ok(ret::NOT_FWDED);
    };
    let code = match route.kind {
        RouteKind::Blackhole => return Ok(ret::BLACKHOLE),
        RouteKind::Unreachable => return Ok(ret::UNREACHABLE),
        RouteKind::Prohibit => return Ok(ret::PROHIBIT),
        RouteKind::Unicast => {
            let dev = route.dev.expect("unicast routes have a device");
            let link = fib.link(dev);
            let mtu = link.map_or(1500, |l| l.mtu);
            p[8..12].copy_from_slice(&dev.to_le_bytes());
            if tot_len != 0 && u32::from(tot_len) > mtu {
                p[6..8].copy_from_slice(&(mtu as u16).to_le_bytes());
                ret::FRAG_NEEDED
            } else {
                if let Some(l) = link {
                    p[52..58].copy_from_slice(&l.mac);
                }
                p[48..52].fill(0);
                match fib.neighbours.get(&route.via.unwrap_or(dst)) {
                    Some(mac) => {
                        p[58..64].copy_from_slice(mac);
                        ret::SUCCESS
                    }
                    None => ret::NO_NEIGH,
                }
            }
        }
    };
    c.mem
        .write(params, PARAMS_SIZE as usize)?
        .copy_from_slice(&p);
    Ok(code)
}
