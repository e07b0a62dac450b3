// Passive RTT in the filter (issue 17; docs/monitor.md "Passive RTT"): per
// TCP flow, the xPF paper's method (a SYN's sequence number + 1 seen in the
// first ACK of the same flow: the handshake's RTT) and pping's (a TSval seen
// in one direction, echoed as TSecr in the other). The same rules as
// sluice's reference (crates/monitor/src/rtt.rs), frame for frame:
// Ethernet and up to two VLAN tags; IPv4 or IPv6 (extension headers walked,
// at most eight; a later fragment is no segment); TCP with its 20-byte
// header; at most ten options walked within the header for the timestamp.
// Entries older than max_age_ns count as absent (user space also deletes
// them every second). Each RTT goes to user space as a ring-buffer record
// and into the flow's statistics (count, sum, min, max, log2 histogram of
// microseconds). A full table cannot keep what it should: counted in
// rtt_counters, never silent. Passes every frame.
#include "parse.h"

#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_DEST 60

#define TCP_SYN 0x02
#define TCP_ACK 0x10

#define METHOD_HANDSHAKE 1
#define METHOD_TIMESTAMP 2

#define BUCKETS 32

/* Set by user space: nanoseconds (pping's tsvalMaxAge). */
const volatile __u64 max_age_ns = 10000000000ULL;

struct rtt_key {
	__u8 src[16]; /* IPv4: the first four bytes */
	__u8 dst[16];
	__u16 src_port;
	__u16 dst_port;
	__u8 protocol;
	__u8 family; /* 4 or 6 */
	__u8 method; /* 0 in the SYN and TSval tables */
	__u8 pad;
};

struct ts_key {
	struct rtt_key flow;
	__u32 tsval;
};

struct syn_value {
	__u64 time_ns;
	__u32 seq;
	__u32 pad;
};

struct ts_value {
	__u64 time_ns;
	__u64 used;
};

struct rtt_stats {
	__u64 count;
	__u64 sum_ns;
	__u64 min_ns;
	__u64 max_ns;
	__u32 hist[BUCKETS];
};

struct rtt_record {
	struct rtt_key key; /* method set */
	__u64 rtt_ns;
	__u64 time_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct rtt_key);
	__type(value, struct syn_value);
} rtt_syns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct ts_key);
	__type(value, struct ts_value);
} rtt_tsvals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct rtt_key);
	__type(value, struct rtt_stats);
} rtt_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} rtt_samples SEC(".maps");

/* 0: SYNs a full table could not keep, 1: TSvals, 2: samples a full flow
 * table could not add, 3: records lost to a full ring buffer. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} rtt_counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&rtt_counters, &which);
	if (n)
		*n += 1;
}

static __always_inline __u32 bucket(__u64 rtt_ns)
{
	__u64 us = rtt_ns / 1000;
	__u32 b = 0;
	if (us >> 32) {
		us >>= 32;
		b += 32;
	}
	if (us >> 16) {
		us >>= 16;
		b += 16;
	}
	if (us >> 8) {
		us >>= 8;
		b += 8;
	}
	if (us >> 4) {
		us >>= 4;
		b += 4;
	}
	if (us >> 2) {
		us >>= 2;
		b += 2;
	}
	if (us >> 1) {
		us >>= 1;
		b += 1;
	}
	b += us; /* the bit length */
	return b < BUCKETS ? b : BUCKETS - 1;
}

/* One sample for the flow `k` (of the completing packet) by `method`. */
static __always_inline void sample(const struct rtt_key *k, __u8 method, __u64 then, __u64 now)
{
	if (now < then)
		return;
	__u64 rtt = now - then;
	struct rtt_key sk = *k;
	sk.method = method;
	struct rtt_stats *st = bpf_map_lookup_elem(&rtt_flows, &sk);
	if (!st) {
		struct rtt_stats fresh = { .min_ns = ~0ULL };
		if (bpf_map_update_elem(&rtt_flows, &sk, &fresh, BPF_NOEXIST) == 0)
			st = bpf_map_lookup_elem(&rtt_flows, &sk);
	}
	if (st) {
		st->count += 1;
		st->sum_ns += rtt;
		if (rtt < st->min_ns)
			st->min_ns = rtt;
		if (rtt > st->max_ns)
			st->max_ns = rtt;
		__u32 b = bucket(rtt);
		if (b < BUCKETS)
			st->hist[b] += 1;
	} else {
		count(2);
	}
	struct rtt_record *r = bpf_ringbuf_reserve(&rtt_samples, sizeof(*r), 0);
	if (!r) {
		count(3);
		return;
	}
	r->key = sk;
	r->rtt_ns = rtt;
	r->time_ns = now;
	bpf_ringbuf_submit(r, 0);
}

static __always_inline __u32 be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/* Options walked at most (pping's eBPF version walks 10). */
#define MAX_OPTIONS 10

/* The timestamp option of the TCP header at `off` in the packet, as
 * TSval << 32 | TSecr; 0 when there is none (a TSval of 0 is ignored
 * anyway). A function of its own (global), so that the kernel's verifier
 * walks its loop once rather than on every path of the headers before. */
__attribute__((noinline)) __u64 tcp_timestamp(struct xdp_md *ctx, __u32 off)
{
	__u8 *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	if (off > 4096)
		return 0;
	__u8 *t = data + off;
	if ((void *)(t + 20) > end)
		return 0;
	__u32 doff = (t[12] >> 4) * 4;
	__u8 *pos = t + 20;
	__u8 *opt_end = t + doff;
	for (int i = 0; i < MAX_OPTIONS; i++) {
		if (pos >= opt_end || (void *)(pos + 1) > end)
			break;
		__u8 kind = pos[0];
		if (kind == 0)
			break;
		if (kind == 1) {
			pos++;
			continue;
		}
		if (pos + 2 > opt_end || (void *)(pos + 2) > end)
			break;
		__u8 len = pos[1];
		if (len < 2)
			break;
		if (kind == 8 && len == 10) {
			if (pos + 10 > opt_end || (void *)(pos + 10) > end)
				break;
			return (__u64)be32(pos + 2) << 32 | be32(pos + 6);
		}
		pos += len;
	}
	return 0;
}

/* The flow and TCP header of an IPv4 datagram at `ip`; -1 if none. */
static __always_inline void *ipv4(void *ip, void *end, struct rtt_key *k)
{
	struct iphdr *h = ip;
	if ((void *)(h + 1) > end || h->version != 4 || h->ihl < 5)
		return 0;
	__u32 ihl = h->ihl * 4;
	__u32 len = bpf_ntohs(h->tot_len);
	if ((len != 0 && len < ihl) || h->protocol != IPPROTO_TCP)
		return 0;
	if (bpf_ntohs(h->frag_off) & 0x1fff)
		return 0;
	k->family = 4;
	k->protocol = IPPROTO_TCP;
	__builtin_memcpy(k->src, &h->saddr, 4);
	__builtin_memcpy(k->dst, &h->daddr, 4);
	return ip + ihl;
}

/* The flow and TCP header of an IPv6 datagram at `ip`; 0 if none. */
static __always_inline void *ipv6(void *ip, void *end, struct rtt_key *k)
{
	struct ipv6hdr *h = ip;
	if ((void *)(h + 1) > end || h->version != 6)
		return 0;
	__u8 next = h->nexthdr;
	__u8 *at = (__u8 *)(h + 1);
#pragma unroll
	for (int i = 0; i < 8; i++) {
		if (next == NEXTHDR_HOP || next == NEXTHDR_ROUTING || next == NEXTHDR_DEST) {
			if ((void *)(at + 2) > end)
				return 0;
			next = at[0];
			at += ((__u32)at[1] + 1) * 8;
		} else if (next == NEXTHDR_FRAGMENT) {
			if ((void *)(at + 8) > end)
				return 0;
			if (((__u16)at[2] << 8 | at[3]) >> 3)
				return 0;
			next = at[0];
			at += 8;
		} else {
			break;
		}
	}
	if (next != IPPROTO_TCP)
		return 0;
	k->family = 6;
	k->protocol = IPPROTO_TCP;
	__builtin_memcpy(k->src, &h->saddr, 16);
	__builtin_memcpy(k->dst, &h->daddr, 16);
	return at;
}

SEC("xdp")
int xdp_rtt(struct xdp_md *ctx)
{
	/* One clock reading per packet, first (sluice's reference keeps the
	 * same clock: strictly monotonic, one tick per packet). */
	__u64 now = bpf_ktime_get_ns();
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct cursor c = { data, end };
	struct ethhdr *eth;
	struct rtt_key k = {};
	int proto = parse_eth(&c, &eth);
	void *l4 = 0;
	if (proto == bpf_htons(ETH_P_IP))
		l4 = ipv4(c.pos, end, &k);
	else if (proto == bpf_htons(ETH_P_IPV6))
		l4 = ipv6(c.pos, end, &k);
	if (!l4 || l4 > end)
		return XDP_PASS;
	__u8 *t = l4;
	if ((void *)(t + 20) > end || (t[12] >> 4) < 5)
		return XDP_PASS;
	__u32 seq = be32(t + 4);
	__u8 flags = t[13];
	k.src_port = (__u16)t[0] << 8 | t[1];
	k.dst_port = (__u16)t[2] << 8 | t[3];
	__u64 ts = tcp_timestamp(ctx, (__u32)((void *)t - data));
	__u32 tsval = ts >> 32, tsecr = (__u32)ts;

	if ((flags & (TCP_SYN | TCP_ACK)) == TCP_SYN) {
		struct syn_value v = { .time_ns = now, .seq = seq };
		if (bpf_map_update_elem(&rtt_syns, &k, &v, BPF_ANY) != 0)
			count(0);
	} else if ((flags & (TCP_SYN | TCP_ACK)) == TCP_ACK) {
		struct syn_value *v = bpf_map_lookup_elem(&rtt_syns, &k);
		if (v && v->seq + 1 == seq && now - v->time_ns <= max_age_ns) {
			__u64 then = v->time_ns;
			bpf_map_delete_elem(&rtt_syns, &k);
			sample(&k, METHOD_HANDSHAKE, then, now);
		}
	}
	if (tsval == 0 || (tsecr == 0 && flags != TCP_SYN))
		return XDP_PASS;

	struct ts_key tk = { .flow = k, .tsval = tsval };
	struct ts_value *tv = bpf_map_lookup_elem(&rtt_tsvals, &tk);
	if (!tv || now - tv->time_ns > max_age_ns) {
		struct ts_value fresh = { .time_ns = now, .used = 0 };
		if (bpf_map_update_elem(&rtt_tsvals, &tk, &fresh, BPF_ANY) != 0)
			count(1);
	}
	struct ts_key echo = { .tsval = tsecr };
	__builtin_memcpy(echo.flow.src, k.dst, 16);
	__builtin_memcpy(echo.flow.dst, k.src, 16);
	echo.flow.src_port = k.dst_port;
	echo.flow.dst_port = k.src_port;
	echo.flow.protocol = k.protocol;
	echo.flow.family = k.family;
	struct ts_value *ev = bpf_map_lookup_elem(&rtt_tsvals, &echo);
	if (ev && !ev->used && now - ev->time_ns <= max_age_ns) {
		ev->used = 1;
		sample(&k, METHOD_TIMESTAMP, ev->time_ns, now);
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
