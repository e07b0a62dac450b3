/* The part of every compiled program that does not depend on the rules:
 * types, helpers, the counter maps' value types, the packet view (where
 * the network header is, the outer VLAN tag, what tc counts) and the
 * flow dissector flower matches on (after sluice's tc::flower::dissect,
 * itself after the kernel's net/core/flow_dissector.c). */

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed int __s32;
typedef signed long long __s64;

#define SEC(name) __attribute__((section(name), used))
#define __always_inline inline __attribute__((always_inline))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

/* The context fields read (their places as in linux/bpf.h). */
struct __sk_buff {
	__u32 len, pkt_type, mark, queue_mapping, protocol, vlan_present, vlan_tci, vlan_proto;
	__u32 priority, ingress_ifindex, ifindex, tc_index, cb[5], hash, tc_classid;
};
struct xdp_md {
	__u32 data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex;
};

static long (*bpf_clone_redirect)(void *skb, __u32 ifindex, __u64 flags) = (void *)13;
static long (*bpf_redirect)(__u32 ifindex, __u64 flags) = (void *)23;
static long (*bpf_skb_load_bytes)(const void *skb, __u32 off, void *to, __u32 len) = (void *)26;
static long (*bpf_xdp_get_buff_len)(void *xdp) = (void *)188;
static long (*bpf_xdp_load_bytes)(void *xdp, __u32 off, void *buf, __u32 len) = (void *)189;

#define BPF_MAP_TYPE_ARRAY 2
#define BPF_F_INGRESS 1
#define XDP_DROP 1
#define XDP_PASS 2

/* TC_ACT_* */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_OK 0
#define TC_ACT_RECLASSIFY 1
#define TC_ACT_SHOT 2
#define TC_ACT_PIPE 3
#define TC_ACT_STOLEN 4
#define TC_ACT_GOTO_CHAIN (2 << 28)
#define TC_ACT_EXT_VAL_MASK ((1 << 28) - 1)
/* Not a tc code: no rule matched, or its actions said `continue`. */
#define NO_MATCH 0x7fffffff
/* What a part of a long mask (a function of its own) ended with: none of
 * its rules matched, one decided (the result is set), one said `continue`,
 * a skip_sw rule sent the search to the next mask. */
#define PART_NONE 0
#define PART_DECIDED 1
#define PART_NO_MATCH 2
#define PART_NEXT_MASK 3

/* A rule's counters and an action's. */
struct rule_stats {
	__u64 packets, bytes;
};
struct action_stats {
	__u64 packets, bytes, drops;
};

/* The packet as tc sees it: the frame the program reads (its first `len`
 * bytes), where its network header is (after the Ethernet header and an
 * outer tag, which the kernel may already hold aside), the EtherType after
 * that tag, the protocol filters match (the tag's TPID when tagged), the
 * tag, and the bytes tc counts for the packet at this hook. */
struct pkt {
	__u32 len;
	__u32 network;
	__u32 mark;
	__u16 protocol;
	__u16 fproto;
	__u16 vlan_tpid;
	__u16 vlan_tci;
	__u32 tagged;
	__u64 bytes;
};

/* What a chain, a filter or a rule decided. */
struct result {
	__s32 control;
	__u32 classid;
	/* A redirect (mirred egress/ingress redirect): its device, 0 none. */
	__u32 redirect;
	__u32 redirect_flags;
};

/* Reads n (1..16) bytes at off from the start of the frame; -1 outside
 * it. The program type decides the helper. */
static __always_inline int ld(void *ctx, struct pkt *p, const int xdp, __s64 off, void *to, const __u32 n)
{
	if (off < 0 || off > 0xffff || off + n > p->len)
		return -1;
	if (xdp)
		return bpf_xdp_load_bytes(ctx, (__u32)off, to, n) ? -1 : 0;
	return bpf_skb_load_bytes(ctx, (__u32)off, to, n) ? -1 : 0;
}

static __always_inline __u16 be16(const __u8 *b)
{
	return (__u16)((b[0] << 8) | b[1]);
}

static __always_inline __u32 be32(const __u8 *b)
{
	return ((__u32)b[0] << 24) | ((__u32)b[1] << 16) | ((__u32)b[2] << 8) | b[3];
}

/* The big-endian word at off from the network header (u32's keys). */
static __always_inline int word(void *ctx, struct pkt *p, const int xdp, __s64 off, __u32 *w)
{
	__u8 b[4];
	if (ld(ctx, p, xdp, (__s64)p->network + off, b, 4))
		return -1;
	*w = be32(b);
	return 0;
}

/* Sets where the network header is and the protocols, as the kernel's
 * receive path leaves them (sluice's tc::Skb::reparse): the outer
 * 802.1Q/802.1ad tag is taken aside (or was, by the kernel: `held`). */
static __always_inline void view(void *ctx, struct pkt *p, const int xdp, int held, __u16 tpid, __u16 tci)
{
	__u8 h[18];
	p->network = p->len;
	p->protocol = 0;
	p->fproto = 0;
	p->tagged = 0;
	if (held) {
		p->tagged = 1;
		p->vlan_tpid = tpid;
		p->vlan_tci = tci;
		p->fproto = tpid;
		if (!ld(ctx, p, xdp, 12, h, 2)) {
			p->protocol = be16(h);
			p->network = 14;
		}
		return;
	}
	if (ld(ctx, p, xdp, 12, h, 2))
		return;
	__u16 ty = be16(h);
	if (ty == 0x8100 || ty == 0x88a8) {
		if (ld(ctx, p, xdp, 12, h, 6))
			return;
		p->tagged = 1;
		p->vlan_tpid = ty;
		p->vlan_tci = be16(h + 2);
		p->protocol = be16(h + 4);
		p->fproto = ty;
		p->network = 18;
		return;
	}
	p->protocol = ty;
	p->fproto = ty;
	p->network = 14;
}

/* flower's flow key: the same fields, order and sizes as sluice's
 * tc::FlowerKey (144 bytes, no padding). */
struct flow_key {
	__u32 ifindex;
	__u32 flags;
	__u16 n_proto;
	__u8 ip_proto;
	__u8 addr_type;
	__u16 vlan_tpid;
	__u16 vlan_id;
	__u16 vlan_eth_type;
	__u16 cvlan_tpid;
	__u16 cvlan_id;
	__u16 cvlan_eth_type;
	__u8 vlan_prio;
	__u8 cvlan_prio;
	__u8 dst_mac[6];
	__u8 src_mac[6];
	__u8 ip_tos;
	__u8 ip_ttl;
	__u8 src_ip[16];
	__u8 dst_ip[16];
	__u16 src_port;
	__u16 dst_port;
	__u16 tcp_flags;
	__u8 icmp_type;
	__u8 icmp_code;
	__u16 dst_port_min;
	__u16 dst_port_max;
	__u16 src_port_min;
	__u16 src_port_max;
	__u8 arp_sip[4];
	__u8 arp_tip[4];
	__u8 arp_sha[6];
	__u8 arp_tha[6];
	__u8 arp_op;
	__u8 mpls_used;
	__u8 _pad0[2];
	__u32 mpls[7];
	__u8 _pad1[4];
};

#define FLOW_FRAG 1
#define FLOW_FIRST_FRAG 2

static __always_inline void copy(__u8 *to, const __u8 *from, const int n)
{
	for (int i = 0; i < n; i++)
		to[i] = from[i];
}

/* The most tags left in the frame that are stepped over (the kernel has
 * no limit but the frame's length). */
#define MAX_TAGS 8
/* MAX_FLOW_DISSECT_HDRS: IPv6 extension headers read. */
#define MAX_HDRS 15

/* The flow key of the packet (every field flower can match). */
static __always_inline void dissect(void *ctx, struct pkt *p, const int xdp, struct flow_key *k)
{
	__u8 b[40];
	__builtin_memset(k, 0, sizeof(*k));
	if (!ld(ctx, p, xdp, 0, b, 12)) {
		copy(k->dst_mac, b, 6);
		copy(k->src_mac, b + 6, 6);
	}
	__u16 proto = p->protocol;
	__s64 nhoff = p->network;
	int tags = 0;
	if (p->tagged) {
		k->vlan_tpid = p->vlan_tpid;
		k->vlan_id = p->vlan_tci & 0xfff;
		k->vlan_prio = p->vlan_tci >> 13;
		k->vlan_eth_type = proto;
		tags = 1;
	}
	for (int i = 0; i < MAX_TAGS && (proto == 0x8100 || proto == 0x88a8); i++) {
		if (ld(ctx, p, xdp, nhoff, b, 4)) {
			k->n_proto = proto;
			return;
		}
		__u16 tpid = proto, tci = be16(b);
		proto = be16(b + 2);
		nhoff += 4;
		if (tags == 0) {
			k->vlan_tpid = tpid;
			k->vlan_id = tci & 0xfff;
			k->vlan_prio = tci >> 13;
			k->vlan_eth_type = proto;
		} else if (tags == 1) {
			k->cvlan_tpid = tpid;
			k->cvlan_id = tci & 0xfff;
			k->cvlan_prio = tci >> 13;
			k->cvlan_eth_type = proto;
		}
		tags++;
	}
	k->n_proto = proto;
	__u8 ip_proto;
	__s64 thoff = -1;
	if (proto == 0x0800) {
		if (ld(ctx, p, xdp, nhoff, b, 20))
			return;
		__u32 ihl = b[0] & 0xf;
		if (ihl < 5)
			return;
		ip_proto = b[9];
		k->ip_proto = ip_proto;
		copy(k->src_ip, b + 12, 4);
		copy(k->dst_ip, b + 16, 4);
		k->addr_type = 1;
		k->ip_tos = b[1];
		k->ip_ttl = b[8];
		__u16 frag = be16(b + 6);
		if (frag & 0x3fff) {
			k->flags |= FLOW_FRAG;
			if (!(frag & 0x1fff))
				k->flags |= FLOW_FIRST_FRAG;
		} else {
			thoff = nhoff + ihl * 4;
		}
	} else if (proto == 0x86dd) {
		if (ld(ctx, p, xdp, nhoff, b, 40))
			return;
		k->ip_tos = (__u8)(be32(b) >> 20);
		k->ip_ttl = b[7];
		copy(k->src_ip, b + 8, 16);
		copy(k->dst_ip, b + 24, 16);
		k->addr_type = 2;
		__u8 next = b[6];
		__s64 off = nhoff + 40;
		int done = 0;
		for (int i = 0; i < MAX_HDRS && !done; i++) {
			if (next == 0 || next == 43 || next == 60) {
				k->ip_proto = next;
				if (ld(ctx, p, xdp, off, b, 2))
					return;
				next = b[0];
				off += ((__s64)b[1] + 1) * 8;
			} else if (next == 44) {
				k->ip_proto = next;
				if (ld(ctx, p, xdp, off, b, 8))
					return;
				k->flags |= FLOW_FRAG;
				next = b[0];
				if (!(be16(b + 2) & 0xfff8))
					k->flags |= FLOW_FIRST_FRAG;
				done = 2;
			} else {
				done = 1;
			}
		}
		ip_proto = next;
		k->ip_proto = ip_proto;
		if (done != 2)
			thoff = off;
	} else if (proto == 0x0806 || proto == 0x8035) {
		if (ld(ctx, p, xdp, nhoff, b, 28))
			return;
		if (be16(b) != 1 || be16(b + 2) != 0x0800 || b[4] != 6 || b[5] != 4)
			return;
		k->arp_op = b[7];
		copy(k->arp_sha, b + 8, 6);
		copy(k->arp_sip, b + 14, 4);
		copy(k->arp_tha, b + 18, 6);
		copy(k->arp_tip, b + 24, 4);
		return;
	} else if (proto == 0x8847 || proto == 0x8848) {
		for (int i = 0; i < 7; i++) {
			if (ld(ctx, p, xdp, nhoff + 4 * i, b, 4))
				return;
			__u32 lse = be32(b);
			k->mpls[i] = lse;
			k->mpls_used |= 1 << i;
			if (lse & 0x100)
				return;
		}
		return;
	} else {
		return;
	}
	if (thoff < 0)
		return;
	__s64 ports = -1;
	if (ip_proto == 6 || ip_proto == 17 || ip_proto == 33 || ip_proto == 132 || ip_proto == 136)
		ports = thoff;
	else if (ip_proto == 51)
		ports = thoff + 4;
	if (ports >= 0 && !ld(ctx, p, xdp, ports, b, 4)) {
		k->src_port = be16(b);
		k->dst_port = be16(b + 2);
	}
	if (ip_proto == 6) {
		if (!ld(ctx, p, xdp, thoff, b, 20) && (b[12] >> 4) >= 5)
			k->tcp_flags = be16(b + 12) & 0x0fff;
	} else if (ip_proto == 1 || ip_proto == 58) {
		if (!ld(ctx, p, xdp, thoff, b, 2)) {
			k->icmp_type = b[0];
			k->icmp_code = b[1];
		}
	}
}
