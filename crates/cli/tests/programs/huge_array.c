// A load balancer's scale: an array of 50 million counters (400 MB), of
// which a packet touches one (picked by the packet's length), and a small
// array of totals.
#include "parse.h"

#define SLOTS 50000000

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} per_len SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} totals SEC(".maps");

SEC("xdp")
int huge_array(struct xdp_md *ctx)
{
	__u64 len = ctx->data_end - ctx->data;
	__u32 key = (len * 1000003) % SLOTS;
	__u64 *v = bpf_map_lookup_elem(&per_len, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	__u32 zero = 0;
	__u64 *t = bpf_map_lookup_elem(&totals, &zero);
	if (t)
		__sync_fetch_and_add(t, len);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
