// Trajectory sampling in the filter (Duffield and Grossglauser; issue 17;
// docs/monitor.md): every measurement point hashes the part of a packet
// that does not change in flight and samples the packet when
// h(x) mod A < B, so all points sample the same packets. A second hash,
// g, over the packet's flow (addresses, protocol, ports) labels it. A
// sampled packet goes to user space as a record (label, h(x), time) in a
// ring buffer, preceded, the first time its label is seen, by a flow
// record (label, 5-tuple). The same rules as crates/monitor/src/sample.rs
// (the reference) and programs/xpf/sample.s, word for word:
//
//   h's words: IPv4: the first header word without the TOS byte, the
//   second (identification, flags, fragment offset), the third with the
//   protocol only (no TTL, no checksum), source, destination; IPv6: the
//   first word's version only (no traffic class, no flow label), the
//   second without the hop limit, source, destination (8 words); then
//   the first 16 bytes after the fixed header (IPv4 options skipped) that
//   lie inside both the frame and the datagram's length, as big-endian
//   words, a last partial word padded with zeros.
//   g's words: family << 8 | protocol, source, destination, and the ports
//   (sport << 16 | dport; ICMP's type << 8 | code) or 0.
//   A hash: s = seed; per word s = (s ^ w) * mul, s ^= s >> 15; then
//   murmur3's 32-bit finalizer. The label 0 is made 1 (0 marks an empty
//   slot in the xPF table).
//
// A and B are `.rodata` globals (`sample_a`, `sample_b`). The labels seen
// are kept in a hash table in an array map of `label_mask + 1` slots (a
// power of two, set by user space with the map's size): a label lives in
// one of the PROBES slots from label & label_mask on; a label that finds
// neither itself nor an empty slot there is not remembered: its flow
// record is sent anyway, every time, and counted. (The same table as the
// xPF program's and the reference's, so all agree when it fills. Two CPUs
// taking the same empty slot at once may send a flow record twice.)
// Passes every frame.
#include "parse.h"

#define H_SEED 0x243f6a88u
#define H_MUL 0x9e3779b1u
#define G_SEED 0xb7e15162u
#define G_MUL 0x2545f491u

#define PAYLOAD_BYTES 16
#define PROBES 8

#define RECORD_SAMPLE 1
#define RECORD_FLOW 2

/* Set by user space (`--set`): sample when h mod sample_a < sample_b. */
const volatile __u32 sample_a = 100;
const volatile __u32 sample_b = 1;
/* The label table's slots - 1 (the map's size - 1). */
const volatile __u32 label_mask = 4095;

struct sample_record {
	__u32 kind; /* RECORD_SAMPLE */
	__u32 label;
	__u32 hash;
	__u32 pad;
	__u64 time_ns;
};

struct flow_record {
	__u32 kind; /* RECORD_FLOW */
	__u32 label;
	__u8 src[16]; /* IPv4: the first four bytes */
	__u8 dst[16];
	__u16 src_port;
	__u16 dst_port;
	__u8 protocol;
	__u8 family; /* 4 or 6 */
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} labels SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} samples SEC(".maps");

/* 0: IP packets hashed, 1: packets sampled, 2: flow records sent,
 * 3: flow records a full label map could not remember (sent anyway),
 * 4: records lost to a full ring buffer. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, __u64);
} sample_stats SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&sample_stats, &which);
	if (n)
		*n += 1;
}

static __always_inline __u32 step(__u32 s, __u32 w, __u32 mul)
{
	s = (s ^ w) * mul;
	return s ^ (s >> 15);
}

static __always_inline __u32 finish(__u32 s)
{
	s ^= s >> 16;
	s *= 0x85ebca6bu;
	s ^= s >> 13;
	s *= 0xc2b2ae35u;
	s ^= s >> 16;
	return s;
}

static __always_inline __u32 be32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

struct facts {
	__u32 h; /* the packet hash, so far */
	__u32 g; /* the flow hash, so far */
	struct flow_record flow;
};

/* Mixes the payload words at `l4` (`room` bytes of the datagram there)
 * into h, and (`ports`: not a later fragment) the ports into the flow. */
static __always_inline void payload(__u8 *l4, void *end, int room, int ports, struct facts *f)
{
	__u32 h = f->h;
	if (room > PAYLOAD_BYTES)
		room = PAYLOAD_BYTES;
#pragma unroll
	for (int i = 0; i < PAYLOAD_BYTES / 4; i++) {
		if (4 * i >= room)
			break;
		__u32 w = 0;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			if (4 * i + j >= room || (void *)(l4 + 4 * i + j + 1) > end)
				break;
			w |= (__u32)l4[4 * i + j] << (24 - 8 * j);
		}
		h = step(h, w, H_MUL);
	}
	f->h = h;
	if (!ports)
		return;
	switch (f->flow.protocol) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_SCTP:
	case IPPROTO_UDPLITE:
		if (room >= 4 && (void *)(l4 + 4) <= end) {
			f->flow.src_port = (__u16)l4[0] << 8 | l4[1];
			f->flow.dst_port = (__u16)l4[2] << 8 | l4[3];
		}
		break;
	case IPPROTO_ICMP:
	case IPPROTO_ICMPV6:
		if (room >= 2 && (void *)(l4 + 2) <= end)
			f->flow.dst_port = (__u16)l4[0] << 8 | l4[1];
		break;
	}
}

/* 0 with the facts of an IPv4 datagram at `ip`; -1 if none. */
static __always_inline int ipv4(__u8 *ip, void *end, struct facts *f)
{
	if ((void *)(ip + 20) > end || ip[0] >> 4 != 4 || (ip[0] & 15) < 5)
		return -1;
	__u32 h = H_SEED;
	h = step(h, be32(ip) & 0xff00ffffu, H_MUL);
	h = step(h, be32(ip + 4), H_MUL);
	h = step(h, be32(ip + 8) & 0x00ff0000u, H_MUL);
	h = step(h, be32(ip + 12), H_MUL);
	h = step(h, be32(ip + 16), H_MUL);
	f->h = h;
	f->flow.family = 4;
	f->flow.protocol = ip[9];
	__builtin_memcpy(f->flow.src, ip + 12, 4);
	__builtin_memcpy(f->flow.dst, ip + 16, 4);
	int ihl = (ip[0] & 15) * 4;
	int len = (int)((__u32)ip[2] << 8 | ip[3]);
	int frame = (int)((long)end - (long)ip);
	if (len == 0 || len > frame)
		len = frame;
	/* A later fragment has no ports: its payload is hashed, no more. */
	payload(ip + ihl, end, len - ihl, !((ip[6] & 0x1f) | ip[7]), f);
	return 0;
}

/* 0 with the facts of an IPv6 datagram at `ip`; -1 if none. */
static __always_inline int ipv6(__u8 *ip, void *end, struct facts *f)
{
	if ((void *)(ip + 40) > end || ip[0] >> 4 != 6)
		return -1;
	__u32 h = H_SEED;
	h = step(h, be32(ip) & 0xf0000000u, H_MUL);
	h = step(h, be32(ip + 4) & 0xffffff00u, H_MUL);
#pragma unroll
	for (int i = 8; i < 40; i += 4)
		h = step(h, be32(ip + i), H_MUL);
	f->h = h;
	f->flow.family = 6;
	f->flow.protocol = ip[6];
	__builtin_memcpy(f->flow.src, ip + 8, 16);
	__builtin_memcpy(f->flow.dst, ip + 24, 16);
	int plen = (int)((__u32)ip[4] << 8 | ip[5]);
	int frame = (int)((long)end - (long)ip);
	int len = plen + 40;
	if (plen == 0 || len > frame)
		len = frame;
	payload(ip + 40, end, len - 40, 1, f);
	return 0;
}

/* The flow hash of the flow record's fields. */
static __always_inline __u32 label(const struct flow_record *r)
{
	__u32 g = G_SEED;
	g = step(g, (__u32)r->family << 8 | r->protocol, G_MUL);
	int words = r->family == 4 ? 1 : 4;
#pragma unroll
	for (int i = 0; i < 4; i++)
		if (i < words)
			g = step(g, be32(r->src + 4 * i), G_MUL);
#pragma unroll
	for (int i = 0; i < 4; i++)
		if (i < words)
			g = step(g, be32(r->dst + 4 * i), G_MUL);
	g = step(g, (__u32)r->src_port << 16 | r->dst_port, G_MUL);
	g = finish(g);
	return g ? g : 1;
}

SEC("xdp")
int xdp_sample(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct cursor c = { data, end };
	struct ethhdr *eth;
	struct facts f = {};
	int proto = parse_eth(&c, &eth);
	int ok = -1;
	if (proto == bpf_htons(ETH_P_IP))
		ok = ipv4(c.pos, end, &f);
	else if (proto == bpf_htons(ETH_P_IPV6))
		ok = ipv6(c.pos, end, &f);
	if (ok < 0)
		return XDP_PASS;
	count(0);
	__u32 h = finish(f.h);
	if (sample_a == 0 || h % sample_a >= sample_b)
		return XDP_PASS;
	__u64 now = bpf_ktime_get_ns();
	count(1);
	__u32 l = label(&f.flow);
	int seen = 0;
	__u32 *empty = NULL;
#pragma unroll
	for (int i = 0; i < PROBES; i++) {
		__u32 at = (l + i) & label_mask;
		__u32 *slot = bpf_map_lookup_elem(&labels, &at);
		if (!slot)
			break;
		if (*slot == l) {
			seen = 1;
			break;
		}
		if (*slot == 0) {
			empty = slot;
			break;
		}
	}
	if (!seen) {
		if (empty)
			*empty = l;
		else
			count(3);
		struct flow_record *r = bpf_ringbuf_reserve(&samples, sizeof(*r), 0);
		if (r) {
			*r = f.flow;
			r->kind = RECORD_FLOW;
			r->label = l;
			bpf_ringbuf_submit(r, 0);
			count(2);
		} else {
			count(4);
		}
	}
	struct sample_record *s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		count(4);
		return XDP_PASS;
	}
	s->kind = RECORD_SAMPLE;
	s->label = l;
	s->hash = h;
	s->pad = 0;
	s->time_ns = now;
	bpf_ringbuf_submit(s, 0);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
