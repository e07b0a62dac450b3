/* IPv4 forwarding per RFC 1812, shared by fwd_radix.c, fwd_lctrie.c and
 * fwd_lpm_trie.c (their route lookups differ; crates/lpm writes the maps,
 * docs/lpm.md).
 *
 * Per packet: the checks of RFC 1812 section 5.2.2 (a frame long enough
 * for a minimal header, version 4, IHL >= 5, total length >= the header
 * and within the frame, header checksum right); a failing datagram is
 * dropped silently (counted). TTL <= 1: to the stack (XDP_PASS), which
 * sends ICMP time exceeded (section 5.3.1). Then the lookup; no route:
 * to the stack as it came (its own table, or ICMP unreachable). Else the
 * TTL is decremented with an incremental checksum update (RFC 1624), the
 * MACs of the next hop written, and the frame sent: XDP_TX when the next
 * hop's ifindex is 0 or the ingress interface, else bpf_redirect to it.
 * Not done: IP options processing, martian and local-address checks. */
#ifndef SLUICE_FWD_H
#define SLUICE_FWD_H

#include "parse.h"

/* Entry 0 unused: next hop 0 is "no route". */
struct nexthop {
	__u32 ifindex;
	__u8 smac[ETH_ALEN];
	__u8 dmac[ETH_ALEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct nexthop);
} nexthops SEC(".maps");

enum { FWD_FORWARDED, FWD_NO_ROUTE, FWD_TTL_EXCEEDED, FWD_BAD_HEADER, FWD_NOT_IPV4, FWD_STATS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FWD_STATS);
	__type(key, __u32);
	__type(value, __u64);
} fwd_stats SEC(".maps");

static __always_inline int fwd_count(__u32 what, int action)
{
	__u64 *n = bpf_map_lookup_elem(&fwd_stats, &what);
	if (n)
		*n += 1;
	return action;
}

/* Parses and checks the frame: returns the action for a frame not to be
 * forwarded, or -1 with *eth and *ip set. */
static __always_inline int fwd_parse(struct xdp_md *ctx, struct ethhdr **eth, struct iphdr **ipp)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct cursor c = { data, end };

	if (parse_eth(&c, eth) != bpf_htons(ETH_P_IP))
		return fwd_count(FWD_NOT_IPV4, XDP_PASS);
	struct iphdr *ip = c.pos;
	if ((void *)(ip + 1) > end)
		return fwd_count(FWD_BAD_HEADER, XDP_DROP);
	if (ip->version != 4 || ip->ihl < 5)
		return fwd_count(FWD_BAD_HEADER, XDP_DROP);
	__u32 hlen = ip->ihl * 4;
	__u32 total = bpf_ntohs(ip->tot_len);
	/* The frame's bytes from the IP header on, fragments included. */
	__u32 frame = bpf_xdp_get_buff_len(ctx) - ((void *)ip - data);
	if (total < hlen || total > frame)
		return fwd_count(FWD_BAD_HEADER, XDP_DROP);

	__u16 *w = (void *)ip;
	__u32 sum = 0;
#pragma unroll
	for (int i = 0; i < 10; i++)
		sum += w[i];
	/* Options, a word at a time. */
	__u32 *opt = (void *)(ip + 1);
#pragma unroll
	for (int i = 0; i < 10; i++) {
		if (i >= (int)ip->ihl - 5)
			break;
		if ((void *)(opt + i + 1) > end)
			return fwd_count(FWD_BAD_HEADER, XDP_DROP);
		sum += (opt[i] & 0xffff) + (opt[i] >> 16);
	}
	if (csum_fold(sum) != 0)
		return fwd_count(FWD_BAD_HEADER, XDP_DROP);

	if (ip->ttl <= 1)
		return fwd_count(FWD_TTL_EXCEEDED, XDP_PASS);
	*ipp = ip;
	return -1;
}

/* Sends the checked frame to next hop `id` (0: no route). */
static __always_inline int fwd_send(struct xdp_md *ctx, struct ethhdr *eth, struct iphdr *ip, __u32 id)
{
	if (!id)
		return fwd_count(FWD_NO_ROUTE, XDP_PASS);
	struct nexthop *nh = bpf_map_lookup_elem(&nexthops, &id);
	if (!nh)
		return fwd_count(FWD_NO_ROUTE, XDP_PASS);

	/* TTL and protocol share a 16-bit word of the checksum. */
	__be16 old = *(__be16 *)&ip->ttl;
	ip->ttl--;
	csum_replace2(&ip->check, old, *(__be16 *)&ip->ttl);
	__builtin_memcpy(eth->h_source, nh->smac, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, nh->dmac, ETH_ALEN);

	if (nh->ifindex == 0 || nh->ifindex == ctx->ingress_ifindex)
		return fwd_count(FWD_FORWARDED, XDP_TX);
	return fwd_count(FWD_FORWARDED, bpf_redirect(nh->ifindex, 0));
}

#endif
