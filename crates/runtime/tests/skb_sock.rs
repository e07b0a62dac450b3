//! A replayed packet has no socket: a tc program or socket filter reading
//! `skb->sk` (which the verifier lets through after a NULL check) finds
//! NULL, in the interpreter and the JIT, on every run.

use runtime::{Hook, Image, LoadOptions, PacketMeta};

const PROGRAM: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_sock(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	if (!sk)
		return 7;
	return sk->family;
}

SEC("socket")
int filter_sock(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	if (!sk)
		return 9;
	return sk->family;
}

char _license[] SEC("license") = "GPL";
"#;

#[test]
fn skb_sk_is_null_in_a_replay() {
    let bytes = programs::compile::compile("skb_sock", PROGRAM);
    let meta = PacketMeta {
        ifindex: 1,
        ..PacketMeta::default()
    };
    for (name, want) in [("tc_sock", 7), ("filter_sock", 9)] {
        for jit in [false, true] {
            let image =
                Image::load(obj::Object::parse(&bytes).unwrap(), &LoadOptions::default()).unwrap();
            let p = image.find_program(Some(name)).unwrap();
            let mut h = Hook::new(image, p, 0).unwrap();
            if jit {
                h.enable_jit().unwrap();
            }
            for len in [60, 200] {
                let out = h.run(&vec![0u8; len], &meta).unwrap();
                assert_eq!(out.r0, want, "{name} jit {jit}: skb->sk is NULL");
            }
        }
    }
}
