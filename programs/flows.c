// Flow accounting in the filter (issue 17; docs/monitor.md): per 5-tuple
// flow, packets, IP bytes, first and last time and the OR of TCP flags, in
// a hash map; a flow that ends (idle or active timeout noticed at its next
// packet, TCP FIN or RST) goes to user space as a record in a ring buffer;
// user space ends what is left (`sluice monitor flows --engine ebpf`).
// The same rules as sluice's own flow table (crates/monitor), frame for
// frame: Ethernet and up to two VLAN tags; IPv4 (a header longer than its
// datagram is not accounted, a total length of 0 counts what is there) or
// IPv6 (hop-by-hop, routing, destination-options and fragment headers
// walked, at most eight); ports of TCP, UDP, SCTP, UDP-Lite; ICMP's type
// and code as the destination port; a later fragment or a transport header
// cut short gives no ports. A full table cannot make room here (a hash map
// cannot name its oldest entry): the packet goes out as a one-packet
// record "lack of resources", counted. Passes every frame.
#include "parse.h"

#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_DEST 60

#define TCP_FIN 0x01
#define TCP_RST 0x04

/* flowEndReason (IPFIX). */
#define END_IDLE 1
#define END_ACTIVE 2
#define END_OF_FLOW 3
#define END_RESOURCES 5

/* Set by user space (`--set`): nanoseconds. */
const volatile __u64 idle_timeout_ns = 15000000000ULL;
const volatile __u64 active_timeout_ns = 1800000000000ULL;

struct flow_key {
	__u8 src[16]; /* IPv4: the first four bytes */
	__u8 dst[16];
	__u16 src_port;
	__u16 dst_port;
	__u8 protocol;
	__u8 family; /* 4 or 6 */
	__u8 pad[2];
};

struct flow_value {
	__u64 packets;
	__u64 bytes;
	__u64 first_ns;
	__u64 last_ns;
	__u8 tcp_flags;
	__u8 pad[7];
};

struct flow_record {
	struct flow_key key;
	struct flow_value value;
	__u32 reason;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct flow_key);
	__type(value, struct flow_value);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} ended SEC(".maps");

/* 0: packets a full table could not account (sent as records),
 * 1: records lost to a full ring buffer. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} flow_stats SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&flow_stats, &which);
	if (n)
		*n += 1;
}

static __always_inline void emit(const struct flow_key *k, const struct flow_value *v, __u32 reason)
{
	struct flow_record *r = bpf_ringbuf_reserve(&ended, sizeof(*r), 0);
	if (!r) {
		count(1);
		return;
	}
	r->key = *k;
	r->value = *v;
	r->reason = reason;
	r->pad = 0;
	bpf_ringbuf_submit(r, 0);
}

struct facts {
	__u64 bytes;
	__u8 tcp_flags;
};

/* The ports (and TCP's flags) of the transport header at `l4`. */
static __always_inline void transport(void *l4, void *end, struct flow_key *k, struct facts *f)
{
	__u8 *p = l4;
	switch (k->protocol) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_SCTP:
	case IPPROTO_UDPLITE:
		if ((void *)(p + 4) <= end) {
			k->src_port = (__u16)p[0] << 8 | p[1];
			k->dst_port = (__u16)p[2] << 8 | p[3];
		}
		if (k->protocol == IPPROTO_TCP && (void *)(p + 14) <= end)
			f->tcp_flags = p[13];
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if ((void *)(p + 2) <= end)
			k->dst_port = (__u16)p[0] << 8 | p[1];
		break;
	}
}

/* 0 and the key and facts for an IPv4 datagram at `ip`; -1 if none. */
static __always_inline int ipv4(void *ip, void *end, struct flow_key *k, struct facts *f)
{
	struct iphdr *h = ip;
	if ((void *)(h + 1) > end || h->version != 4 || h->ihl < 5)
		return -1;
	__u32 ihl = h->ihl * 4;
	__u32 len = bpf_ntohs(h->tot_len);
	if (len == 0)
		len = end - ip;
	else if (len < ihl)
		return -1;
	f->bytes = len;
	k->family = 4;
	k->protocol = h->protocol;
	__builtin_memcpy(k->src, &h->saddr, 4);
	__builtin_memcpy(k->dst, &h->daddr, 4);
	if (bpf_ntohs(h->frag_off) & 0x1fff)
		return 0;
	void *l4 = ip + ihl;
	if (l4 <= end)
		transport(l4, end, k, f);
	return 0;
}

/* 0 and the key and facts for an IPv6 datagram at `ip`; -1 if none. */
static __always_inline int ipv6(void *ip, void *end, struct flow_key *k, struct facts *f)
{
	struct ipv6hdr *h = ip;
	if ((void *)(h + 1) > end || h->version != 6)
		return -1;
	__u32 plen = bpf_ntohs(h->payload_len);
	f->bytes = plen ? plen + 40 : (__u64)(end - ip);
	k->family = 6;
	__builtin_memcpy(k->src, &h->saddr, 16);
	__builtin_memcpy(k->dst, &h->daddr, 16);
	__u8 next = h->nexthdr;
	__u8 *at = (__u8 *)(h + 1);
	int later = 0;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		if (next == NEXTHDR_HOP || next == NEXTHDR_ROUTING || next == NEXTHDR_DEST) {
			if ((void *)(at + 2) > end)
				return -1;
			next = at[0];
			at += ((__u32)at[1] + 1) * 8;
		} else if (next == NEXTHDR_FRAGMENT) {
			if ((void *)(at + 8) > end)
				return -1;
			next = at[0];
			later = (((__u16)at[2] << 8 | at[3]) >> 3) != 0;
			at += 8;
		} else {
			break;
		}
	}
	k->protocol = next;
	if (!later && (void *)at <= end)
		transport(at, end, k, f);
	return 0;
}

SEC("xdp")
int xdp_flows(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct cursor c = { data, end };
	struct ethhdr *eth;
	struct flow_key k = {};
	struct facts f = {};
	int proto = parse_eth(&c, &eth);
	int ok = -1;
	if (proto == bpf_htons(ETH_P_IP))
		ok = ipv4(c.pos, end, &k, &f);
	else if (proto == bpf_htons(ETH_P_IPV6))
		ok = ipv6(c.pos, end, &k, &f);
	if (ok < 0)
		return XDP_PASS;

	__u64 now = bpf_ktime_get_ns();
	struct flow_value *v = bpf_map_lookup_elem(&flows, &k);
	if (v && (now - v->last_ns >= idle_timeout_ns || now - v->first_ns >= active_timeout_ns)) {
		emit(&k, v, now - v->last_ns >= idle_timeout_ns ? END_IDLE : END_ACTIVE);
		v->packets = 0;
		v->bytes = 0;
		v->first_ns = now;
		v->tcp_flags = 0;
	}
	if (!v) {
		struct flow_value fresh = { .first_ns = now, .last_ns = now };
		if (bpf_map_update_elem(&flows, &k, &fresh, BPF_NOEXIST) == 0)
			v = bpf_map_lookup_elem(&flows, &k);
		if (!v) {
			/* A full table: this packet as a record of its own. */
			fresh.packets = 1;
			fresh.bytes = f.bytes;
			fresh.tcp_flags = f.tcp_flags;
			count(0);
			emit(&k, &fresh, END_RESOURCES);
			return XDP_PASS;
		}
	}
	__sync_fetch_and_add(&v->packets, 1);
	__sync_fetch_and_add(&v->bytes, f.bytes);
	if (now > v->last_ns)
		v->last_ns = now;
	v->tcp_flags |= f.tcp_flags;
	if (k.protocol == IPPROTO_TCP && (f.tcp_flags & (TCP_FIN | TCP_RST))) {
		emit(&k, v, END_OF_FLOW);
		bpf_map_delete_elem(&flows, &k);
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
