// The kernel fast path of `sluice switch --offload xdp` (the OVS-eBPF
// paper's datapath, on XDP): the switch's megaflows, mirrored by user
// space into `flows`, forwarded here without leaving the kernel; every
// other frame goes to the port's AF_XDP socket, where the user-space
// switch looks it up in its own caches and its OpenFlow tables.
//
// The flow key is the user-space switch's (crates/switch/src/flow/key.rs),
// its first KEY_WORDS words, with the same bits at the same places. A frame
// is looked up here only when this parser gives exactly the key the
// user-space one gives and the words after KEY_WORDS would all be zero:
// Ethernet, at most one VLAN tag, and non-IP ethertypes or unfragmented
// IPv4 with TCP, UDP, SCTP, ICMP (or another protocol, without ports).
// Anything else (IPv6, ARP, fragments, frames cut short) is a miss.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define KEY_WORDS 6
#define MAX_MASKS 32
#define MAX_FLOWS 65536
#define MAX_PORTS 64
/* A port's sockets are at xsks[xsk_base + queue], xsk_base = position * 16. */
#define QUEUE_STRIDE 16

struct flow_key {
	__u32 mask; /* the mask's index in `masks` */
	__u32 pad;
	__u64 w[KEY_WORDS];
};

enum { ACT_DROP = 1, ACT_TX = 2, ACT_REDIRECT = 3 };

struct flow_action {
	__u32 kind;
	__u32 port;     /* ACT_REDIRECT: the OpenFlow port (key of `egress`) */
	__u32 out_slot; /* ACT_REDIRECT: its slot in `port_stats` */
	__u32 stats;    /* index in `stats` */
};

struct flow_stats {
	__u64 packets;
	__u64 bytes;
};

struct mask {
	__u64 w[KEY_WORDS]; /* all zero: unused */
};

struct port {
	__u32 port_no;
	__u32 slot; /* index in `port_stats` */
	__u32 xsk_base;
	__u32 pad;
};

struct port_stats {
	__u64 hits; /* frames forwarded or dropped here */
	__u64 hit_bytes;
	__u64 misses; /* frames sent to user space */
	__u64 tx_packets;
	__u64 tx_bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_FLOWS);
	__type(key, struct flow_key);
	__type(value, struct flow_action);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_MASKS);
	__type(key, __u32);
	__type(value, struct mask);
} masks SEC(".maps");

/* [0]: masks[0..n] may be in use. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} n_masks SEC(".maps");

/* Per megaflow; user space reads it through mmap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FLOWS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct flow_stats);
} stats SEC(".maps");

/* Ingress ifindex -> the switch's port. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, struct port);
} ports SEC(".maps");

/* OpenFlow port -> interface, for redirects. */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} egress SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, struct port_stats);
} port_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_PORTS * QUEUE_STRIDE);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

static __always_inline __u64 be16(const __u8 *p)
{
	return ((__u64)p[0] << 8) | p[1];
}

static __always_inline __u64 be32(const __u8 *p)
{
	return (be16(p) << 16) | be16(p + 2);
}

static __always_inline __u64 mac(const __u8 *p)
{
	return (be16(p) << 32) | be32(p + 2);
}

/* Fills w[0] (after the in_port already there) to w[5] as the user-space
 * parser does; -1 when this frame is not one this parser may decide. */
static __always_inline int extract(const __u8 *p, const __u8 *end, __u64 *w)
{
	if (p + 14 > end)
		return -1;
	__u64 type = be16(p + 12), tci = 0;
	const __u8 *ip = p + 14;
	if (type == 0x8100 || type == 0x88a8) {
		if (p + 18 > end)
			return -1;
		tci = be16(p + 14) | 0x1000;
		type = be16(p + 16);
		ip = p + 18;
	}
	if (type < 0x0600)
		type = 0x05ff;
	w[0] |= (type << 16) | tci;
	w[2] = mac(p) << 16;
	w[3] = mac(p + 6) << 16;
	if (type == 0x86dd || type == 0x0806)
		return -1;
	if (type != 0x0800)
		return 0;
	if (ip + 20 > end || ip[0] >> 4 != 4)
		return -1;
	__u32 ihl = (ip[0] & 0x0f) * 4;
	if (ihl < 20)
		return -1;
	const __u8 *l4 = ip + ihl;
	if (l4 > end)
		return -1;
	if (be16(ip + 6) & 0x3fff) /* a fragment */
		return -1;
	__u64 proto = ip[9];
	w[2] |= (proto << 8) | ip[1];
	w[3] |= (__u64)ip[8] << 8;
	w[4] = (be32(ip + 12) << 32) | be32(ip + 16);
	switch (proto) {
	case 6: /* TCP */
		if (l4 + 20 > end)
			return -1;
		w[5] = (be16(l4) << 48) | (be16(l4 + 2) << 32) |
		       ((be16(l4 + 12) & 0x0fff) << 16);
		break;
	case 17: /* UDP */
	case 132: /* SCTP */
		if (l4 + (proto == 17 ? 8 : 12) > end)
			return -1;
		w[5] = (be16(l4) << 48) | (be16(l4 + 2) << 32);
		break;
	case 1: /* ICMP */
		if (l4 + 4 > end)
			return -1;
		w[5] = ((__u64)l4[0] << 48) | ((__u64)l4[1] << 32);
		break;
	case 58: /* ICMPv6 (over IPv4 the user-space parser reads ND too) */
		return -1;
	}
	return 0;
}

static __always_inline int hit(struct flow_action *a, struct port_stats *in,
			       __u64 len)
{
	struct flow_stats *s = bpf_map_lookup_elem(&stats, &a->stats);
	if (s) {
		__sync_fetch_and_add(&s->packets, 1);
		__sync_fetch_and_add(&s->bytes, len);
	}
	in->hits++;
	in->hit_bytes += len;
	switch (a->kind) {
	case ACT_TX:
		in->tx_packets++;
		in->tx_bytes += len;
		return XDP_TX;
	case ACT_REDIRECT: {
		__u32 slot = a->out_slot;
		struct port_stats *out = bpf_map_lookup_elem(&port_stats, &slot);
		if (out) {
			out->tx_packets++;
			out->tx_bytes += len;
		}
		return bpf_redirect_map(&egress, a->port, XDP_DROP);
	}
	default:
		return XDP_DROP;
	}
}

SEC("xdp")
int sluice_switch(struct xdp_md *ctx)
{
	__u32 ifindex = ctx->ingress_ifindex;
	struct port *port = bpf_map_lookup_elem(&ports, &ifindex);
	if (!port)
		return XDP_PASS;
	__u32 slot = port->slot;
	struct port_stats *ps = bpf_map_lookup_elem(&port_stats, &slot);
	if (!ps)
		return XDP_PASS;
	const __u8 *p = (const __u8 *)(long)ctx->data;
	const __u8 *end = (const __u8 *)(long)ctx->data_end;
	__u64 len = end - p;
	struct flow_key k = {};
	k.w[0] = (__u64)port->port_no << 32;
	if (extract(p, end, k.w) == 0) {
		__u32 zero = 0;
		__u32 *n = bpf_map_lookup_elem(&n_masks, &zero);
		__u32 count = n ? *n : 0;
		if (count > MAX_MASKS)
			count = MAX_MASKS;
		for (__u32 i = 0; i < count; i++) {
			/* (a copy: the counter itself stays in a register, bounded) */
			__u32 at = i;
			struct mask *m = bpf_map_lookup_elem(&masks, &at);
			if (!m || !m->w[0])
				continue;
			struct flow_key mk = {};
			mk.mask = i;
			for (int j = 0; j < KEY_WORDS; j++)
				mk.w[j] = k.w[j] & m->w[j];
			struct flow_action *a = bpf_map_lookup_elem(&flows, &mk);
			if (a)
				return hit(a, ps, len);
		}
	}
	ps->misses++;
	return bpf_redirect_map(&xsks, port->xsk_base + ctx->rx_queue_index,
				XDP_PASS);
}

char LICENSE[] SEC("license") = "GPL";
