// One array pinned by name: loading it needs a BPF filesystem.
#include "parse.h"
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} pinned_counts SEC(".maps");
SEC("xdp")
int pinned(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&pinned_counts, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
