//! Whether a program's result can depend on the order of packets across
//! flows: the rule that lets `sluice run --threads N` (`--shard auto`)
//! read a capture by byte ranges rather than shard it by flow
//! (docs/performance.md, "Threads over byte ranges").
//!
//! With ranges, worker threads run packets far apart in the capture at the
//! same time, each thread on its own simulated CPU. The result (verdicts,
//! outputs, per-packet rows, map contents with per-CPU values summed) is
//! one thread's when, in every program the hook can run (its entry and
//! tail-call targets):
//!
//! - every helper called reads only the packet, its context or maps, or
//!   acts on the packet alone ([`ORDER_FREE_HELPERS`]); none updates or
//!   deletes map entries (`bpf_map_update_elem`, `bpf_map_delete_elem`,
//!   `bpf_map_push_elem`, ...), reads the clock (`bpf_ktime_get_ns`: the
//!   simulated clock follows the packets' timestamps, never going back, so
//!   a range would start it afresh), draws random numbers, asks its CPU, or
//!   sends ordered output (`bpf_perf_event_output`, ring buffers); no
//!   kernel function (kfunc) is called and no helper by register;
//! - every map it refers to is read-only (`.rodata`, `BPF_F_RDONLY_PROG`),
//!   per-CPU (an array or hash: each thread writes its own CPU's values,
//!   and without updates no entry is created or removed), a map of
//!   programs or interfaces (tail calls, redirects: read only), or an
//!   array, hash or LPM trie whose values the program cannot change in
//!   any other way than by atomic adds. The instructions alone cannot tell
//!   a store into a map value from one into the packet or the stack
//!   through a copied pointer, so a program that refers to such a map
//!   qualifies only when its only memory writes off the frame pointer are
//!   atomic adds that fetch nothing (`__sync_fetch_and_add` whose result
//!   is unused); LRU maps (a lookup changes what is evicted), maps of maps
//!   and every other type do not.
//!
//! What does not qualify is sharded by flow, as before.

use isa::{AtomicOp, CallTarget, Insn, Lddw, Reg};
use maps::MapType;
use runtime::Hook;

/// Helpers (by id) whose effect depends on the packet, its context and
/// what maps hold, never on which packets ran before on other flows.
pub const ORDER_FREE_HELPERS: &[i32] = &[
    1,   // map_lookup_elem
    6,   // trace_printk (lines kept by packet order)
    9,   // skb_store_bytes
    10,  // l3_csum_replace
    11,  // l4_csum_replace
    12,  // tail_call
    13,  // clone_redirect
    18,  // skb_vlan_push
    19,  // skb_vlan_pop
    23,  // redirect
    26,  // skb_load_bytes
    28,  // csum_diff
    31,  // skb_change_proto
    32,  // skb_change_type
    34,  // get_hash_recalc
    38,  // skb_change_tail
    39,  // skb_pull_data
    40,  // csum_update
    43,  // skb_change_head
    44,  // xdp_adjust_head
    51,  // redirect_map
    54,  // xdp_adjust_meta
    65,  // xdp_adjust_tail
    68,  // skb_load_bytes_relative
    69,  // fib_lookup
    188, // xdp_get_buff_len
    189, // xdp_load_bytes
    190, // xdp_store_bytes
    181, // loop (its callback is among the instructions looked at)
];

/// Why packets of several flows cannot be run in any order, for a report:
/// `None` when the rule above holds for every program `hook` can run.
pub(crate) fn order_bound(hook: &Hook) -> Option<String> {
    let object = hook.object();
    let maps = hook.maps();
    for p in hook.runnable() {
        let program = &object.programs[p];
        let mut shared_values = None;
        let mut writes = None;
        for insn in &program.insns {
            match *insn {
                // These write what they read into memory the program gives.
                Insn::Call(CallTarget::Helper(26 | 68 | 69 | 189)) => {
                    writes = writes.or(Some("a helper that writes into memory"))
                }
                Insn::Call(CallTarget::Helper(id)) if !ORDER_FREE_HELPERS.contains(&id) => {
                    let name = isa::helpers::helper_name(id.into())
                        .unwrap_or_else(|| format!("helper {id}"));
                    return Some(format!("{} calls {name}", program.name));
                }
                Insn::Call(CallTarget::Kfunc { .. }) => {
                    return Some(format!("{} calls a kernel function", program.name));
                }
                Insn::Callx { .. } => {
                    return Some(format!("{} calls a helper by register", program.name));
                }
                Insn::Lddw {
                    value: Lddw::MapIdx(i) | Lddw::MapIdxValue { idx: i, .. },
                    ..
                } => {
                    let i = usize::try_from(i).ok()?;
                    let (Some(def), Some(map)) = (object.maps.get(i), maps.get(i)) else {
                        return Some(format!("{} refers to an unknown map", program.name));
                    };
                    match kind_of(def, map.map_type()) {
                        Kind::Free => {}
                        Kind::Shared => shared_values = shared_values.or(Some(def.name())),
                        Kind::Bound(why) => {
                            return Some(format!("{} uses {} `{}`", program.name, why, def.name()));
                        }
                    }
                }
                Insn::Lddw { .. } | Insn::LdAbs { .. } | Insn::LdInd { .. } => {}
                Insn::Store { dst, .. } if dst != Reg::R10 => writes = writes.or(Some("a store")),
                Insn::Atomic {
                    op: AtomicOp::Add,
                    fetch: false,
                    ..
                } => {}
                Insn::Atomic { dst, .. } if dst != Reg::R10 => {
                    writes = writes.or(Some("an atomic operation other than an add"))
                }
                _ => {}
            }
        }
        if let (Some(map), Some(how)) = (shared_values, writes) {
            return Some(format!(
                "{} may change values of `{map}` (shared by every CPU) with {how}",
                program.name
            ));
        }
    }
    None
}

/// What a map referred to means for the order of packets.
enum Kind {
    /// Read only, per CPU, or a table of programs or interfaces.
    Free,
    /// Values shared by every CPU that stores could change.
    Shared,
    /// Not order-free whatever the program does with it.
    Bound(&'static str),
}

/// `BPF_F_RDONLY_PROG`.
const F_RDONLY_PROG: u32 = 1 << 7;

fn kind_of(def: &obj::MapDef, map_type: MapType) -> Kind {
    use MapType::*;
    let readonly = matches!(def.origin, obj::MapOrigin::Data { readonly: true, .. })
        || def.spec.flags & F_RDONLY_PROG != 0;
    match map_type {
        _ if readonly => Kind::Free,
        PercpuArray | PercpuHash | ProgArray | Devmap | DevmapHash | Cpumap | Xskmap => Kind::Free,
        Array | Hash | LpmTrie => Kind::Shared,
        LruHash | LruPercpuHash => Kind::Bound("the LRU map"),
        Ringbuf => Kind::Bound("the ring buffer"),
        PerfEventArray => Kind::Bound("the perf event array"),
        Queue | Stack => Kind::Bound("the queue"),
        ArrayOfMaps | HashOfMaps => Kind::Bound("the map of maps"),
        _ => Kind::Bound("the map"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(name: &str) -> Option<String> {
        let object = programs::object(name).unwrap();
        let built = crate::HookSpec::from_bytes(format!("{name}.o"), object)
            .build()
            .unwrap();
        order_bound(&built.hook)
    }

    #[test]
    fn the_examples_are_judged_by_their_maps_and_helpers() {
        for free in ["xdp_count", "xdp_pass", "xdp_drop", "xdp_parse_tx"] {
            assert_eq!(bound(free), None, "{free}");
        }
        for (name, why) in [
            ("xdp_ddos", "calls bpf_ktime_get_ns"),
            ("classify", "calls bpf_map_update_elem"),
            ("xdp_lb", "uses the LRU map `conn_table`"),
            ("burn", "uses the ring buffer `copies`"),
            ("xdp_router", "may change values of `routes_v4`"),
        ] {
            let got = bound(name).unwrap_or_default();
            assert!(got.contains(why), "{name}: {got}");
        }
    }
}
