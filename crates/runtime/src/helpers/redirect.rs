//! Redirects: to an interface, through a device/CPU/socket map, to a
//! neighbour or a peer device.

use maps::{Errno, MapType};
use vm::HelperFn;

use super::{Ctx, Ret, err, map_arg, read};
use crate::Env;
use crate::env::{Cloned, Redirect, RedirectTarget};

pub const XDP: &[(&str, HelperFn<Env>)] =
    &[("redirect", xdp_redirect), ("redirect_map", redirect_map)];
pub const TC: &[(&str, HelperFn<Env>)] = &[
    ("redirect", tc_redirect),
    ("redirect_neigh", tc_redirect_neigh),
    ("redirect_peer", tc_redirect_peer),
    ("clone_redirect", tc_clone_redirect),
];

const XDP_ABORTED: u64 = 0;
const XDP_REDIRECT: u64 = 4;
const TC_ACT_SHOT: u64 = 2;
const TC_ACT_REDIRECT: u64 = 7;
const F_INGRESS: u64 = 1;
const F_BROADCAST: u64 = 1 << 3;
const F_EXCLUDE_INGRESS: u64 = 1 << 4;
const BROADCAST_FLAGS: u64 = F_BROADCAST | F_EXCLUDE_INGRESS;

fn xdp_redirect(c: &mut Ctx) -> Ret {
    if c.args[1] != 0 {
        return Ok(XDP_ABORTED);
    }
    c.env.redirect = Some(Redirect {
        target: RedirectTarget::Device {
            ifindex: c.args[0] as u32,
            ingress: false,
        },
        map: None,
    });
    Ok(XDP_REDIRECT)
}

/// `bpf_redirect_map(map, key, flags)`: the entry's target, or the action
/// in the low two bits of `flags` when the entry is empty; with
/// `BPF_F_BROADCAST` (devmaps only), every interface of the map.
fn redirect_map(c: &mut Ctx) -> Ret {
    let m = map_arg(c, c.args[0])?;
    let (key, flags) = (c.args[1] as u32, c.args[2]);
    let devmap = matches!(
        c.env.maps[m].map_type(),
        MapType::Devmap | MapType::DevmapHash
    );
    let allowed = if devmap { 3 | BROADCAST_FLAGS } else { 3 };
    if flags & !allowed != 0 {
        return Ok(XDP_ABORTED);
    }
    if flags & F_BROADCAST != 0 {
        c.env.redirect = Some(Redirect {
            target: RedirectTarget::Broadcast {
                exclude_ingress: flags & F_EXCLUDE_INGRESS != 0,
            },
            map: Some(m),
        });
        c.env.redirect_key = None;
        return Ok(XDP_REDIRECT);
    }
    let map = &c.env.maps[m];
    let target = map
        .ref_at(&key.to_le_bytes())
        .and_then(|v| match map.map_type() {
            MapType::Devmap | MapType::DevmapHash => Some(RedirectTarget::Device {
                ifindex: v,
                ingress: false,
            }),
            MapType::Cpumap => Some(RedirectTarget::Cpu(key)),
            MapType::Xskmap => Some(RedirectTarget::Socket(key)),
            _ => None,
        });
    match target {
        Some(target) => {
            c.env.redirect = Some(Redirect {
                target,
                map: Some(m),
            });
            c.env.redirect_key = Some(key);
            Ok(XDP_REDIRECT)
        }
        None => Ok(flags & 3),
    }
}

fn tc_to(c: &mut Ctx, ifindex: u64, ingress: bool) -> Ret {
    c.env.redirect = Some(Redirect {
        target: RedirectTarget::Device {
            ifindex: ifindex as u32,
            ingress,
        },
        map: None,
    });
    Ok(TC_ACT_REDIRECT)
}

fn tc_redirect(c: &mut Ctx) -> Ret {
    let flags = c.args[1];
    if flags & !F_INGRESS != 0 {
        return Ok(TC_ACT_SHOT);
    }
    tc_to(c, c.args[0], flags & F_INGRESS != 0)
}

/// `bpf_clone_redirect(skb, ifindex, flags)`: a copy of the packet as it
/// is now goes out of `ifindex` (into it with `BPF_F_INGRESS`); the program
/// goes on with the original. Every ifindex exists in the simulation.
fn tc_clone_redirect(c: &mut Ctx) -> Ret {
    let (ifindex, flags) = (c.args[1] as u32, c.args[2]);
    if flags & !F_INGRESS != 0 {
        return Ok(err(Errno::EINVAL));
    }
    let p = c.env.packet;
    let packet = read(c, p.data, p.len() as usize)?;
    c.env.clones.push(Cloned {
        ifindex,
        ingress: flags & F_INGRESS != 0,
        packet,
    });
    Ok(0)
}

/// `bpf_redirect_neigh(ifindex, params, plen, flags)`: out of `ifindex`
/// after a neighbour lookup (the simulation has no neighbours to consult).
fn tc_redirect_neigh(c: &mut Ctx) -> Ret {
    // `params` is a `struct bpf_redir_neigh` (20 bytes) when given.
    let plen = c.args[2];
    if c.args[3] != 0 || (plen != 0 && plen < 20) {
        return Ok(TC_ACT_SHOT);
    }
    tc_to(c, c.args[0], false)
}

/// `bpf_redirect_peer(ifindex, flags)`: into the peer of a veth/netkit.
fn tc_redirect_peer(c: &mut Ctx) -> Ret {
    if c.args[1] != 0 {
        return Ok(TC_ACT_SHOT);
    }
    tc_to(c, c.args[0], true)
}
