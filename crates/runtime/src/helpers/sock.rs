//! Socket and namespace helpers. A replay has no sockets: lookups find
//! none (`NULL`, as on a host where nothing listens on the tuple), and the
//! helpers that need a socket fail the way the kernel does without one.

use vm::HelperFn;

use super::{Ctx, Ret, err, read};
use crate::Env;
use maps::Errno;

/// Kernel tick rate assumed for `bpf_jiffies64` (Debian's CONFIG_HZ).
pub const HZ: u64 = 250;
/// The cookie of the initial network namespace, the one replays run in.
const INIT_NETNS_COOKIE: u64 = 1;

/// Every packet program type.
pub const COMMON: &[(&str, HelperFn<Env>)] = &[
    ("jiffies64", jiffies64),
    ("sk_lookup_tcp", sk_lookup),
    ("sk_lookup_udp", sk_lookup),
    ("skc_lookup_tcp", sk_lookup),
    ("sk_release", sk_release),
];

/// Every packet program type, through the kernel's `bpf_base_func_proto`.
pub const CGROUP: &[(&str, HelperFn<Env>)] =
    &[("current_task_under_cgroup", current_task_under_cgroup)];

/// tc programs.
pub const TC: &[(&str, HelperFn<Env>)] = &[
    ("sk_assign", sk_assign),
    ("get_netns_cookie", get_netns_cookie),
    ("get_socket_cookie", no_socket_cookie),
    ("sk_storage_get", sk_storage_get),
    ("sk_storage_delete", sk_storage_delete),
    ("skb_under_cgroup", skb_under_cgroup),
];

/// `bpf_sk_storage_get(map, sk, value, flags)`: storage lives on sockets.
/// The verifier only lets a program pass a socket it checked, and a
/// replay has none (lookups and `skb->sk` give NULL), so no replay reaches
/// this; given none, the kernel returns NULL too.
fn sk_storage_get(_: &mut Ctx) -> Ret {
    Ok(0)
}

/// `bpf_sk_storage_delete(map, sk)`: takes a socket, which no lookup in a
/// replay returns; a socket without storage gives `-ENOENT`.
fn sk_storage_delete(_: &mut Ctx) -> Ret {
    Ok(err(Errno::ENOENT))
}

/// `bpf_skb_under_cgroup(skb, map, index)`: a replayed packet has no
/// socket, so `-ENOENT`, as the kernel answers before it looks at the
/// cgroup array. The kernel's test run gives its packets a socket (and
/// then answers from the array, which nothing can fill here): not
/// comparable.
fn skb_under_cgroup(c: &mut Ctx) -> Ret {
    c.env.unreproducible.push("bpf_skb_under_cgroup");
    Ok(err(Errno::ENOENT))
}

fn jiffies64(c: &mut Ctx) -> Ret {
    // The kernel inlines jiffies: no replayed clock reading stands behind it.
    c.env.unreproducible.push("bpf_jiffies64");
    Ok(c.env.sim.clock_ns / (1_000_000_000 / HZ))
}

/// `bpf_sk_lookup_*(ctx, tuple, size, netns, flags)`: the tuple must be an
/// IPv4 (12 bytes) or IPv6 (36 bytes) `struct bpf_sock_tuple`; no socket
/// matches.
fn sk_lookup(c: &mut Ctx) -> Ret {
    // The kernel may find a real socket; a replay has none.
    c.env.unreproducible.push("bpf_sk_lookup");
    let (tuple, size) = (c.args[1], c.args[2]);
    if size == 12 || size == 36 {
        read(c, tuple, size as usize)?;
    }
    Ok(0)
}

/// `bpf_sk_release(sk)`: only ever given a socket a lookup returned, and
/// lookups return none.
fn sk_release(c: &mut Ctx) -> Ret {
    if c.args[0] == 0 {
        return Err(vm::HelperError("bpf_sk_release of a NULL socket".into()));
    }
    Ok(0)
}

/// `bpf_sk_assign(skb, sk, flags)`: `-EINVAL` without a socket or with flags.
fn sk_assign(c: &mut Ctx) -> Ret {
    if c.args[1] == 0 || c.args[2] != 0 {
        return Ok(err(Errno::EINVAL));
    }
    Ok(0)
}

fn get_netns_cookie(_: &mut Ctx) -> Ret {
    Ok(INIT_NETNS_COOKIE)
}

/// `bpf_get_socket_cookie(skb)`: 0 for a packet with no socket.
fn no_socket_cookie(_: &mut Ctx) -> Ret {
    Ok(0)
}

/// `bpf_current_task_under_cgroup(map, index)`: a cgroup array in a replay
/// holds no cgroup, so `-E2BIG` past its end and `-EAGAIN` for an empty
/// slot, the kernel's answers before it would look at the task.
fn current_task_under_cgroup(c: &mut Ctx) -> Ret {
    let m = super::map_arg(c, c.args[0])?;
    let index = c.args[1] as u32;
    if index >= c.env.maps[m].spec().max_entries {
        return Ok(err(Errno::E2BIG));
    }
    Ok(err(Errno::EAGAIN))
}
