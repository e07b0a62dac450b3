// An L4 load balancer in the style of Katran: packets to a virtual IP
// (VIP: address, port, protocol) go to a real server chosen by a Maglev
// consistent-hashing ring, sticky per flow through an LRU connection table,
// encapsulated in IPv4-in-IPv4 (xdp_adjust_head) and sent back out (XDP_TX)
// towards the gateway. Everything else passes.
#include "parse.h"

#define RING_SIZE 251 /* prime, as Maglev needs */
#define MAX_VIPS 16
#define MAX_REALS 256

struct vip_key {
	__be32 addr;
	__be16 port;
	__u8 proto;
	__u8 pad;
};

struct vip_meta {
	__u32 vip_num;
	__u32 flags;
};

struct real {
	__be32 addr;
};

struct flow {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct config {
	__u8 gw_mac[ETH_ALEN];
	__u8 pad[2];
	__be32 encap_src;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_VIPS);
	__type(key, struct vip_key);
	__type(value, struct vip_meta);
} vip_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_VIPS * RING_SIZE);
	__type(key, __u32);
	__type(value, __u32);
} ch_rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_REALS);
	__type(key, __u32);
	__type(value, struct real);
} reals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow);
	__type(value, __u32);
} conn_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} lb_config SEC(".maps");

enum { TO_REAL, NOT_VIP, NO_REAL, LB_STATS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LB_STATS);
	__type(key, __u32);
	__type(value, __u64);
} lb_stats SEC(".maps");

static __always_inline int count(__u32 what, int action)
{
	__u64 *n = bpf_map_lookup_elem(&lb_stats, &what);
	if (n)
		*n += 1;
	return action;
}

/* A small integer hash of the flow (the ring position). */
static __always_inline __u32 flow_hash(struct flow *f)
{
	__u32 h = 0x9e3779b9;
	h ^= f->saddr;
	h *= 0x85ebca6b;
	h ^= f->daddr;
	h *= 0xc2b2ae35;
	h ^= ((__u32)f->sport << 16) | f->dport;
	h *= 0x27d4eb2f;
	h ^= f->proto;
	h ^= h >> 15;
	return h;
}

SEC("xdp")
int xdp_lb_prog(struct xdp_md *ctx)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	struct ethhdr *eth;
	struct iphdr *ip;
	struct flow f = {};

	if (parse_eth(&c, &eth) != bpf_htons(ETH_P_IP))
		return count(NOT_VIP, XDP_PASS);
	int l4 = parse_ipv4(&c, &ip);
	if (l4 == IPPROTO_TCP) {
		struct tcphdr *tcp = parse_tcp(&c);
		if (!tcp)
			return count(NOT_VIP, XDP_PASS);
		f.sport = tcp->source;
		f.dport = tcp->dest;
	} else if (l4 == IPPROTO_UDP) {
		struct udphdr *udp = parse_udp(&c);
		if (!udp)
			return count(NOT_VIP, XDP_PASS);
		f.sport = udp->source;
		f.dport = udp->dest;
	} else {
		return count(NOT_VIP, XDP_PASS);
	}
	f.saddr = ip->saddr;
	f.daddr = ip->daddr;
	f.proto = l4;

	struct vip_key vk = { .addr = ip->daddr, .port = f.dport, .proto = l4 };
	struct vip_meta *vip = bpf_map_lookup_elem(&vip_map, &vk);
	if (!vip)
		return count(NOT_VIP, XDP_PASS);

	__u32 *known = bpf_map_lookup_elem(&conn_table, &f);
	__u32 real_idx;
	if (known) {
		real_idx = *known;
	} else {
		__u32 pos = vip->vip_num * RING_SIZE + flow_hash(&f) % RING_SIZE;
		__u32 *slot = bpf_map_lookup_elem(&ch_rings, &pos);
		if (!slot)
			return count(NO_REAL, XDP_DROP);
		real_idx = *slot;
		bpf_map_update_elem(&conn_table, &f, &real_idx, BPF_ANY);
	}
	struct real *dst = bpf_map_lookup_elem(&reals, &real_idx);
	__u32 zero = 0;
	struct config *cfg = bpf_map_lookup_elem(&lb_config, &zero);
	if (!dst || !cfg || !dst->addr)
		return count(NO_REAL, XDP_DROP);

	__u8 tos = ip->tos;
	__u16 inner_len = bpf_ntohs(ip->tot_len);
	__u8 old_dst_mac[ETH_ALEN];
	__builtin_memcpy(old_dst_mac, eth->h_dest, ETH_ALEN);

	/* Room for the outer IPv4 header. */
	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
		return count(NO_REAL, XDP_DROP);
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *neth = data;
	struct iphdr *outer = data + sizeof(*neth);
	if ((void *)(outer + 1) > data_end)
		return count(NO_REAL, XDP_DROP);

	__builtin_memcpy(neth->h_dest, cfg->gw_mac, ETH_ALEN);
	__builtin_memcpy(neth->h_source, old_dst_mac, ETH_ALEN);
	neth->h_proto = bpf_htons(ETH_P_IP);

	outer->version = 4;
	outer->ihl = 5;
	outer->tos = tos;
	outer->tot_len = bpf_htons(inner_len + sizeof(*outer));
	outer->id = 0;
	outer->frag_off = bpf_htons(0x4000); /* don't fragment */
	outer->ttl = 64;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = cfg->encap_src;
	outer->daddr = dst->addr;

	__u32 sum = 0;
	__u16 *w = (__u16 *)outer;
#pragma unroll
	for (int i = 0; i < (int)sizeof(*outer) / 2; i++)
		sum += w[i];
	outer->check = csum_fold(sum);
	return count(TO_REAL, XDP_TX);
}

char _license[] SEC("license") = "GPL";
