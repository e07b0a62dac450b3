// ESP encryption (RFC 4303, transport mode, IPv4) with 3DES-CBC (RFC 2451),
// the IPsec application of PacketBench ("Characterizing Network Processing
// Delay"): every whole IPv4 datagram of at most 1500 bytes is encrypted
// under the one SA in `esp_sa` and sent back out (XDP_TX); the Ethernet
// header is kept as it came (routing it is another program's job). No ICV
// (encryption only). Frames that are not IPv4, fragments, truncated or larger
// datagrams, and everything while the SA's SPI is 0, pass untouched; a frame
// that cannot grow, or an SA whose sequence numbers are used up, is dropped.
//
// The SA: user space writes the SPI (network order) and the 24-byte key
// K1 K2 K3 with `expanded` = 0 (and `seq` = 0 for a new SA); the first packet
// expands the key schedule into the map (that packet costs more) and sets
// `expanded`. The IV of each packet is the ESP header (SPI, sequence number)
// encrypted with the SA's key (NIST SP 800-38A appendix C: a nonce through
// the forward cipher), so it is unpredictable without the key yet the same in
// every engine. The block loop is a bpf_loop callback, one call per 8-byte
// block, so the verifiers see one block, not 190.
//
// DES (FIPS 46-3) is the SP-table form: S-boxes and P together as eight
// 64-word tables, IP and IP^-1 as nibble tables, all in .rodata
// (include/des_tables.h, generated from the standard's tables). 3DES is
// E_K3(D_K2(E_K1(x))), 48 rounds with K2's round keys reversed.
#include "esp.h"
#include "des_tables.h"

struct sa_3des {
	__be32 spi;	  /* 0: no SA, everything passes */
	__u32 expanded;	  /* 1 when ks is the schedule of key (set by the program) */
	__u64 seq;	  /* sequence numbers used so far */
	__u8 key[24];	  /* K1, K2, K3 */
	__u32 ks[48][2];  /* round keys, 6-bit groups 1357 and 2468 aligned for des_f */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sa_3des);
} esp_sa SEC(".maps");

/* FIPS 46-3 key schedule of one DES key into 16 round keys, in order or
 * (for decryption) reversed. A round key's eight 6-bit groups go into two
 * words at bits 26, 18, 10 and 2: groups 1, 3, 5, 7 and 2, 4, 6, 8. */
static __always_inline void des_schedule(const __u8 *key, __u32 (*ks)[2], int reverse)
{
	__u64 k = 0;
	for (int i = 0; i < 8; i++)
		k = (k << 8) | key[i];
	__u64 cd = 0;
	for (int j = 0; j < 56; j++)
		cd = (cd << 1) | ((k >> (64 - des_pc1[j])) & 1);
	__u32 c = cd >> 28, d = cd & 0xfffffff;
	for (int r = 0; r < 16; r++) {
		/* FIPS 46-3's shift schedule: one in rounds 1, 2, 9, 16. */
		__u32 s = (r == 0 || r == 1 || r == 8 || r == 15) ? 1 : 2;
		c = ((c << s) | (c >> (28 - s))) & 0xfffffff;
		d = ((d << s) | (d >> (28 - s))) & 0xfffffff;
		cd = ((__u64)c << 28) | d;
		__u64 sub = 0;
		for (int j = 0; j < 48; j++)
			sub = (sub << 1) | ((cd >> (56 - des_pc2[j])) & 1);
		__u32 a = 0, b = 0;
		for (int g = 0; g < 8; g += 2) {
			a |= ((sub >> (42 - 6 * g)) & 63) << (26 - 4 * g);
			b |= ((sub >> (36 - 6 * g)) & 63) << (26 - 4 * g);
		}
		int at = (reverse ? 15 - r : r) & 15;
		ks[at][0] = a;
		ks[at][1] = b;
	}
}

/* The cipher function f(R, K): E, the key, S-boxes and P. E's eight 6-bit
 * windows are R rotated right by one: groups 1, 3, 5, 7 at bits 26, 18, 10, 2
 * of it, groups 2, 4, 6, 8 there once it is rotated left by four more. */
static __always_inline __u32 des_f(__u32 r, __u32 ka, __u32 kb)
{
	__u32 y = (r >> 1) | (r << 31);
	__u32 u = y ^ ka;
	__u32 v = ((y << 4) | (y >> 28)) ^ kb;
	return des_sp[0][(u >> 26) & 63] | des_sp[2][(u >> 18) & 63] | des_sp[4][(u >> 10) & 63] |
	       des_sp[6][(u >> 2) & 63] | des_sp[1][(v >> 26) & 63] | des_sp[3][(v >> 18) & 63] |
	       des_sp[5][(v >> 10) & 63] | des_sp[7][(v >> 2) & 63];
}

static __always_inline __u64 des_permute(const __u64 (*t)[16], __u64 x)
{
	__u64 out = 0;
	for (int k = 0; k < 16; k++)
		out |= t[k][(x >> (60 - 4 * k)) & 15];
	return out;
}

/* 3DES-EDE of one block: IP, 16 rounds of each key (halves swapped between
 * the keys: the inner IP^-1 and IP cancel), IP^-1. */
static __always_inline __u64 des3_encrypt(const struct sa_3des *sa, __u64 x)
{
	x = des_permute(des_ip, x);
	__u32 l = x >> 32, r = x;
	for (int i = 0; i < 24; i++) {
		if (i == 8 || i == 16) {
			__u32 t = l;
			l = r;
			r = t;
		}
		l ^= des_f(r, sa->ks[2 * i][0], sa->ks[2 * i][1]);
		r ^= des_f(l, sa->ks[2 * i + 1][0], sa->ks[2 * i + 1][1]);
	}
	return des_permute(des_fp, ((__u64)r << 32) | l);
}

struct cbc {
	struct xdp_md *ctx;
	struct sa_3des *sa;
	__u64 prev; /* the last ciphertext block: the IV at first */
	__u32 off;  /* the first block's offset in the frame */
	__u32 bad;  /* a block was not in the frame (never, by construction) */
};

static long cbc_block(__u64 i, void *arg)
{
	struct cbc *c = arg;
	void *data = esp_data(c->ctx);
	void *end = esp_end(c->ctx);
	void *p = data + ((c->off + i * 8) & ESP_OFF_MASK);
	if (p + 8 > end) {
		c->bad = 1;
		return 1;
	}
	__u64 x = des3_encrypt(c->sa, esp_load64(p) ^ c->prev);
	esp_store64(p, x);
	c->prev = x;
	return 0;
}

SEC("xdp")
int esp_3des_prog(struct xdp_md *ctx)
{
	struct esp_frame f;
	__u32 zero = 0;

	if (esp_parse(ctx, &f, 8))
		return XDP_PASS;
	struct sa_3des *sa = bpf_map_lookup_elem(&esp_sa, &zero);
	if (!sa || !sa->spi)
		return XDP_PASS;
	if (!sa->expanded) {
		des_schedule(sa->key, &sa->ks[0], 0);
		des_schedule(sa->key + 8, &sa->ks[16], 1);
		des_schedule(sa->key + 16, &sa->ks[32], 0);
		sa->expanded = 1;
	}
	__u32 seq = esp_next_seq(&sa->seq);
	if (!seq)
		return XDP_DROP;

	__u64 hdr = ((__u64)bpf_ntohl(sa->spi) << 32) | seq;
	__u64 iv = des3_encrypt(sa, hdr);
	if (esp_encap(ctx, &f, 8, hdr, iv, 0))
		return XDP_DROP;

	struct cbc c = { .ctx = ctx, .sa = sa, .prev = iv, .off = f.hdr + ESP_HDR_LEN + 8 };
	bpf_loop(f.enc_len / 8, cbc_block, &c, 0);
	return c.bad ? XDP_DROP : XDP_TX;
}

char _license[] SEC("license") = "GPL";
