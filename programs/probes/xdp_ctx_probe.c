// Copies every readable xdp_md field (and the buffer length) into an array,
// so a differential run compares the whole context with the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} fields SEC(".maps");

#define SAVE(i, v)                                              \
	do {                                                    \
		__u32 k = (i);                                  \
		__u64 x = (v);                                  \
		bpf_map_update_elem(&fields, &k, &x, BPF_ANY);  \
	} while (0)

SEC("xdp")
int xdp_ctx_probe(struct xdp_md *c)
{
	SAVE(0, c->data_end - c->data);
	SAVE(1, c->data - c->data_meta);
	SAVE(2, c->ingress_ifindex);
	SAVE(3, c->rx_queue_index);
	SAVE(4, bpf_xdp_get_buff_len(c));
	SAVE(5, bpf_get_smp_processor_id());
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
