/* Header parsing shared by the sluice example programs.
 *
 * A cursor walks the packet; every step checks the header fits before data_end,
 * the way the verifier needs. */
#ifndef SLUICE_PARSE_H
#define SLUICE_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

struct cursor {
	void *pos;
	void *end;
};

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/* Parses Ethernet and up to two VLAN tags; returns the EtherType (network
 * order) or -1 when the frame is too short. */
static __always_inline int parse_eth(struct cursor *c, struct ethhdr **eth)
{
	struct ethhdr *e = c->pos;
	if ((void *)(e + 1) > c->end)
		return -1;
	c->pos = e + 1;
	*eth = e;
	__be16 proto = e->h_proto;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		struct vlan_hdr *v = c->pos;
		if ((void *)(v + 1) > c->end)
			return -1;
		proto = v->proto;
		c->pos = v + 1;
	}
	return proto;
}

/* Parses an IPv4 header (with options); returns the protocol or -1. */
static __always_inline int parse_ipv4(struct cursor *c, struct iphdr **ip)
{
	struct iphdr *h = c->pos;
	if ((void *)(h + 1) > c->end)
		return -1;
	int len = h->ihl * 4;
	if (len < (int)sizeof(*h) || c->pos + len > c->end)
		return -1;
	c->pos += len;
	*ip = h;
	return h->protocol;
}

/* Parses a fixed IPv6 header (no extension headers); returns the next header or -1. */
static __always_inline int parse_ipv6(struct cursor *c, struct ipv6hdr **ip6)
{
	struct ipv6hdr *h = c->pos;
	if ((void *)(h + 1) > c->end)
		return -1;
	c->pos = h + 1;
	*ip6 = h;
	return h->nexthdr;
}

static __always_inline struct udphdr *parse_udp(struct cursor *c)
{
	struct udphdr *u = c->pos;
	if ((void *)(u + 1) > c->end)
		return NULL;
	c->pos = u + 1;
	return u;
}

static __always_inline struct tcphdr *parse_tcp(struct cursor *c)
{
	struct tcphdr *t = c->pos;
	if ((void *)(t + 1) > c->end)
		return NULL;
	int len = t->doff * 4;
	if (len < (int)sizeof(*t) || c->pos + len > c->end)
		return NULL;
	c->pos += len;
	return t;
}

/* Incremental checksum update (RFC 1624) for a 16-bit field change. */
static __always_inline void csum_replace2(__sum16 *sum, __be16 old, __be16 new)
{
	__u32 s = (__u16)~*sum;
	s += (__u16)~old;
	s += new;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	*sum = ~(__u16)s;
}

/* Folds a 32-bit sum to a 16-bit ones' complement checksum. */
static __always_inline __u16 csum_fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s;
}

#endif
