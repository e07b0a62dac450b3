// The baseline for sluice's AF_XDP benchmarks: xdpsock's rxdrop and l2fwd
// on libxdp's xsk API (libxdp loads its own redirect program), one queue,
// batches of 32, frames recycled straight from RX to FILL (rxdrop) or
// through TX and COMPLETION (l2fwd). Prints one JSON line at the end.
//
//   xsk_baseline IFNAME rxdrop|l2fwd native|skb SECONDS
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <xdp/xsk.h>

#define FRAMES 4096
#define FRAME_SIZE XSK_UMEM__DEFAULT_FRAME_SIZE
#define BATCH 32

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "xsk_baseline: %s: %s\n", what, strerror(err));
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s IFNAME rxdrop|l2fwd native|skb SECONDS\n", argv[0]);
		return 2;
	}
	const char *dev = argv[1];
	int l2fwd = strcmp(argv[2], "l2fwd") == 0;
	int skb = strcmp(argv[3], "skb") == 0;
	double seconds = atof(argv[4]);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	void *area = mmap(NULL, (size_t)FRAMES * FRAME_SIZE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (area == MAP_FAILED)
		die("mmap", errno);
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	struct xsk_umem *umem;
	int err = xsk_umem__create(&umem, area, (__u64)FRAMES * FRAME_SIZE, &fq, &cq, NULL);
	if (err)
		die("xsk_umem__create", -err);
	struct xsk_socket_config cfg = {
		.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
		.tx_size = XSK_RING_PROD__DEFAULT_NUM_DESCS,
		.xdp_flags = skb ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE,
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	struct xsk_socket *xsk;
	err = xsk_socket__create(&xsk, dev, 0, umem, &rx, &tx, &cfg);
	if (err)
		die("xsk_socket__create", -err);

	/* Half the frames in the FILL ring, the other half for TX. */
	__u32 idx;
	__u32 fill = XSK_RING_PROD__DEFAULT_NUM_DESCS;
	if (xsk_ring_prod__reserve(&fq, fill, &idx) != fill)
		die("filling the FILL ring", ENOSPC);
	for (__u32 i = 0; i < fill; i++)
		*xsk_ring_prod__fill_addr(&fq, idx++) = (__u64)i * FRAME_SIZE;
	xsk_ring_prod__submit(&fq, fill);

	unsigned long long received = 0, sent = 0, outstanding = 0;
	double start = now(), end = start + seconds;
	int fd = xsk_socket__fd(xsk);
	unsigned long polls = 0;
	while (!stop) {
		if ((++polls & 0xfff) == 0 && now() >= end)
			break;
		if (l2fwd && outstanding) {
			/* Completions go back to the FILL ring. */
			__u32 ci, fi;
			__u32 done = xsk_ring_cons__peek(&cq, BATCH, &ci);
			if (done) {
				while (xsk_ring_prod__reserve(&fq, done, &fi) != done)
					;
				for (__u32 i = 0; i < done; i++)
					*xsk_ring_prod__fill_addr(&fq, fi++) =
						*xsk_ring_cons__comp_addr(&cq, ci++);
				xsk_ring_prod__submit(&fq, done);
				xsk_ring_cons__release(&cq, done);
				outstanding -= done;
				sent += done;
			}
		}
		__u32 ri;
		__u32 n = xsk_ring_cons__peek(&rx, BATCH, &ri);
		if (!n) {
			if (xsk_ring_prod__needs_wakeup(&fq))
				recvfrom(fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
			if (l2fwd && outstanding && xsk_ring_prod__needs_wakeup(&tx))
				sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
			continue;
		}
		if (l2fwd) {
			__u32 ti;
			while (xsk_ring_prod__reserve(&tx, n, &ti) != n)
				sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
			for (__u32 i = 0; i < n; i++) {
				const struct xdp_desc *d = xsk_ring_cons__rx_desc(&rx, ri++);
				unsigned char *p = xsk_umem__get_data(area, d->addr);
				unsigned char mac[6];
				memcpy(mac, p, 6);
				memcpy(p, p + 6, 6);
				memcpy(p + 6, mac, 6);
				struct xdp_desc *t = xsk_ring_prod__tx_desc(&tx, ti++);
				t->addr = d->addr;
				t->len = d->len;
			}
			xsk_ring_prod__submit(&tx, n);
			outstanding += n;
			if (xsk_ring_prod__needs_wakeup(&tx))
				sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
		} else {
			__u32 fi;
			while (xsk_ring_prod__reserve(&fq, n, &fi) != n)
				;
			for (__u32 i = 0; i < n; i++) {
				__u64 addr = xsk_ring_cons__rx_desc(&rx, ri++)->addr;
				*xsk_ring_prod__fill_addr(&fq, fi++) = addr & ~(__u64)(FRAME_SIZE - 1);
			}
			xsk_ring_prod__submit(&fq, n);
		}
		xsk_ring_cons__release(&rx, n);
		received += n;
	}
	double took = now() - start;
	xsk_socket__delete(xsk);
	xsk_umem__delete(umem);
	printf("{\"bench\":\"%s\",\"rx_packets\":%llu,\"tx_packets\":%llu,\"seconds\":%f,"
	       "\"rx_pps\":%f,\"tx_pps\":%f}\n",
	       l2fwd ? "l2fwd" : "rxdrop", received, sent, took, received / took, sent / took);
	return 0;
}
