// 5-tuple flow classification: IPv4 and IPv6 TCP and UDP (Ethernet, up to
// two VLAN tags; IPv6 without extension headers) into a hash map of flows
// with packet and byte counters (bytes: the whole frame, fragments
// included); a flow's first packet inserts it. A later IPv4 fragment has
// no ports: its flow has ports 0. Passes every frame.
#include "parse.h"

#define IP_OFFSET 0x1fff

struct flow_key {
	__u8 src[16]; /* IPv4: the first four bytes */
	__u8 dst[16];
	__u16 src_port; /* host order */
	__u16 dst_port;
	__u8 protocol;
	__u8 family; /* 4 or 6 */
	__u8 pad[2];
};

struct flow_counters {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, struct flow_counters);
} flow_table SEC(".maps");

/* 0: frames classified, 1: not TCP/UDP over IP (or cut short), 2: a new
 * flow the full table could not take. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} classify_stats SEC(".maps");

static __always_inline int count(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&classify_stats, &what);
	if (n)
		*n += 1;
	return XDP_PASS;
}

SEC("xdp")
int classify(struct xdp_md *ctx)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	struct flow_key k;
	struct ethhdr *eth;
	int ports = 1;

	__builtin_memset(&k, 0, sizeof(k));
	int proto = parse_eth(&c, &eth);
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip;
		if (parse_ipv4(&c, &ip) < 0)
			return count(1);
		__builtin_memcpy(k.src, &ip->saddr, 4);
		__builtin_memcpy(k.dst, &ip->daddr, 4);
		k.protocol = ip->protocol;
		k.family = 4;
		ports = !(ip->frag_off & bpf_htons(IP_OFFSET));
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6;
		if (parse_ipv6(&c, &ip6) < 0)
			return count(1);
		__builtin_memcpy(k.src, &ip6->saddr, 16);
		__builtin_memcpy(k.dst, &ip6->daddr, 16);
		k.protocol = ip6->nexthdr;
		k.family = 6;
	} else {
		return count(1);
	}
	if (k.protocol != IPPROTO_TCP && k.protocol != IPPROTO_UDP)
		return count(1);
	if (ports) {
		__u8 *p = c.pos;
		if ((void *)(p + 4) > c.end)
			return count(1);
		k.src_port = (__u16)p[0] << 8 | p[1];
		k.dst_port = (__u16)p[2] << 8 | p[3];
	}

	__u64 bytes = bpf_xdp_get_buff_len(ctx);
	struct flow_counters *v = bpf_map_lookup_elem(&flow_table, &k);
	if (!v) {
		struct flow_counters first = { 1, bytes };
		if (bpf_map_update_elem(&flow_table, &k, &first, BPF_NOEXIST) == 0)
			return count(0);
		/* Another CPU inserted it first, or the table is full. */
		v = bpf_map_lookup_elem(&flow_table, &k);
		if (!v)
			return count(2);
	}
	__sync_fetch_and_add(&v->packets, 1);
	__sync_fetch_and_add(&v->bytes, bytes);
	return count(0);
}

char _license[] SEC("license") = "GPL";
