//! `bpf_fib_lookup` against the user-space table (`crate::fib`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use maps::Errno;
use vm::HelperFn;

use super::{Ctx, Ret, err, read};
use crate::Env;
use crate::fib::RouteKind;

pub const HELPERS: &[(&str, HelperFn<Env>)] = &[("fib_lookup", fib_lookup)];

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
