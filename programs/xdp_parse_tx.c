// Parses Ethernet, swaps the source and destination MAC addresses and
// sends the frame back out (XDP_TX). Frames shorter than an Ethernet
// header are dropped.
#include "parse.h"

static __always_inline void swap_macs(struct ethhdr *eth)
{
	unsigned char tmp[ETH_ALEN];
	__builtin_memcpy(tmp, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, tmp, ETH_ALEN);
}

SEC("xdp")
int xdp_parse_tx_prog(struct xdp_md *ctx)
{
	struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
	struct ethhdr *eth;
	if (parse_eth(&c, &eth) < 0)
		return XDP_DROP;
	swap_macs(eth);
	return XDP_TX;
}

char _license[] SEC("license") = "GPL";
