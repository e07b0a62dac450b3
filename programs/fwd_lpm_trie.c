// IPv4 forwarding (RFC 1812, include/fwd.h) with the route lookup in the
// kernel's own longest-prefix-match map (BPF_MAP_TYPE_LPM_TRIE): one
// lookup of the destination as a /32, the map giving the next hop of the
// longest route that contains it. The baseline the array-map tries of
// fwd_radix and fwd_lctrie are measured against. crates/lpm
// (lpm_trie_entries) writes the maps from a route table; docs/lpm.md.
#include "fwd.h"

/* struct bpf_lpm_trie_key with 4 bytes of data: the address in network
 * order. */
struct lpm_route_key {
	__u32 prefixlen;
	__be32 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1 << 18);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_route_key);
	__type(value, __u32);
} lpm_routes SEC(".maps");

/* The next hop of `daddr` (network order); 0: no route. */
static __always_inline __u32 trie_lookup(__be32 daddr)
{
	struct lpm_route_key key = { .prefixlen = 32, .addr = daddr };
	__u32 *nexthop = bpf_map_lookup_elem(&lpm_routes, &key);
	return nexthop ? *nexthop : 0;
}

SEC("xdp")
int fwd_lpm_trie(struct xdp_md *ctx)
{
	struct ethhdr *eth;
	struct iphdr *ip;
	int action = fwd_parse(ctx, &eth, &ip);
	if (action >= 0)
		return action;
	return fwd_send(ctx, eth, ip, trie_lookup(ip->daddr));
}

char _license[] SEC("license") = "GPL";
