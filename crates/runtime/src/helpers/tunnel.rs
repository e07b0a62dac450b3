//! Tunnel metadata (`bpf_skb_{get,set}_tunnel_{key,opt}`). Replayed packets
//! arrive with none, as on a device that is not a collect_md tunnel; what a
//! program sets is kept with the packet's outcome, where an encapsulating
//! device would take it.

use vm::HelperFn;

use super::{Ctx, Ret, err, read};
use crate::Env;
use crate::tunnel_info::{F_TUNINFO_IPV6, TunnelInfo};
use maps::Errno;

pub const TC: &[(&str, HelperFn<Env>)] = &[
    ("skb_get_tunnel_key", get_tunnel_key),
    ("skb_set_tunnel_key", set_tunnel_key),
    ("skb_get_tunnel_opt", get_tunnel_opt),
    ("skb_set_tunnel_opt", set_tunnel_opt),
];

/// `sizeof(struct bpf_tunnel_key)`, and the shorter layouts older headers
/// have (up to `tunnel_ext`, `tunnel_label`, `local_ipv4`; IPv4 only).
const KEY_SIZE: u64 = 44;
const KEY_SIZES: [u64; 5] = [KEY_SIZE, 8, 22, 24, 28];
const F_ZERO_CSUM_TX: u64 = 2;
const F_DONT_FRAGMENT: u64 = 4;
const F_SEQ_NUMBER: u64 = 8;
const F_NO_TUNNEL_KEY: u64 = 16;
const F_TUNINFO_FLAGS: u64 = 16;
/// Most option bytes a tunnel carries (`IP_TUNNEL_OPTS_MAX`).
const OPTS_MAX: u64 = 255;

/// The kernel clears the buffer of a failed get.
fn fail_cleared(c: &mut Ctx, to: u64, size: u64, e: Errno) -> Ret {
    c.mem.write(to, size as usize)?.fill(0);
    Ok(err(e))
}

fn get_tunnel_key(c: &mut Ctx) -> Ret {
    let (to, size, flags) = (c.args[1], c.args[2], c.args[3]);
    if !KEY_SIZES.contains(&size) || flags & !(F_TUNINFO_IPV6 | F_TUNINFO_FLAGS) != 0 {
        return fail_cleared(c, to, size, Errno::EINVAL);
    }
    // Only received tunnel metadata can be read, and replays carry none.
    fail_cleared(c, to, size, Errno::EINVAL)
}

fn set_tunnel_key(c: &mut Ctx) -> Ret {
    let (from, size, flags) = (c.args[1], c.args[2], c.args[3]);
    let known = F_TUNINFO_IPV6 | F_ZERO_CSUM_TX | F_DONT_FRAGMENT | F_SEQ_NUMBER | F_NO_TUNNEL_KEY;
    if flags & !known != 0 || !KEY_SIZES.contains(&size) {
        return Ok(err(Errno::EINVAL));
    }
    if size != KEY_SIZE && flags & F_TUNINFO_IPV6 != 0 {
        // The short layouts predate IPv6 tunnels.
        return Ok(err(Errno::EINVAL));
    }
    let mut key = read(c, from, size as usize)?;
    key.resize(KEY_SIZE as usize, 0);
    // tunnel_ext must be zero; an IPv4 key has no flow label.
    let ext = u16::from_le_bytes([key[22], key[23]]);
    let label = u32::from_le_bytes(key[24..28].try_into().expect("44 bytes"));
    if ext != 0 || (flags & F_TUNINFO_IPV6 == 0 && label != 0) || label & !0x000f_ffff != 0 {
        return Ok(err(Errno::EINVAL));
    }
    c.env.tunnel = Some(TunnelInfo {
        key,
        flags,
        options: Vec::new(),
    });
    Ok(0)
}

fn get_tunnel_opt(c: &mut Ctx) -> Ret {
    let (to, size) = (c.args[1], c.args[2]);
    // Received packets carry no options.
    fail_cleared(c, to, size, Errno::ENOENT)
}

fn set_tunnel_opt(c: &mut Ctx) -> Ret {
    let (from, size) = (c.args[1], c.args[2]);
    if c.env.tunnel.is_none() || size % 4 != 0 {
        return Ok(err(Errno::EINVAL));
    }
    if size > OPTS_MAX {
        return Ok(err(Errno::ENOMEM));
    }
    let options = read(c, from, size as usize)?;
    c.env.tunnel.as_mut().expect("checked").options = options;
    Ok(0)
}
