// Reaches past the first page of a multi-buffer frame: the buffer length,
// loads and stores across the linear part and the fragments, and moving
// the tail both ways. Results go into an array, the packet comes back
// changed, so a differential run compares all of it with the kernel.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} results SEC(".maps");

static __always_inline void save(__u32 k, __u64 v)
{
	bpf_map_update_elem(&results, &k, &v, BPF_ANY);
}

SEC("xdp.frags")
int xdp_frags_probe(struct xdp_md *ctx)
{
	__u64 word = 0;
	__u32 mark = 0xdeadbeef;
	__u32 len = bpf_xdp_get_buff_len(ctx);

	save(0, len);
	save(1, ctx->data_end - ctx->data);
	if (len >= 16) {
		save(2, bpf_xdp_load_bytes(ctx, len - 8, &word, 8));
		save(3, word);
	}
	/* Across the end of the first page's 3520 bytes. */
	if (len >= 3530) {
		save(4, bpf_xdp_load_bytes(ctx, 3516, &word, 8));
		save(5, word);
		bpf_xdp_store_bytes(ctx, 3518, &mark, 4);
	}
	if (len > 200)
		bpf_xdp_store_bytes(ctx, len - 100, &mark, 4);
	save(6, bpf_xdp_adjust_tail(ctx, -(int)(len % 700)));
	save(7, bpf_xdp_adjust_tail(ctx, 10));
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
