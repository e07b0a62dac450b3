// IPv4 forwarding (RFC 1812, include/fwd.h) with the route lookup in a
// radix tree: a path-compressed binary trie in an array map, walked from
// the root while the node's key matches the destination, the last route
// seen winning; at most 33 nodes. crates/lpm (radix_entries) writes the
// maps from a route table; docs/lpm.md.
#include "fwd.h"

/* A route (nexthop != 0) or a branch at bit `len`; child 0: none. */
struct radix_node {
	__u32 key;
	__u32 mask;
	__u32 len;
	__u32 nexthop;
	__u32 child[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 19);
	__type(key, __u32);
	__type(value, struct radix_node);
} radix_nodes SEC(".maps");

/* The next hop of `addr` (host order); 0: no route. */
static __always_inline __u32 radix_lookup(__u32 addr)
{
	__u32 at = 0, best = 0;

	for (int i = 0; i < 33; i++) {
		struct radix_node *n = bpf_map_lookup_elem(&radix_nodes, &at);
		if (!n || ((addr ^ n->key) & n->mask))
			break;
		if (n->nexthop)
			best = n->nexthop;
		if (n->len >= 32)
			break;
		at = (addr >> (31 - n->len)) & 1 ? n->child[1] : n->child[0];
		if (!at)
			break;
	}
	return best;
}

SEC("xdp")
int fwd_radix(struct xdp_md *ctx)
{
	struct ethhdr *eth;
	struct iphdr *ip;
	int action = fwd_parse(ctx, &eth, &ip);
	if (action >= 0)
		return action;
	return fwd_send(ctx, eth, ip, radix_lookup(bpf_ntohl(ip->daddr)));
}

char _license[] SEC("license") = "GPL";
