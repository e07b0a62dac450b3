// Copies every readable __sk_buff field into an array, so a differential
// run compares the whole context the VM builds with the kernel's.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u64);
} fields SEC(".maps");

#define SAVE(i, v)                                              \
	do {                                                    \
		__u32 k = (i);                                  \
		__u64 x = (v);                                  \
		bpf_map_update_elem(&fields, &k, &x, BPF_ANY);  \
	} while (0)

SEC("tc")
int tc_ctx_probe(struct __sk_buff *s)
{
	SAVE(0, s->len);
	SAVE(1, s->pkt_type);
	SAVE(2, s->mark);
	SAVE(3, s->queue_mapping);
	SAVE(4, s->protocol);
	SAVE(5, s->vlan_present);
	SAVE(6, s->vlan_tci);
	SAVE(7, s->vlan_proto);
	SAVE(8, s->priority);
	SAVE(9, s->ingress_ifindex);
	SAVE(10, s->ifindex);
	SAVE(11, s->tc_index);
	SAVE(12, s->hash);
	SAVE(13, s->tc_classid);
	SAVE(14, s->napi_id);
	SAVE(15, s->data_meta - s->data);
	SAVE(16, s->tstamp);
	SAVE(17, s->wire_len);
	SAVE(18, s->gso_segs);
	SAVE(19, s->gso_size);
	SAVE(20, s->hwtstamp);
	SAVE(21, s->data_end - s->data);
	SAVE(22, s->tstamp_type);
	SAVE(23, s->cb[0] ^ s->cb[4]);
	SAVE(24, bpf_get_smp_processor_id());
	return 0; /* TC_ACT_OK */
}

char _license[] SEC("license") = "GPL";
