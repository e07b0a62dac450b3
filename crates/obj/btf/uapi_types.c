/* The types CO-RE relocations of packet programs refer to, from the Linux
 * UAPI headers: built into the obj crate as the fallback target when the
 * running kernel has no BTF (/sys/kernel/btf/vmlinux). Each type is named
 * by a global so that clang emits its BTF. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>

#define KEEP(type, name) type *sluice_keep_##name

KEEP(struct xdp_md, xdp_md);
KEEP(struct __sk_buff, sk_buff);
KEEP(struct bpf_fib_lookup, fib_lookup);
KEEP(struct bpf_sock_tuple, sock_tuple);
KEEP(struct bpf_spin_lock, spin_lock);
KEEP(struct bpf_devmap_val, devmap_val);
KEEP(struct bpf_cpumap_val, cpumap_val);
KEEP(struct ethhdr, ethhdr);
KEEP(struct iphdr, iphdr);
KEEP(struct ipv6hdr, ipv6hdr);
KEEP(struct tcphdr, tcphdr);
KEEP(struct udphdr, udphdr);
KEEP(struct in_addr, in_addr);
KEEP(struct in6_addr, in6_addr);
KEEP(enum xdp_action, xdp_action);
KEEP(enum bpf_map_type, map_type);
KEEP(enum bpf_func_id, func_id);
