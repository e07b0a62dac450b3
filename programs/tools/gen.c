// The frame source of `sluice gen`: run by BPF_PROG_TEST_RUN in live-frames
// mode (BPF_F_TEST_XDP_LIVE_FRAMES), it redirects each frame out of
// `ifindex`. Frames of different flows differ only in their first `prefix`
// bytes (headers and checksums): those come from the `templates` map, one
// per flow, visited round-robin as `sluice run --gen` does.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define TEMPLATE_BYTES 128

struct template {
	__u8 bytes[TEMPLATE_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the flow count before loading */
	__type(key, __u32);
	__type(value, struct template);
} templates SEC(".maps");

volatile const __u32 ifindex = 0;
volatile const __u32 n_templates = 1;
volatile const __u32 prefix = 0; /* 0: every frame is the same */

__u64 frames; /* frames handled so far */

SEC("xdp")
int sluice_gen(struct xdp_md *ctx)
{
	__u64 n = frames++;

	if (prefix > 0 && prefix <= TEMPLATE_BYTES && n_templates > 0) {
		__u32 i = n % n_templates;
		struct template *t = bpf_map_lookup_elem(&templates, &i);
		if (!t)
			return XDP_ABORTED;
		if (bpf_xdp_store_bytes(ctx, 0, t->bytes, prefix))
			return XDP_ABORTED;
	}
	return bpf_redirect(ifindex, 0);
}

char _license[] SEC("license") = "GPL";
