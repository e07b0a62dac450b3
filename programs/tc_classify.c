// A tc classifier in direct-action mode:
//   - TCP to port 23 (telnet) is dropped (TC_ACT_SHOT);
//   - skb->mark gets 0x100 | IP protocol, skb->tc_classid gets 1:(DSCP + 1)
//     (the kernel keeps its minor; the filter's classid gives the major);
//   - DSCP CS1 (low priority, 8) is cleared to 0 in IPv4 headers, rewriting
//     the header with bpf_skb_store_bytes and fixing its checksum with
//     bpf_l3_csum_replace.
// class_stats counts packets per DSCP value. Everything else: TC_ACT_OK.
#include "parse.h"
#include <linux/pkt_cls.h>

#define DSCP_CS1 8

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} class_stats SEC(".maps");

SEC("tc")
int tc_classify_prog(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	struct cursor c = { data, (void *)(long)skb->data_end };
	struct ethhdr *eth;
	struct iphdr *ip = NULL;
	__u8 dscp;
	int l4;
	int proto = parse_eth(&c, &eth);

	if (proto == bpf_htons(ETH_P_IP)) {
		l4 = parse_ipv4(&c, &ip);
		if (l4 < 0)
			return TC_ACT_OK;
		dscp = ip->tos >> 2;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6;
		l4 = parse_ipv6(&c, &ip6);
		if (l4 < 0)
			return TC_ACT_OK;
		dscp = ((ip6->priority << 4) | (ip6->flow_lbl[0] >> 4)) >> 2;
	} else {
		return TC_ACT_OK;
	}

	__u32 key = dscp;
	__u64 *n = bpf_map_lookup_elem(&class_stats, &key);
	if (n)
		*n += 1;

	if (l4 == IPPROTO_TCP) {
		struct tcphdr *tcp = parse_tcp(&c);
		if (tcp && tcp->dest == bpf_htons(23))
			return TC_ACT_SHOT;
	}
	skb->mark = 0x100 | l4;
	skb->tc_classid = TC_H_MAKE(1 << 16, dscp + 1);

	if (ip && dscp == DSCP_CS1) {
		/* Version/IHL and TOS share the header's first 16-bit word. */
		__u32 off = ((void *)ip - data) & 0x3f;
		__be16 old = *(__be16 *)ip;
		__u8 tos = ip->tos & 0x3;
		__be16 new = (old & bpf_htons(0xff00)) | bpf_htons(tos);
		bpf_skb_store_bytes(skb, off + 1, &tos, 1, 0);
		bpf_l3_csum_replace(skb, off + offsetof(struct iphdr, check), old, new, 2);
	}
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
