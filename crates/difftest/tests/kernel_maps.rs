//! Maps whose entries are kernel objects (socket storage, cgroup arrays,
//! stack traces): an object with them loads, a tc program uses the ones
//! its type may, and the replay says what it cannot reproduce.

use difftest::{Comparison, Differ};
use runtime::{Hook, Image, LoadOptions, PacketMeta};

const PROGRAM: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} sk_seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

/* Only tracing programs may record stacks: the kprobe below shares the
   object, as in tools that trace and classify. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16);
	__type(key, __u32);
	__uint(value_size, 64);
} stacks SEC(".maps");

SEC("tc")
int classify(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	if (sk) {
		__u64 *n = bpf_sk_storage_get(&sk_seen, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (n)
			*n += 1;
	}
	skb->mark = (__u32)bpf_skb_under_cgroup(skb, &cgroups, 0);
	return 0;
}

/* An empty slot and one past the end: -EAGAIN and -E2BIG, in the VM
   and in the kernel alike. */
SEC("xdp")
int xdp_cgroup(struct xdp_md *ctx)
{
	long empty = bpf_current_task_under_cgroup(&cgroups, 1);
	long past = bpf_current_task_under_cgroup(&cgroups, 9);
	return empty == -11 && past == -7 ? XDP_PASS : XDP_DROP;
}

SEC("kprobe/do_nanosleep")
int trace(void *ctx)
{
	return bpf_get_stackid(ctx, &stacks, 0) < 0;
}

char _license[] SEC("license") = "GPL";
"#;

fn hook(ncpus: u32) -> (Vec<u8>, Hook) {
    hook_of("classify", ncpus)
}

fn hook_of(program: &str, ncpus: u32) -> (Vec<u8>, Hook) {
    let bytes = programs::compile::compile("kmaps", PROGRAM);
    let object = obj::Object::parse(&bytes).unwrap();
    let opts = LoadOptions {
        ncpus,
        ..LoadOptions::default()
    };
    let image = Image::load(object, &opts).unwrap();
    let p = image.find_program(Some(program)).unwrap();
    (bytes, Hook::new(image, p, 0).unwrap())
}

#[test]
fn maps_of_kernel_objects_load_and_stay_empty() {
    let (_, mut h) = hook(1);
    for (name, t) in [
        ("sk_seen", maps::MapType::SkStorage),
        ("cgroups", maps::MapType::CgroupArray),
        ("stacks", maps::MapType::StackTrace),
    ] {
        let m = &h.maps()[h.object().map_index(name).unwrap()];
        assert_eq!(m.map_type(), t);
        assert!(m.is_empty());
        assert_eq!(m.user_lookup(&0u32.to_le_bytes()), Err(maps::Errno::ENOENT));
        assert!(t.absent_reason().is_some());
    }
    // The tc program passes sluice's verifier (socket storage only behind
    // a socket check, the cgroup array with bpf_skb_under_cgroup).
    let maps = verifier::MapView::of_object(h.object(), &|_| None);
    let opts = verifier::VerifyOptions {
        helpers: runtime::helpers::ids_for(&h.program().kind),
        ..verifier::VerifyOptions::default()
    };
    let report = verifier::verify(h.program(), &maps, &opts);
    assert!(report.result.is_ok(), "{:?}", report.result);
    // A replayed packet has no socket: -ENOENT.
    let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
    let out = h.run(&frame, &PacketMeta::default()).unwrap();
    assert_eq!(out.skb.unwrap().mark, -2i32 as u32);
    let (_, mut x) = hook_of("xdp_cgroup", 1);
    assert_eq!(x.run(&frame, &PacketMeta::default()).unwrap().r0, 2);
}

#[test]
fn the_kernel_side_loads_them_and_the_difference_is_labelled() {
    if !testkit::kernel_available("differential test of kernel-object maps") {
        return;
    }
    let (bytes, h) = hook(kernel::possible_cpus() as u32);
    let mut d = Differ::new(h, &bytes, "kmaps", 5).unwrap();
    let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
    let c = d.packet(0, 0, &frame);
    assert!(
        !matches!(c, Comparison::Diverged(_)),
        "a socket the kernel's test run has and a replay lacks: {c:?}"
    );
    let s = d.into_summary();
    // bpf_current_task_under_cgroup answers alike on both sides.
    let (bytes, h) = hook_of("xdp_cgroup", kernel::possible_cpus() as u32);
    let mut x = Differ::new(h, &bytes, "kmaps", 5).unwrap();
    let c = x.packet(0, 0, &frame);
    assert!(matches!(c, Comparison::Same), "{c:?}");
    for m in ["sk_seen", "cgroups", "stacks"] {
        assert!(
            s.maps_not_compared.iter().any(|(n, _)| n == m),
            "{m}: {:?}",
            s.maps_not_compared
        );
    }
}
