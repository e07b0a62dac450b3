//! `bpf_spin_lock` as the kernel checks it: every way of misusing one the
//! kernel refuses (one program each) and uses it allows, verified by
//! sluice and (as root) by the running kernel; both verdicts and the
//! kernel's message must be the expected ones. Accepted: a lock in a map
//! value, held across a call of a static function, and one in global data
//! (`.data.A`).

const SOURCE: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct locked {
	__u64 n;
	struct bpf_spin_lock lock;
	__u32 tag;
};

/* The same layout with a plain word where the lock was. */
struct unlocked {
	__u64 n;
	__u32 word;
	__u32 tag;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct locked);
} alocks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct locked);
} hlocks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct unlocked);
} plain SEC(".maps");

#define GET(v, m, key)                                  \
	__u32 k_##v = key;                              \
	struct locked *v = bpf_map_lookup_elem(&m, &k_##v); \
	if (!v)                                         \
		return XDP_PASS;

SEC("xdp") int held_at_exit(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	bpf_spin_lock(&v->lock);
	v->n++;
	return XDP_PASS;
}

SEC("xdp") int helper_while_held(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	bpf_spin_lock(&v->lock);
	v->n = bpf_ktime_get_ns();
	bpf_spin_unlock(&v->lock);
	return XDP_PASS;
}

SEC("xdp") int two_locks(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	GET(w, alocks, 1);
	bpf_spin_lock(&v->lock);
	bpf_spin_lock(&w->lock);
	bpf_spin_unlock(&w->lock);
	bpf_spin_unlock(&v->lock);
	return XDP_PASS;
}

SEC("xdp") int unlock_unheld(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	bpf_spin_unlock(&v->lock);
	return XDP_PASS;
}

SEC("xdp") int unlock_another(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	GET(w, hlocks, 0);
	bpf_spin_lock(&v->lock);
	bpf_spin_unlock(&w->lock);
	return XDP_PASS;
}

SEC("xdp") int unlock_another_lookup(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	GET(w, alocks, 0);
	bpf_spin_lock(&v->lock);
	bpf_spin_unlock(&w->lock);
	return XDP_PASS;
}

SEC("xdp") int wrong_offset(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	bpf_spin_lock((struct bpf_spin_lock *)&v->tag);
	bpf_spin_unlock((struct bpf_spin_lock *)&v->tag);
	return XDP_PASS;
}

SEC("xdp") int no_lock_in_map(struct xdp_md *ctx)
{
	__u32 k = 0;
	struct unlocked *v = bpf_map_lookup_elem(&plain, &k);
	if (!v)
		return XDP_PASS;
	bpf_spin_lock((struct bpf_spin_lock *)&v->word);
	bpf_spin_unlock((struct bpf_spin_lock *)&v->word);
	return XDP_PASS;
}

SEC("xdp") int store_to_the_lock(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	*(volatile __u32 *)&v->lock = 0;
	return XDP_PASS;
}

SEC("xdp") int load_of_the_lock(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	return *(volatile __u32 *)&v->lock;
}

SEC("xdp") int helper_reads_the_lock(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	__u32 k = 1;
	bpf_map_update_elem(&hlocks, &k, v, BPF_ANY);
	return XDP_PASS;
}

static __attribute__((noinline)) int bump(struct locked *v)
{
	v->n++;
	return 0;
}

SEC("xdp") int static_call_while_held(struct xdp_md *ctx)
{
	GET(v, hlocks, 0);
	bpf_spin_lock(&v->lock);
	bump(v);
	bpf_spin_unlock(&v->lock);
	return XDP_PASS;
}

SEC("xdp") int around_the_lock(struct xdp_md *ctx)
{
	GET(v, alocks, 0);
	bpf_spin_lock(&v->lock);
	v->n++;
	v->tag = 7;
	bpf_spin_unlock(&v->lock);
	return v->tag == 7 ? XDP_PASS : XDP_DROP;
}

/* A lock in global data: a section of its own, as the kernel wants. */
struct bpf_spin_lock glock SEC(".data.A") __hidden;
__u64 gcount SEC(".data.A") __hidden;

SEC("xdp") int global_lock(struct xdp_md *ctx)
{
	bpf_spin_lock(&glock);
	gcount++;
	bpf_spin_unlock(&glock);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"#;

/// Each program, and the kernel's message when it is refused.
const EXPECTED: &[(&str, Option<&str>)] = &[
    (
        "held_at_exit",
        Some("BPF_EXIT instruction in main prog cannot be used inside bpf_spin_lock-ed region"),
    ),
    (
        "helper_while_held",
        Some("function calls are not allowed while holding a lock"),
    ),
    (
        "two_locks",
        Some("function calls are not allowed while holding a lock"),
    ),
    (
        "unlock_unheld",
        Some("bpf_spin_unlock without taking a lock"),
    ),
    ("unlock_another", Some("bpf_spin_unlock of different lock")),
    (
        "unlock_another_lookup",
        Some("bpf_spin_unlock of different lock"),
    ),
    (
        "wrong_offset",
        Some("off 12 doesn't point to 'struct bpf_spin_lock' that is at 8"),
    ),
    (
        "no_lock_in_map",
        Some("map 'plain' has no valid bpf_spin_lock"),
    ),
    (
        "store_to_the_lock",
        Some("bpf_spin_lock cannot be accessed directly by load/store"),
    ),
    (
        "load_of_the_lock",
        Some("bpf_spin_lock cannot be accessed directly by load/store"),
    ),
    (
        "helper_reads_the_lock",
        Some("bpf_spin_lock cannot be accessed directly by load/store"),
    ),
    ("static_call_while_held", None),
    ("global_lock", None),
    ("around_the_lock", None),
];

#[test]
fn spin_lock_rules_agree_with_the_kernel() {
    let bytes = programs::compile::compile("spin_rules", SOURCE);
    let object = obj::Object::parse(&bytes).unwrap();
    let maps = verifier::MapView::of_object(&object, &|_| None);
    let kernel = testkit::kernel_available("kernel verdicts on bpf_spin_lock programs");
    assert_eq!(object.programs.len(), EXPECTED.len());
    for &(name, message) in EXPECTED {
        let p = object.programs.iter().find(|p| p.name == name).unwrap();
        let ours = verifier::verify(p, &maps, &verifier::VerifyOptions::default());
        match (message, &ours.result) {
            (None, Ok(_)) => {}
            (Some(m), Err(e)) => {
                assert!(e.kernel.contains(m), "{name}: sluice says {}", e.kernel);
                assert_eq!(e.rule, verifier::SafetyRule::SpinLock, "{name}");
            }
            (_, r) => panic!(
                "{name}: sluice says {:?}",
                r.as_ref().map_err(|e| &e.kernel)
            ),
        }
        if kernel {
            let theirs =
                kernel::verify::verify_program(p, &object.maps, object.btf.as_ref(), &|_| None)
                    .unwrap();
            assert_eq!(theirs.accepted, message.is_none(), "{name}: {}", theirs.log);
            if let Some(m) = message {
                assert!(theirs.log.contains(m), "{name}: {}", theirs.reason());
            }
        }
    }
}
