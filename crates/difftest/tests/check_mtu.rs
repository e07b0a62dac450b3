//! `bpf_check_mtu` of tc and XDP programs against the kernel: the packet's
//! device (loopback in the comparison), a given L3 length, growth past the
//! MTU, an unknown device, bad flags.

use difftest::{Comparison, Differ};
use runtime::{Hook, Image, LoadOptions, PacketMeta};

const PROGRAM: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Return value and MTU of each case, kept in .bss (compared as a map). */
__u32 out[16];

#define CASE(i, ctx, ifindex, start, diff, flags) do {			\
	__u32 mtu = start;						\
	out[2 * i] = bpf_check_mtu(ctx, ifindex, &mtu, diff, flags);	\
	out[2 * i + 1] = mtu;						\
} while (0)

#define CASES(ctx) do {							\
	CASE(0, ctx, 0, 0, 0, 0);					\
	CASE(1, ctx, 0, 0, 70000, 0);					\
	CASE(2, ctx, 0, 65537, 0, 0);					\
	CASE(3, ctx, 1, 1000, -20, 0);					\
	CASE(4, ctx, 9999, 77, 0, 0);					\
	CASE(5, ctx, 0, 77, 0, 2);					\
	CASE(6, ctx, 0, 0, 1, BPF_MTU_CHK_SEGS);			\
} while (0)

SEC("tc")
int tc_mtu(struct __sk_buff *skb)
{
	CASES(skb);
	return 0;
}

SEC("xdp")
int xdp_mtu(struct xdp_md *ctx)
{
	CASES(ctx);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"#;

fn hook(program: &str, ncpus: u32) -> (Vec<u8>, Hook) {
    let bytes = programs::compile::compile("check_mtu", PROGRAM);
    let opts = LoadOptions {
        ncpus,
        ..LoadOptions::default()
    };
    let image = Image::load(obj::Object::parse(&bytes).unwrap(), &opts).unwrap();
    let p = image.find_program(Some(program)).unwrap();
    (bytes, Hook::new(image, p, 0).unwrap())
}

fn out(h: &Hook) -> Vec<u32> {
    let bss = h.object().map_index(".bss").unwrap();
    let v = h.maps()[bss].user_lookup(&0u32.to_le_bytes()).unwrap();
    v.chunks(4)
        .take(14)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

#[test]
fn check_mtu_on_loopback() {
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
    let (einval, enodev) = ((-22i32) as u32, (-19i32) as u32);
    // Errors leave the MTU argument alone.
    for program in ["tc_mtu", "xdp_mtu"] {
        let (_, mut h) = hook(program, 1);
        h.run(&frame, &meta).unwrap();
        assert_eq!(
            out(&h),
            [
                0, 65536, 1, 65536, 1, 65536, 0, 65536, enodev, 77, einval, 77, einval, 0
            ],
            "{program}"
        );
    }
}

#[test]
fn check_mtu_agrees_with_the_kernel() {
    if !testkit::kernel_available("differential test of bpf_check_mtu") {
        return;
    }
    let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
    for program in ["tc_mtu", "xdp_mtu"] {
        let (bytes, h) = hook(program, kernel::possible_cpus() as u32);
        let mut d = Differ::new(h, &bytes, "check_mtu", 5).unwrap();
        let c = d.packet(0, 0, &frame);
        assert!(matches!(c, Comparison::Same), "{program}: {c:?}");
    }
}
