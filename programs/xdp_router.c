// An L3 router: the next hop comes from the kernel's FIB (bpf_fib_lookup)
// or, when the FIB does not forward, from a routes LPM trie; the TTL (hop
// limit) is decremented with an incremental checksum update, the MACs are
// rewritten and the frame is redirected through a devmap. Packets with TTL
// <= 1, or without a route, go to the kernel stack.
#include "parse.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

struct lpm_v4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct nexthop {
	__u32 ifindex;
	__u8 smac[ETH_ALEN];
	__u8 dmac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v4);
	__type(value, struct nexthop);
} routes_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} tx_ports SEC(".maps");

enum { FORWARDED, TO_STACK, DROPPED, STATS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STATS);
	__type(key, __u32);
	__type(value, __u64);
} router_stats SEC(".maps");

static __always_inline int count(__u32 what, int action)
{
	__u64 *n = bpf_map_lookup_elem(&router_stats, &what);
	if (n)
		*n += 1;
	return action;
}

static __always_inline int forward(struct ethhdr *eth, __u32 ifindex, __u8 *smac, __u8 *dmac)
{
	__builtin_memcpy(eth->h_source, smac, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, dmac, ETH_ALEN);
	int action = bpf_redirect_map(&tx_ports, ifindex, XDP_PASS);
	return count(action == XDP_REDIRECT ? FORWARDED : TO_STACK, action);
}

SEC("xdp")
int xdp_router_prog(struct xdp_md *ctx)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth;
	int proto = parse_eth(&c, &eth);

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip;
		if (parse_ipv4(&c, &ip) < 0)
			return count(TO_STACK, XDP_PASS);
		if (ip->ttl <= 1)
			return count(TO_STACK, XDP_PASS);
		fib.family = AF_INET;
		fib.tos = ip->tos;
		fib.l4_protocol = ip->protocol;
		fib.tot_len = bpf_ntohs(ip->tot_len);
		fib.ipv4_src = ip->saddr;
		fib.ipv4_dst = ip->daddr;
		fib.ifindex = ctx->ingress_ifindex;
		int rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
		if (rc == BPF_FIB_LKUP_RET_BLACKHOLE || rc == BPF_FIB_LKUP_RET_UNREACHABLE ||
		    rc == BPF_FIB_LKUP_RET_PROHIBIT)
			return count(DROPPED, XDP_DROP);

		/* TTL and protocol share a 16-bit word of the checksum. */
		__be16 old = *(__be16 *)&ip->ttl;
		ip->ttl--;
		__be16 new = *(__be16 *)&ip->ttl;
		csum_replace2(&ip->check, old, new);

		if (rc == BPF_FIB_LKUP_RET_SUCCESS)
			return forward(eth, fib.ifindex, fib.smac, fib.dmac);
		struct lpm_v4 key = { .prefixlen = 32 };
		__builtin_memcpy(key.addr, &ip->daddr, 4);
		struct nexthop *nh = bpf_map_lookup_elem(&routes_v4, &key);
		if (!nh) {
			/* Undo: the kernel stack routes it. */
			ip->ttl++;
			csum_replace2(&ip->check, new, old);
			return count(TO_STACK, XDP_PASS);
		}
		return forward(eth, nh->ifindex, nh->smac, nh->dmac);
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6;
		if (parse_ipv6(&c, &ip6) < 0 || ip6->hop_limit <= 1)
			return count(TO_STACK, XDP_PASS);
		fib.family = AF_INET6;
		fib.l4_protocol = ip6->nexthdr;
		fib.tot_len = bpf_ntohs(ip6->payload_len) + sizeof(*ip6);
		__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
		fib.ifindex = ctx->ingress_ifindex;
		int rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
		if (rc == BPF_FIB_LKUP_RET_BLACKHOLE || rc == BPF_FIB_LKUP_RET_UNREACHABLE ||
		    rc == BPF_FIB_LKUP_RET_PROHIBIT)
			return count(DROPPED, XDP_DROP);
		if (rc != BPF_FIB_LKUP_RET_SUCCESS)
			return count(TO_STACK, XDP_PASS);
		ip6->hop_limit--;
		return forward(eth, fib.ifindex, fib.smac, fib.dmac);
	}
	return count(TO_STACK, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
