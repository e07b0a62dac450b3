//! tc helpers added for replays, each checked against the kernel:
//! `bpf_skb_load_bytes_relative`, `bpf_set_hash_invalid`,
//! `bpf_csum_update`, `bpf_csum_level`.

use difftest::{Comparison, Differ};
use runtime::{Hook, Image, LoadOptions, PacketMeta};

/// The helpers' results go to the mark and `cb[]`, which the comparison
/// sees; what `load_bytes_relative` read goes to `cb[]` too.
const PROGRAM: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int helpers(struct __sk_buff *skb)
{
	__u32 mac[2] = {}, net[2] = {}, far[2] = {1, 1};
	long a = bpf_skb_load_bytes_relative(skb, 6, mac, 8, BPF_HDR_START_MAC);
	long b = bpf_skb_load_bytes_relative(skb, 12, net, 8, BPF_HDR_START_NET);
	long c = bpf_skb_load_bytes_relative(skb, 4000, far, 8, BPF_HDR_START_NET);
	long d = bpf_skb_load_bytes_relative(skb, 0, far, 4, 7);
	skb->cb[0] = mac[0] ^ mac[1];
	skb->cb[1] = net[0] ^ net[1];
	skb->cb[2] = far[0] | far[1];
	skb->cb[3] = (a & 0xff) | (b & 0xff) << 8 | (c & 0xff) << 16 | (d & 0xff) << 24;

	/* The level walk: none, 0, 1, 2, 3, 3, down to none again. */
	__u32 levels = 0;
	levels |= (bpf_csum_level(skb, BPF_CSUM_LEVEL_QUERY) & 0xf);
	bpf_csum_level(skb, BPF_CSUM_LEVEL_INC);
	levels |= (bpf_csum_level(skb, BPF_CSUM_LEVEL_QUERY) & 0xf) << 4;
	bpf_csum_level(skb, BPF_CSUM_LEVEL_INC);
	bpf_csum_level(skb, BPF_CSUM_LEVEL_INC);
	bpf_csum_level(skb, BPF_CSUM_LEVEL_INC);
	bpf_csum_level(skb, BPF_CSUM_LEVEL_INC);
	levels |= (bpf_csum_level(skb, BPF_CSUM_LEVEL_QUERY) & 0xf) << 8;
	bpf_csum_level(skb, BPF_CSUM_LEVEL_DEC);
	levels |= (bpf_csum_level(skb, BPF_CSUM_LEVEL_QUERY) & 0xf) << 12;
	bpf_csum_level(skb, BPF_CSUM_LEVEL_RESET);
	levels |= (bpf_csum_level(skb, BPF_CSUM_LEVEL_QUERY) & 0xf) << 16;
	bpf_csum_level(skb, BPF_CSUM_LEVEL_INC);
	bpf_csum_level(skb, BPF_CSUM_LEVEL_DEC);
	levels |= (bpf_csum_level(skb, BPF_CSUM_LEVEL_QUERY) & 0xf) << 20;
	levels |= (bpf_csum_level(skb, 9) & 0xf) << 24;
	skb->cb[4] = levels;

	bpf_set_hash(skb, 0x1234);
	bpf_set_hash_invalid(skb);
	skb->mark = (__u32)bpf_csum_update(skb, 0x55) ^ skb->hash;
	return 0;
}

char _license[] SEC("license") = "GPL";
"#;

fn hook(ncpus: u32) -> (Vec<u8>, Hook) {
    let bytes = programs::compile::compile("skb_helpers", PROGRAM);
    let opts = LoadOptions {
        ncpus,
        ..LoadOptions::default()
    };
    let image = Image::load(obj::Object::parse(&bytes).unwrap(), &opts).unwrap();
    let p = image.find_program(None).unwrap();
    (bytes, Hook::new(image, p, 0).unwrap())
}

fn frames() -> Vec<Vec<u8>> {
    vec![
        packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53).build(),
        packet::Builder::tcp("fd00::1", "fd00::2", 1000, 80).build(),
    ]
}

#[test]
fn tc_helpers_behave_as_the_kernels() {
    let (_, mut h) = hook(1);
    let frame = &frames()[0];
    let out = h.run(frame, &PacketMeta::default()).unwrap();
    let skb = out.skb.unwrap();
    let word = |at: usize| u32::from_le_bytes(frame[at..at + 4].try_into().unwrap());
    assert_eq!(skb.cb[0], word(6) ^ word(10), "from the MAC header");
    assert_eq!(skb.cb[1], word(26) ^ word(30), "from the network header");
    assert_eq!(skb.cb[2], 0, "failed reads clear the buffer");
    assert_eq!(skb.cb[3], 0xf2_f2_00_00, "0, 0, -EFAULT, -EFAULT");
    // Low nibbles of: none (-EACCES: 3), 0, 3, 2, none, none, -EINVAL (0xa).
    assert_eq!(skb.cb[4], 0x0a33_2303, "the csum_level walk");
    assert_eq!(
        skb.mark,
        (-524i32) as u32,
        "csum_update: -ENOTSUPP, hash cleared"
    );
}

#[test]
fn tc_helpers_agree_with_the_kernel() {
    if !testkit::kernel_available("differential test of tc helpers") {
        return;
    }
    let (bytes, h) = hook(kernel::possible_cpus() as u32);
    let mut d = Differ::new(h, &bytes, "skb_helpers", 10).unwrap();
    for (i, frame) in frames().iter().enumerate() {
        let c = d.packet(i as u64, 1_000 * i as u64, frame);
        assert!(matches!(c, Comparison::Same), "packet {i}: {c:?}");
    }
}
