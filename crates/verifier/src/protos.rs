//! Helper prototypes: what each argument register must hold and what the
//! helper returns, as the kernel's `bpf_func_proto`s declare them, for
//! every helper sluice's VM provides.

/// What an argument must be.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Arg {
    /// Any initialised value (`ARG_ANYTHING`).
    Anything,
    /// The context pointer (`ARG_PTR_TO_CTX`).
    Ctx,
    /// A map (`ARG_CONST_MAP_PTR`).
    Map,
    /// Readable memory of the map's key size (`ARG_PTR_TO_MAP_KEY`).
    Key,
    /// Readable memory of the map's value size (`ARG_PTR_TO_MAP_VALUE`).
    Value,
    /// Writable memory of the map's value size (`ARG_PTR_TO_UNINIT_MAP_VALUE`).
    UninitValue,
    /// Memory the helper reads, sized by the next argument
    /// (`ARG_PTR_TO_MEM | MEM_RDONLY`); `nullable` allows NULL with size 0.
    ReadMem { nullable: bool },
    /// Memory the helper writes (and may read), sized by the next argument.
    WriteMem,
    /// Memory the helper only writes, sized by the next argument
    /// (`ARG_PTR_TO_UNINIT_MEM`).
    UninitMem,
    /// Readable memory of a fixed size (`ARG_PTR_TO_FIXED_SIZE_MEM`).
    FixedMem(u32),
    /// Memory of a fixed size the helper reads and writes
    /// (`ARG_PTR_TO_FIXED_SIZE_MEM | MEM_WRITE`).
    FixedMemRw(u32),
    /// The size of the previous memory argument (`ARG_CONST_SIZE`).
    Size,
    /// The same, 0 allowed (`ARG_CONST_SIZE_OR_ZERO`).
    SizeOrZero,
    /// An allocation size known at verification time (`ARG_CONST_ALLOC_SIZE_OR_ZERO`).
    AllocSize,
    /// A ring buffer record to release (`ARG_PTR_TO_RINGBUF_MEM | OBJ_RELEASE`).
    RingbufRelease,
    /// A socket (`ARG_PTR_TO_BTF_ID_SOCK_COMMON`); `release` ends its reference.
    Sock { release: bool },
    /// Readable memory of the map's value size, or NULL
    /// (`ARG_PTR_TO_MAP_VALUE_OR_NULL`).
    ValueOrNull,
    /// A callback function (`ARG_PTR_TO_FUNC`).
    Func,
    /// Stack memory or NULL passed to a callback (`ARG_PTR_TO_STACK_OR_NULL`).
    StackOrNull,
    /// A `bpf_spin_lock` inside a map value.
    SpinLock,
}

/// What the helper returns in r0.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Ret {
    Integer,
    Void,
    /// A value of the map argument, or NULL.
    MapValueOrNull,
    /// A ring buffer record of the size argument, or NULL; a reference.
    RingbufOrNull,
    /// A socket from a lookup, or NULL; a reference.
    SockOrNull {
        common: bool,
    },
}

/// One helper's prototype.
#[derive(Copy, Clone, Debug)]
pub struct Proto {
    pub name: &'static str,
    pub args: &'static [Arg],
    pub ret: Ret,
    /// Whether the helper may move or resize packet data (the kernel's
    /// `bpf_helper_changes_pkt_data`): every packet pointer is invalid after.
    pub changes_packet: bool,
    /// Whether the kernel's proto sets `.pkt_access = true`: only then may
    /// a packet (or packet-meta) pointer be passed in any argument that is
    /// not `ARG_ANYTHING` (`check_func_arg`: "helper access to the packet
    /// is not allowed").
    pub pkt_access: bool,
}

use std::collections::HashMap;
use std::sync::OnceLock;

use Arg::*;

const fn p(name: &'static str, args: &'static [Arg], ret: Ret) -> Proto {
    Proto {
        name,
        args,
        ret,
        changes_packet: false,
        pkt_access: false,
    }
}

/// A helper whose kernel proto sets `.pkt_access = true`.
const fn pa(name: &'static str, args: &'static [Arg], ret: Ret) -> Proto {
    Proto {
        pkt_access: true,
        ..p(name, args, ret)
    }
}

const fn pkt(name: &'static str, args: &'static [Arg]) -> Proto {
    Proto {
        name,
        args,
        ret: Ret::Integer,
        changes_packet: true,
        pkt_access: false,
    }
}

const INT: Ret = Ret::Integer;
const RD: Arg = ReadMem { nullable: false };
const RD0: Arg = ReadMem { nullable: true };

/// Prototypes, by the helper's kernel name (ids come from [`isa::helper_id`]).
///
/// `pa` marks the protos with `.pkt_access = true`: the map helpers taking
/// a key or value to read (lookup, update, delete, push; not pop or peek)
/// in kernel/bpf/helpers.c; csum_diff, the socket lookups (the skb, tc
/// and xdp variants alike) and the raw syncookie helpers in
/// net/core/filter.c. No other helper here has it: not skb_store_bytes,
/// xdp_load_bytes/xdp_store_bytes, perf_event_output, fib_lookup,
/// ringbuf_output or trace_printk.
const PROTOS: &[Proto] = &[
    pa("map_lookup_elem", &[Map, Key], Ret::MapValueOrNull),
    pa("map_update_elem", &[Map, Key, Value, Anything], INT),
    pa("map_delete_elem", &[Map, Key], INT),
    p("ktime_get_ns", &[], INT),
    // Only the format and its size are declared (`ARG_DONTCARE` after):
    // the kernel checks none of r3-r5, written or not.
    p("trace_printk", &[RD, Size], INT),
    p("get_prandom_u32", &[], INT),
    p("get_smp_processor_id", &[], INT),
    pkt("skb_store_bytes", &[Ctx, Anything, RD, Size, Anything]),
    pkt(
        "l3_csum_replace",
        &[Ctx, Anything, Anything, Anything, Anything],
    ),
    pkt(
        "l4_csum_replace",
        &[Ctx, Anything, Anything, Anything, Anything],
    ),
    p("tail_call", &[Ctx, Map, Anything], Ret::Void),
    p("get_cgroup_classid", &[Ctx], INT),
    p("skb_get_tunnel_key", &[Ctx, UninitMem, Size, Anything], INT),
    p("skb_set_tunnel_key", &[Ctx, RD, Size, Anything], INT),
    p("redirect", &[Anything, Anything], INT),
    p("get_route_realm", &[Ctx], INT),
    p(
        "perf_event_output",
        &[Ctx, Map, Anything, RD, SizeOrZero],
        INT,
    ),
    p("skb_load_bytes", &[Ctx, Anything, UninitMem, Size], INT),
    pa(
        "csum_diff",
        &[RD0, SizeOrZero, RD0, SizeOrZero, Anything],
        INT,
    ),
    p("skb_get_tunnel_opt", &[Ctx, UninitMem, Size], INT),
    p("skb_set_tunnel_opt", &[Ctx, RD, Size], INT),
    pkt("skb_change_proto", &[Ctx, Anything, Anything]),
    p("skb_change_type", &[Ctx, Anything], INT),
    p("get_hash_recalc", &[Ctx], INT),
    pkt("skb_change_tail", &[Ctx, Anything, Anything]),
    pkt("skb_pull_data", &[Ctx, Anything]),
    pkt("skb_change_head", &[Ctx, Anything, Anything]),
    pkt("xdp_adjust_head", &[Ctx, Anything]),
    p("get_socket_cookie", &[Ctx], INT),
    p("get_socket_uid", &[Ctx], INT),
    p("set_hash", &[Ctx, Anything], INT),
    pkt("skb_adjust_room", &[Ctx, Anything, Anything, Anything]),
    p("redirect_map", &[Map, Anything, Anything], INT),
    pkt("xdp_adjust_meta", &[Ctx, Anything]),
    pkt("xdp_adjust_tail", &[Ctx, Anything]),
    p("fib_lookup", &[Ctx, WriteMem, Size, Anything], INT),
    pa(
        "sk_lookup_tcp",
        &[Ctx, RD, Size, Anything, Anything],
        Ret::SockOrNull { common: false },
    ),
    pa(
        "sk_lookup_udp",
        &[Ctx, RD, Size, Anything, Anything],
        Ret::SockOrNull { common: false },
    ),
    p("sk_release", &[Sock { release: true }], INT),
    pa("map_push_elem", &[Map, Value, Anything], INT),
    p("map_pop_elem", &[Map, UninitValue], INT),
    p("map_peek_elem", &[Map, UninitValue], INT),
    p("spin_lock", &[SpinLock], Ret::Void),
    p("spin_unlock", &[SpinLock], Ret::Void),
    pa(
        "skc_lookup_tcp",
        &[Ctx, RD, Size, Anything, Anything],
        Ret::SockOrNull { common: true },
    ),
    p("jiffies64", &[], INT),
    p("get_netns_cookie", &[Ctx], INT),
    p("sk_assign", &[Ctx, Sock { release: false }, Anything], INT),
    p("ktime_get_boot_ns", &[], INT),
    p("ringbuf_output", &[Map, RD, SizeOrZero, Anything], INT),
    p(
        "ringbuf_reserve",
        &[Map, AllocSize, Anything],
        Ret::RingbufOrNull,
    ),
    p("ringbuf_submit", &[RingbufRelease, Anything], Ret::Void),
    p("ringbuf_discard", &[RingbufRelease, Anything], Ret::Void),
    p("ringbuf_query", &[Map, Anything], INT),
    p(
        "redirect_neigh",
        &[Anything, RD0, SizeOrZero, Anything],
        INT,
    ),
    p("redirect_peer", &[Anything, Anything], INT),
    pkt("clone_redirect", &[Ctx, Anything, Anything]),
    p("ktime_get_coarse_ns", &[], INT),
    p(
        "for_each_map_elem",
        &[Map, Func, StackOrNull, Anything],
        INT,
    ),
    p("trace_vprintk", &[RD, Size, RD0, SizeOrZero], INT),
    p("loop", &[Anything, Func, StackOrNull, Anything], INT),
    p("xdp_get_buff_len", &[Ctx], INT),
    p("xdp_load_bytes", &[Ctx, Anything, UninitMem, Size], INT),
    p("xdp_store_bytes", &[Ctx, Anything, RD, Size], INT),
    pa("tcp_raw_gen_syncookie_ipv4", &[FixedMem(20), RD, Size], INT),
    pa("tcp_raw_gen_syncookie_ipv6", &[FixedMem(40), RD, Size], INT),
    pa(
        "tcp_raw_check_syncookie_ipv4",
        &[FixedMem(20), FixedMem(20)],
        INT,
    ),
    pa(
        "tcp_raw_check_syncookie_ipv6",
        &[FixedMem(40), FixedMem(20)],
        INT,
    ),
    p("ktime_get_tai_ns", &[], INT),
    p("skb_ecn_set_ce", &[Ctx], INT),
    p("skb_under_cgroup", &[Ctx, Map, Anything], INT),
    p(
        "sk_storage_get",
        &[Map, Sock { release: false }, ValueOrNull, Anything],
        Ret::MapValueOrNull,
    ),
    p("sk_storage_delete", &[Map, Sock { release: false }], INT),
    p(
        "skb_load_bytes_relative",
        &[Ctx, Anything, UninitMem, Size, Anything],
        INT,
    ),
    p("set_hash_invalid", &[Ctx], Ret::Void),
    p("current_task_under_cgroup", &[Map, Anything], INT),
    p("csum_update", &[Ctx, Anything], INT),
    p("csum_level", &[Ctx, Anything], INT),
    p(
        "check_mtu",
        &[Ctx, Anything, FixedMemRw(4), Anything, Anything],
        INT,
    ),
];

/// The prototype of helper `id`, if sluice knows it.
pub fn proto(id: u32) -> Option<&'static Proto> {
    static BY_ID: OnceLock<HashMap<u32, &'static Proto>> = OnceLock::new();
    BY_ID
        .get_or_init(|| {
            PROTOS
                .iter()
                .map(|p| (isa::helper_id(p.name).expect("a kernel helper"), p))
                .collect()
        })
        .get(&id)
        .copied()
}

/// How many argument registers helper `id` reads (5 when unknown).
pub fn arg_count(id: u32) -> usize {
    proto(id).map_or(5, |p| p.args.len())
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_match_the_kernel_ids() {
        for p in super::PROTOS {
            let id = isa::helper_id(p.name).unwrap_or_else(|| panic!("{} is no helper", p.name));
            assert_eq!(super::proto(id).map(|q| q.name), Some(p.name));
            // A size argument follows a memory argument.
            for (i, a) in p.args.iter().enumerate() {
                if matches!(a, super::Arg::Size | super::Arg::SizeOrZero) {
                    assert!(
                        matches!(
                            p.args[i - 1],
                            super::Arg::ReadMem { .. }
                                | super::Arg::WriteMem
                                | super::Arg::UninitMem
                        ),
                        "{}",
                        p.name
                    );
                }
            }
        }
    }
}
