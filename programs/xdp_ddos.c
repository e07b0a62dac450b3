// A DDoS filter:
//   1. sources in a block list (LPM tries for IPv4 and IPv6) are dropped;
//   2. UDP to a protected port (a hash set) is dropped;
//   3. every source is rate limited by a token bucket in an LRU hash
//      (rate_pps tokens per second, at most `burst`), over the limit: dropped.
// drop_stats counts the packets of each reason.
#include "parse.h"

enum reason { PASSED, BLOCKED, PORT, RATE, NOT_IP, REASONS };

struct lpm_v4 {
	__u32 prefixlen;
	__u8 addr[4];
};

struct lpm_v6 {
	__u32 prefixlen;
	__u8 addr[16];
};

struct bucket {
	__u64 tokens; /* in thousandths of a packet */
	__u64 last_ns;
};

/* Packets per second each source may send, and the burst it may save up. */
volatile const __u64 rate_pps = 1000;
volatile const __u64 burst = 100;

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v4);
	__type(value, __u64);
} blocklist_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lpm_v6);
	__type(value, __u64);
} blocklist_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u8);
} protected_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct in6_addr);
	__type(value, struct bucket);
} rate_limit SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, REASONS);
	__type(key, __u32);
	__type(value, __u64);
} drop_stats SEC(".maps");

static __always_inline int count(__u32 reason, int action)
{
	__u64 *n = bpf_map_lookup_elem(&drop_stats, &reason);
	if (n)
		*n += 1;
	return action;
}

/* One token (1000 thousandths) per packet, refilled by elapsed time. */
static __always_inline int over_limit(struct in6_addr *src)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 cap = burst * 1000;
	struct bucket *b = bpf_map_lookup_elem(&rate_limit, src);
	if (!b) {
		struct bucket fresh = { .tokens = cap - 1000, .last_ns = now };
		bpf_map_update_elem(&rate_limit, src, &fresh, BPF_ANY);
		return 0;
	}
	__u64 tokens = b->tokens + (now - b->last_ns) * rate_pps / 1000000;
	if (tokens > cap)
		tokens = cap;
	b->last_ns = now;
	if (tokens < 1000) {
		b->tokens = tokens;
		return 1;
	}
	b->tokens = tokens - 1000;
	return 0;
}

SEC("xdp")
int xdp_ddos_prog(struct xdp_md *ctx)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	struct ethhdr *eth;
	struct in6_addr src = {};
	int l4;

	int proto = parse_eth(&c, &eth);
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip;
		l4 = parse_ipv4(&c, &ip);
		if (l4 < 0)
			return count(NOT_IP, XDP_PASS);
		struct lpm_v4 key = { .prefixlen = 32 };
		__builtin_memcpy(key.addr, &ip->saddr, 4);
		__u64 *hits = bpf_map_lookup_elem(&blocklist_v4, &key);
		if (hits) {
			__sync_fetch_and_add(hits, 1);
			return count(BLOCKED, XDP_DROP);
		}
		/* IPv4-mapped IPv6 address as the rate-limit key. */
		src.in6_u.u6_addr16[5] = 0xffff;
		src.in6_u.u6_addr32[3] = ip->saddr;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6;
		l4 = parse_ipv6(&c, &ip6);
		if (l4 < 0)
			return count(NOT_IP, XDP_PASS);
		struct lpm_v6 key = { .prefixlen = 128 };
		__builtin_memcpy(key.addr, &ip6->saddr, 16);
		__u64 *hits = bpf_map_lookup_elem(&blocklist_v6, &key);
		if (hits) {
			__sync_fetch_and_add(hits, 1);
			return count(BLOCKED, XDP_DROP);
		}
		src = ip6->saddr;
	} else {
		return count(NOT_IP, XDP_PASS);
	}

	if (l4 == IPPROTO_UDP) {
		struct udphdr *udp = parse_udp(&c);
		if (udp) {
			__u16 port = bpf_ntohs(udp->dest);
			if (bpf_map_lookup_elem(&protected_ports, &port))
				return count(PORT, XDP_DROP);
		}
	}
	if (over_limit(&src))
		return count(RATE, XDP_DROP);
	return count(PASSED, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
