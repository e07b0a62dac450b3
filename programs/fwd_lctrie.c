// IPv4 forwarding (RFC 1812, include/fwd.h) with the route lookup in an
// LC-trie (Nilsson and Karlsson, 1999): node words (branch, skip, adr)
// walked down to a leaf taking `branch` bits at a time, the leaf's base
// vector entry compared with the destination, and on a mismatch its chain
// of nested prefixes in the prefix vector. crates/lpm (lctrie_entries)
// writes the maps from a route table; docs/lpm.md.
#include "fwd.h"

#define LC_BRANCH(w) ((w) >> 27)
#define LC_SKIP(w) (((w) >> 20) & 0x7f)
#define LC_ADR(w) ((w) & 0xfffff)

/* A base or prefix vector entry; pre: the next shorter route that is a
 * prefix of this one (an index into lc_pre), 0 for none. */
struct lc_entry {
	__u32 str;
	__u32 mask;
	__u32 nexthop;
	__u32 pre;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 20);
	__type(key, __u32);
	__type(value, __u32);
} lc_nodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 18);
	__type(key, __u32);
	__type(value, struct lc_entry);
} lc_base SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 17);
	__type(key, __u32);
	__type(value, struct lc_entry);
} lc_pre SEC(".maps");

/* The next hop of `addr` (host order); 0: no route. */
static __always_inline __u32 lc_lookup(__u32 addr)
{
	__u32 at = 0;
	__u32 *w = bpf_map_lookup_elem(&lc_nodes, &at);
	if (!w)
		return 0;
	__u32 node = *w;
	__u32 pos = LC_SKIP(node), branch = LC_BRANCH(node), adr = LC_ADR(node);

	/* Each node takes a bit or more: at most 32 below the root. */
	for (int i = 0; i < 32 && branch; i++) {
		at = adr + ((__u32)(addr << (pos & 31)) >> ((32 - branch) & 31));
		w = bpf_map_lookup_elem(&lc_nodes, &at);
		if (!w)
			return 0;
		node = *w;
		pos += branch + LC_SKIP(node);
		branch = LC_BRANCH(node);
		adr = LC_ADR(node);
	}
	if (branch)
		return 0;
	struct lc_entry *e = bpf_map_lookup_elem(&lc_base, &adr);
	if (!e)
		return 0;
	if (!((addr ^ e->str) & e->mask))
		return e->nexthop;
	/* Nested prefixes, longest first: at most 32. */
	__u32 pre = e->pre;
	for (int i = 0; i < 32 && pre; i++) {
		e = bpf_map_lookup_elem(&lc_pre, &pre);
		if (!e)
			return 0;
		if (!((addr ^ e->str) & e->mask))
			return e->nexthop;
		pre = e->pre;
	}
	return 0;
}

SEC("xdp")
int fwd_lctrie(struct xdp_md *ctx)
{
	struct ethhdr *eth;
	struct iphdr *ip;
	int action = fwd_parse(ctx, &eth, &ip);
	if (action >= 0)
		return action;
	return fwd_send(ctx, eth, ip, lc_lookup(bpf_ntohl(ip->daddr)));
}

char _license[] SEC("license") = "GPL";
