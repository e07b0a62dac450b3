// Counts packets and bytes per IP protocol (IPv4 protocol, IPv6 next header)
// in a per-CPU array; other EtherTypes count under NOT_IP. Passes everything.
#include "parse.h"

#define NOT_IP 255

struct datarec {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct datarec);
} proto_stats SEC(".maps");

SEC("xdp")
int xdp_count_prog(struct xdp_md *ctx)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	struct ethhdr *eth;
	struct iphdr *ip;
	struct ipv6hdr *ip6;
	__u32 key = NOT_IP;

	int proto = parse_eth(&c, &eth);
	if (proto == bpf_htons(ETH_P_IP)) {
		int p = parse_ipv4(&c, &ip);
		if (p >= 0)
			key = p;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		int p = parse_ipv6(&c, &ip6);
		if (p >= 0)
			key = p;
	}

	struct datarec *rec = bpf_map_lookup_elem(&proto_stats, &key);
	if (!rec)
		return XDP_ABORTED;
	rec->packets++;
	rec->bytes += ctx->data_end - ctx->data;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
