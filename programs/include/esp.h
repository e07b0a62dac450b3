/* ESP (RFC 4303) in transport mode for IPv4, shared by esp_3des.c and
 * esp_aes.c: which frames are encrypted, the framing around the cipher
 * (ESP header, IV, trailer), the sequence number and the CBC block loop.
 *
 * A datagram becomes
 *
 *   Ethernet | IPv4 (protocol 50) | SPI | seq | IV | E(payload | padding | pad length | next header)
 *
 * with the RFC's default padding (1, 2, 3, ...) up to a whole number of
 * cipher blocks. There is no ICV: the SA is encryption-only (RFC 4303
 * section 3.2 allows it; a real SA would add an integrity algorithm). */
#ifndef SLUICE_ESP_H
#define SLUICE_ESP_H

#include "parse.h"

#define ESP_HDR_LEN 8 /* SPI and sequence number */
/* Larger datagrams pass untouched (no fragmentation here): the block loops
 * are bounded by this Ethernet MTU. */
#define ESP_MAX_DATAGRAM 1500
/* The most header bytes that move: Ethernet, two VLAN tags, IPv4 with options. */
#define ESP_MAX_HDR (14 + 8 + 60)
/* The most trailer bytes: padding (block - 1), pad length, next header. */
#define ESP_MAX_TRAILER (16 + 1)
/* Offsets into the frame are masked with this for the verifiers; every
 * offset the programs use is below it by construction. */
#define ESP_OFF_MASK 0xfff

/* The frame's start and end as opaque 64-bit pointers: clang knows ctx->data
 * is a zero-extended u32 and would otherwise do pointer arithmetic in 32 bits
 * (with masked offsets), which no verifier allows. */
static __always_inline void *esp_data(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	asm volatile("" : "+r"(data));
	return data;
}

static __always_inline void *esp_end(struct xdp_md *ctx)
{
	void *end = (void *)(long)ctx->data_end;
	asm volatile("" : "+r"(end));
	return end;
}

/* Where the parts of a frame to encrypt are (offsets from the frame's start). */
struct esp_frame {
	__u32 l3;      /* the IPv4 header */
	__u32 hdr;     /* the bytes that stay in front: Ethernet, VLANs, IPv4 header */
	__u32 pay_len; /* the IPv4 payload: what is encrypted */
	__u32 enc_len; /* payload, padding, pad length and next header: whole blocks */
	__u32 next;    /* the payload's protocol (the trailer's next header) */
};

/* Finds what to encrypt: an Ethernet frame (VLAN tags allowed) with a whole,
 * unfragmented IPv4 datagram of at most ESP_MAX_DATAGRAM bytes in one buffer.
 * Returns 0 for such a frame, -1 for everything else (which then passes). */
static __always_inline int esp_parse(struct xdp_md *ctx, struct esp_frame *f, __u32 block)
{
	void *data = esp_data(ctx);
	void *end = esp_end(ctx);
	struct cursor c = { data, end };
	struct ethhdr *eth;
	struct iphdr *ip;

	if (parse_eth(&c, &eth) != bpf_htons(ETH_P_IP))
		return -1;
	if (parse_ipv4(&c, &ip) < 0 || ip->version != 4)
		return -1;
	__u32 ihl = ip->ihl * 4;
	__u32 tot = bpf_ntohs(ip->tot_len);
	/* A fragment (MF or an offset): ESP takes whole datagrams (3.3.4). */
	if (ip->frag_off & bpf_htons(0x3fff))
		return -1;
	if (tot < ihl || tot > ESP_MAX_DATAGRAM)
		return -1;
	/* Differences of pointers taken in 64 bits (a 32-bit one is refused). */
	__u64 l3 = (void *)ip - data, len = end - data;
	asm volatile("" : "+r"(l3), "+r"(len));
	/* The datagram is all there, and the frame has no XDP fragments. */
	if (l3 + tot > len || bpf_xdp_get_buff_len(ctx) != len)
		return -1;
	f->l3 = l3;
	f->hdr = l3 + ihl;
	f->pay_len = tot - ihl;
	f->enc_len = (f->pay_len + 2 + block - 1) / block * block;
	f->next = ip->protocol;
	return 0;
}

/* The next sequence number of an SA (the first is 1), or 0 when the 32-bit
 * space is used up: then the SA must be rekeyed and nothing is sent. With
 * -mcpu=v3 (the project's build) the counter is an atomic fetch-and-add, so
 * CPUs sharing the SA never send the same number. */
static __always_inline __u32 esp_next_seq(__u64 *counter)
{
#if defined(__BPF_CPU_VERSION__) && __BPF_CPU_VERSION__ >= 3
	__u64 last = __sync_fetch_and_add(counter, 1);
#else
	__u64 last = *counter;
	*counter = last + 1;
#endif
	if (last >= 0xffffffffULL)
		return 0;
	return last + 1;
}

/* Reads and writes cipher blocks as big-endian words. */
static __always_inline __u64 esp_load64(const void *p)
{
	return bpf_be64_to_cpu(*(const __u64 *)p);
}

static __always_inline void esp_store64(void *p, __u64 v)
{
	*(__u64 *)p = bpf_cpu_to_be64(v);
}

/* Makes room and writes everything but the ciphertext: the trailer after the
 * payload (the tail grows or shrinks; Ethernet padding is dropped), then the
 * headers move forward by ESP_HDR_LEN + iv_len (the head grows) and the ESP
 * header and the IV go between the IPv4 header and the payload, whose length,
 * protocol and checksum are set. The payload is then at f->hdr + ESP_HDR_LEN
 * + iv_len, still in the clear. The ESP header (SPI, sequence number) and the
 * IV (8 or 16 bytes) come as big-endian words. Returns 0, or -1 when the
 * frame cannot grow. */
static __always_inline int esp_encap(struct xdp_md *ctx, struct esp_frame *f, __u32 iv_len,
				     __u64 esp_hdr, __u64 iv0, __u64 iv1)
{
	void *data = esp_data(ctx);
	void *end = esp_end(ctx);
	__s64 room = end - data;
	asm volatile("" : "+r"(room));
	int delta = (int)(f->hdr + f->enc_len) - (int)room;

	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return -1;
	data = esp_data(ctx);
	end = esp_end(ctx);
	__u32 n = f->enc_len - f->pay_len; /* padding + 2 */
	for (__u32 k = 0; k < ESP_MAX_TRAILER; k++) {
		if (k >= n)
			break;
		__u8 *b = data + ((f->hdr + f->pay_len + k) & ESP_OFF_MASK);
		if ((void *)(b + 1) > end)
			return -1;
		if (k + 2 < n)
			*b = k + 1; /* padding: 1, 2, 3, ... */
		else if (k + 2 == n)
			*b = n - 2; /* pad length */
		else
			*b = f->next;
	}

	__u32 shift = ESP_HDR_LEN + iv_len;
	if (bpf_xdp_adjust_head(ctx, -(int)shift))
		return -1;
	data = esp_data(ctx);
	end = esp_end(ctx);
	/* Move the headers forward, 8 bytes at a time, and the last 8 bytes
	 * again (the source is not yet overwritten there: shift >= 16). */
	__u32 hdr = f->hdr;
	for (__u32 k = 0; k < ESP_MAX_HDR; k += 8) {
		__u32 at = k + 8 <= hdr ? k : hdr - 8;
		__u64 *dst = data + (at & ESP_OFF_MASK);
		__u64 *src = data + ((at + shift) & ESP_OFF_MASK);
		if ((void *)(src + 1) > end || (void *)(dst + 1) > end)
			return -1;
		*dst = *src;
		if (k + 8 >= hdr)
			break;
	}

	__u8 *esp = data + (hdr & ESP_OFF_MASK);
	if ((void *)(esp + ESP_HDR_LEN + 16) > end)
		return -1;
	esp_store64(esp, esp_hdr);
	esp_store64(esp + ESP_HDR_LEN, iv0);
	if (iv_len == 16)
		esp_store64(esp + ESP_HDR_LEN + 8, iv1);

	struct iphdr *ip = data + (f->l3 & ESP_OFF_MASK);
	if ((void *)(ip + 1) > end)
		return -1;
	__u32 ihl = hdr - f->l3;
	ip->tot_len = bpf_htons(ihl + shift + f->enc_len);
	ip->protocol = IPPROTO_ESP;
	ip->check = 0;
	__u32 sum = 0;
	for (__u32 k = 0; k < 60; k += 2) {
		if (k >= ihl)
			break;
		__u16 *w = (void *)ip + k;
		if ((void *)(w + 1) > end)
			return -1;
		sum += *w;
	}
	ip->check = csum_fold(sum);
	return 0;
}

#endif
