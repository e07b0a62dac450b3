// ESP encryption (RFC 4303, transport mode, IPv4) with AES-128-CBC (RFC
// 3602): esp_3des.c with AES in place of 3DES, and 16-byte blocks and IVs.
// Every whole IPv4 datagram of at most 1500 bytes is encrypted under the one
// SA in `esp_sa` and sent back out (XDP_TX) with its Ethernet header as it
// came. No ICV (encryption only). Frames that are not IPv4, fragments,
// truncated or larger datagrams, and everything while the SA's SPI is 0,
// pass untouched; a frame that cannot grow, or an SA whose sequence numbers
// are used up, is dropped.
//
// The SA: user space writes the SPI (network order) and the 16-byte key with
// `expanded` = 0 (and `seq` = 0 for a new SA); the first packet expands the
// 44 round-key words into the map (that packet costs more) and sets
// `expanded`. The IV of each packet is the ESP header (SPI, sequence number,
// then 8 zero bytes) encrypted with the SA's key (NIST SP 800-38A appendix
// C), so it is unpredictable without the key yet the same in every engine.
// The block loop is a bpf_loop callback, one call per 16-byte block.
//
// AES (FIPS 197) in the T-table form: SubBytes, ShiftRows and MixColumns of
// a round as four lookups per column in aes_t[4][256], the last round with
// the S-box; the tables are in .rodata (include/aes_tables.h, generated from
// the standard's definition of the S-box).
#include "esp.h"
#include "aes_tables.h"

struct sa_aes {
	__be32 spi;	 /* 0: no SA, everything passes */
	__u32 expanded;	 /* 1 when rk is the schedule of key (set by the program) */
	__u64 seq;	 /* sequence numbers used so far */
	__u8 key[16];
	__u32 rk[44];	 /* round-key words, big-endian values */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sa_aes);
} esp_sa SEC(".maps");

static __always_inline __u32 aes_subword(__u32 w)
{
	return ((__u32)aes_sbox[w >> 24] << 24) | ((__u32)aes_sbox[(w >> 16) & 255] << 16) |
	       ((__u32)aes_sbox[(w >> 8) & 255] << 8) | aes_sbox[w & 255];
}

/* FIPS 197 KeyExpansion for Nk = 4, Nr = 10. */
static __always_inline void aes_schedule(struct sa_aes *sa)
{
	for (int i = 0; i < 4; i++)
		sa->rk[i] = ((__u32)sa->key[4 * i] << 24) | ((__u32)sa->key[4 * i + 1] << 16) |
			    ((__u32)sa->key[4 * i + 2] << 8) | sa->key[4 * i + 3];
	for (int i = 4; i < 44; i++) {
		__u32 t = sa->rk[i - 1];
		if (i % 4 == 0)
			t = aes_subword((t << 8) | (t >> 24)) ^ aes_rcon[i / 4 - 1];
		sa->rk[i] = sa->rk[i - 4] ^ t;
	}
}

/* One column of a middle round: column c of the state after SubBytes,
 * ShiftRows and MixColumns takes row r from column c + r. */
#define AES_COLUMN(a, b, c, d)                                                             \
	(aes_t[0][(a) >> 24] ^ aes_t[1][((b) >> 16) & 255] ^ aes_t[2][((c) >> 8) & 255] ^ \
	 aes_t[3][(d) & 255])
#define AES_LAST(a, b, c, d)                                                         \
	(((__u32)aes_sbox[(a) >> 24] << 24) | ((__u32)aes_sbox[((b) >> 16) & 255] << 16) | \
	 ((__u32)aes_sbox[((c) >> 8) & 255] << 8) | aes_sbox[(d) & 255])

/* AES-128 of one block held as four big-endian words. */
static __always_inline void aes_encrypt(const struct sa_aes *sa, __u32 s[4])
{
	__u32 s0 = s[0] ^ sa->rk[0], s1 = s[1] ^ sa->rk[1];
	__u32 s2 = s[2] ^ sa->rk[2], s3 = s[3] ^ sa->rk[3];
	for (int r = 1; r < 10; r++) {
		__u32 t0 = AES_COLUMN(s0, s1, s2, s3) ^ sa->rk[4 * r];
		__u32 t1 = AES_COLUMN(s1, s2, s3, s0) ^ sa->rk[4 * r + 1];
		__u32 t2 = AES_COLUMN(s2, s3, s0, s1) ^ sa->rk[4 * r + 2];
		__u32 t3 = AES_COLUMN(s3, s0, s1, s2) ^ sa->rk[4 * r + 3];
		s0 = t0;
		s1 = t1;
		s2 = t2;
		s3 = t3;
	}
	s[0] = AES_LAST(s0, s1, s2, s3) ^ sa->rk[40];
	s[1] = AES_LAST(s1, s2, s3, s0) ^ sa->rk[41];
	s[2] = AES_LAST(s2, s3, s0, s1) ^ sa->rk[42];
	s[3] = AES_LAST(s3, s0, s1, s2) ^ sa->rk[43];
}

struct cbc {
	struct xdp_md *ctx;
	struct sa_aes *sa;
	__u32 prev[4]; /* the last ciphertext block: the IV at first */
	__u32 off;     /* the first block's offset in the frame */
	__u32 bad;     /* a block was not in the frame (never, by construction) */
};

static long cbc_block(__u64 i, void *arg)
{
	struct cbc *c = arg;
	void *data = esp_data(c->ctx);
	void *end = esp_end(c->ctx);
	__be32 *p = data + ((c->off + i * 16) & ESP_OFF_MASK);
	if ((void *)(p + 4) > end) {
		c->bad = 1;
		return 1;
	}
	for (int k = 0; k < 4; k++)
		c->prev[k] ^= bpf_ntohl(p[k]);
	aes_encrypt(c->sa, c->prev);
	for (int k = 0; k < 4; k++)
		p[k] = bpf_htonl(c->prev[k]);
	return 0;
}

SEC("xdp")
int esp_aes_prog(struct xdp_md *ctx)
{
	struct esp_frame f;
	__u32 zero = 0;

	if (esp_parse(ctx, &f, 16))
		return XDP_PASS;
	struct sa_aes *sa = bpf_map_lookup_elem(&esp_sa, &zero);
	if (!sa || !sa->spi)
		return XDP_PASS;
	if (!sa->expanded) {
		aes_schedule(sa);
		sa->expanded = 1;
	}
	__u32 seq = esp_next_seq(&sa->seq);
	if (!seq)
		return XDP_DROP;

	struct cbc c = { .ctx = ctx, .sa = sa, .prev = { bpf_ntohl(sa->spi), seq, 0, 0 } };
	__u64 hdr = ((__u64)c.prev[0] << 32) | seq;
	aes_encrypt(sa, c.prev);
	__u64 iv0 = ((__u64)c.prev[0] << 32) | c.prev[1];
	__u64 iv1 = ((__u64)c.prev[2] << 32) | c.prev[3];
	if (esp_encap(ctx, &f, 16, hdr, iv0, iv1))
		return XDP_DROP;

	c.off = f.hdr + ESP_HDR_LEN + 16;
	bpf_loop(f.enc_len / 16, cbc_block, &c, 0);
	return c.bad ? XDP_DROP : XDP_TX;
}

char _license[] SEC("license") = "GPL";
