// The xPF paper's Figure 1 (docs/performance.md, `cargo bench -p sluice
// --bench figure1`): a packet counter whose processing costs `burn`
// iterations of a small loop per packet, done either inside the filter
// (`to_user` 0: the loop, then a per-CPU count) or by user space after the
// filter copied the packet's first 64 bytes to it (`to_user` 1: a
// ring-buffer record per packet; user space runs the loop). Drops every
// frame: the experiment measures the monitor, not forwarding.
#include "parse.h"

/* Set by user space (`--set`). */
const volatile __u32 burn = 0;
const volatile __u32 to_user = 0;

#define MAX_BURN 8192
#define COPY_BYTES 64

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} copies SEC(".maps");

/* 0: packets counted in the filter, 1: packets sent to user space,
 * 2: packets lost (a full ring buffer, or a frame under 64 bytes). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} burn_stats SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&burn_stats, &which);
	if (n)
		*n += 1;
}

SEC("xdp")
int xdp_burn(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	if (to_user) {
		/* A helper may not read the packet itself: copy it into the record. */
		__u8 *r = data + COPY_BYTES <= end ? bpf_ringbuf_reserve(&copies, COPY_BYTES, 0) : 0;
		if (!r) {
			count(2);
			return XDP_DROP;
		}
		__builtin_memcpy(r, data, COPY_BYTES);
		bpf_ringbuf_submit(r, 0);
		count(1);
		return XDP_DROP;
	}
	__u64 x = end - data;
	for (__u32 i = 0; i < MAX_BURN; i++) {
		if (i >= burn)
			break;
		x = x * 31 + i;
		/* Keep every iteration: the compiler may not fold the loop. */
		asm volatile("" : "+r"(x));
	}
	count(x == 0xffffffffffffffffULL ? 2 : 0);
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
