//! A hook reuses its packet buffer; what one packet left in the headroom
//! (after `bpf_xdp_adjust_head` or `_adjust_meta` grew into it) must read
//! as zeros to the next packet, as it did when every run zeroed it.

use runtime::{Hook, Image, LoadOptions, PacketMeta};

/// Short packets (under 80 bytes) scribble 0xff over the 64 bytes in front
/// of the packet and 32 of metadata; longer ones grow into the same bytes
/// and return how many of them are not zero.
const PROGRAM: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int scribble(struct xdp_md *ctx)
{
	int scribbler = ctx->data_end - ctx->data < 80;
	if (bpf_xdp_adjust_head(ctx, -64))
		return 100;
	if (bpf_xdp_adjust_meta(ctx, -32))
		return 101;
	unsigned char *meta = (void *)(long)ctx->data_meta;
	unsigned char *data = (void *)(long)ctx->data;
	if ((void *)(meta + 32) > (void *)data || (void *)(data + 64) > (void *)(long)ctx->data_end)
		return 102;
	int dirty = 0;
	for (int i = 0; i < 32; i++) {
		if (scribbler)
			meta[i] = 0xff;
		dirty += meta[i] != 0;
	}
	for (int i = 0; i < 64; i++) {
		if (scribbler)
			data[i] = 0xff;
		dirty += data[i] != 0;
	}
	return scribbler ? XDP_PASS : dirty;
}

char _license[] SEC("license") = "GPL";
"#;

fn hook() -> Hook {
    let bytes = programs::compile::compile("headroom", PROGRAM);
    let image = Image::load(obj::Object::parse(&bytes).unwrap(), &LoadOptions::default()).unwrap();
    let p = image.find_program(None).unwrap();
    Hook::new(image, p, 0).unwrap()
}

#[test]
fn headroom_a_packet_dirtied_reads_zero_to_the_next() {
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    for jit in [false, true] {
        let mut h = hook();
        if jit {
            h.enable_jit().unwrap();
        }
        for round in 0..3 {
            let short = h.run(&[0u8; 60], &meta).unwrap();
            assert_eq!(short.r0, 2, "jit {jit} round {round}: the scribbler passes");
            let long = h.run(&[0u8; 200], &meta).unwrap();
            assert_eq!(long.r0, 0, "jit {jit} round {round}: dirty bytes seen");
        }
    }
}
