//! Small C programs, each built with clang as the examples are, on which
//! sluice once was stricter than the kernel: sluice's verdict on every
//! program of the object, and (as root) the kernel's on the same
//! instructions, must be the expected one.

/// Verifies every program of `source` with sluice and, when the kernel can
/// be asked, with the kernel; both must give `accept` (for every program).
fn verdicts(name: &str, source: &str, accept: bool) {
    let bytes = programs::compile::compile(name, source);
    let object = obj::Object::parse(&bytes).unwrap();
    let maps = verifier::MapView::of_object(&object, &|_| None);
    let kernel = testkit::kernel_available("kernel verdicts on small C programs");
    assert!(!object.programs.is_empty());
    for p in &object.programs {
        let ours = verifier::verify(p, &maps, &verifier::VerifyOptions::default());
        assert_eq!(
            ours.result.is_ok(),
            accept,
            "{name}/{}: sluice says {:?}",
            p.name,
            ours.result
                .as_ref()
                .map_err(|e| (e.rule, &e.kernel, &e.reason))
        );
        if let Err(e) = &ours.result {
            assert_ne!(
                e.rule,
                verifier::SafetyRule::Unsupported,
                "{name}/{}: a verdict, not `unsupported`: {}",
                p.name,
                e.kernel
            );
        }
        if kernel {
            let theirs =
                kernel::verify::verify_program(p, &object.maps, object.btf.as_ref(), &|_| None)
                    .unwrap();
            assert_eq!(
                theirs.accepted,
                accept,
                "{name}/{}: kernel says {}",
                p.name,
                theirs.reason()
            );
        }
    }
}

/// A `static void` function, not inlined, returns without writing r0;
/// the caller never reads it.
#[test]
fn a_void_function_that_leaves_r0_unset() {
    verdicts(
        "void_fn",
        r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __attribute__((noinline)) void bump(__u64 *n, __u32 by)
{
	*n += by;
}

SEC("xdp")
int count(struct xdp_md *ctx)
{
	__u64 n = 0;
	bump(&n, ctx->ingress_ifindex);
	bump(&n, 2);
	return n > 3 ? XDP_PASS : XDP_DROP;
}

char _license[] SEC("license") = "GPL";
"#,
        true,
    );
}

/// An `int` function whose result no caller uses: clang drops the return
/// value and leaves r0 unset at its exit.
#[test]
fn an_int_function_whose_result_is_ignored() {
    verdicts(
        "ignored_result",
        r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __attribute__((noinline)) int store(__u32 *slot, __u32 v)
{
	if (v > 100)
		return -1;
	*slot = v * 3;
	return 0;
}

SEC("tc")
int cls(struct __sk_buff *skb)
{
	__u32 a = 0, b = 0;
	store(&a, skb->len);
	store(&b, skb->mark);
	return a > b ? 0 : 2;
}

char _license[] SEC("license") = "GPL";
"#,
        true,
    );
}

/// `bpf_trace_printk` with one argument after the format leaves r4 and
/// r5 unwritten; the kernel checks only the format and its size.
#[test]
fn trace_printk_with_fewer_arguments_than_slots() {
    verdicts(
        "printk_one",
        r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int say(struct xdp_md *ctx)
{
	char fmt[] = "ifindex %u\n";
	bpf_trace_printk(fmt, sizeof(fmt), ctx->ingress_ifindex);
	return XDP_PASS;
}

SEC("xdp")
int say_nothing(struct xdp_md *ctx)
{
	char fmt[] = "hello\n";
	bpf_trace_printk(fmt, sizeof(fmt));
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"#,
        true,
    );
}

/// `skb->sk` of a tc program and a socket filter: a socket or NULL; its
/// fields (`struct bpf_sock`, a sock_common here) after a NULL check.
const SOCK_FIELDS: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

static __attribute__((always_inline)) int classify(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	if (!sk)
		return 7;
	__u32 v = sk->family + sk->src_port + sk->dst_ip4 + sk->state;
	v += sk->bound_dev_if + sk->src_ip6[3] + sk->dst_ip6[1];
	v += *(volatile __u16 *)&sk->dst_port;
	v += *(volatile __u8 *)&sk->src_ip4;
	return v & 1;
}

SEC("tc")
int tc_sock(struct __sk_buff *skb)
{
	return classify(skb);
}

SEC("socket")
int filter_sock(struct __sk_buff *skb)
{
	return classify(skb);
}

char _license[] SEC("license") = "GPL";
"#;

#[test]
fn socket_fields_after_a_null_check() {
    verdicts("sock_fields", SOCK_FIELDS, true);
}

/// The same without the NULL check: both refuse
/// (`invalid mem access 'sock_common_or_null'`).
#[test]
fn socket_fields_without_a_null_check() {
    verdicts(
        "sock_no_check",
        r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_sock(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	return sk->family == 2;
}

char _license[] SEC("license") = "GPL";
"#,
        false,
    );
}

/// A sock_common has no `type`, `protocol`, `mark` or `priority`; and
/// `__sk_buff`'s own socket fields (`family` to `local_port`) are not
/// for tc programs (`tc_cls_act_is_valid_access`).
#[test]
fn socket_fields_a_tc_program_may_not_read() {
    for (name, expr) in [
        ("sock_type", "sk->type"),
        ("sock_mark", "sk->mark"),
        ("skb_family", "skb->family"),
        ("skb_remote_ip4", "skb->remote_ip4"),
        ("skb_local_port", "skb->local_port"),
    ] {
        verdicts(
            name,
            &format!(
                r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("tc")
int tc_sock(struct __sk_buff *skb)
{{
	struct bpf_sock *sk = skb->sk;
	if (!sk)
		return 0;
	return {expr} == 2;
}}

char _license[] SEC("license") = "GPL";
"#
            ),
            false,
        );
    }
}

/// A `bpf_spin_lock` in the values of a hash and an array map. The
/// kernel finds the lock through the map's BTF, which the kernel verdict
/// must be given (as libbpf gives it) to accept the program.
const SPIN_LOCK: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct counter {
	struct bpf_spin_lock lock;
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct counter);
} by_ifindex SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counter);
} total SEC(".maps");

SEC("tc")
int count(struct __sk_buff *skb)
{
	__u32 key = skb->ifindex, zero = 0;
	struct counter *c = bpf_map_lookup_elem(&by_ifindex, &key);
	if (c) {
		bpf_spin_lock(&c->lock);
		c->packets++;
		c->bytes += skb->len;
		bpf_spin_unlock(&c->lock);
	}
	c = bpf_map_lookup_elem(&total, &zero);
	if (c) {
		bpf_spin_lock(&c->lock);
		c->packets++;
		bpf_spin_unlock(&c->lock);
	}
	return 0;
}

char _license[] SEC("license") = "GPL";
"#;

#[test]
fn a_spin_lock_in_map_values() {
    verdicts("spin_lock", SPIN_LOCK, true);
}

/// Packet bytes handed to bpf_ringbuf_output, whose kernel proto lacks
/// `pkt_access`: both refuse, sluice with the kernel's message. The same
/// bytes as a map_update_elem key (a `pkt_access` helper) are accepted.
#[test]
fn packet_bytes_to_a_helper_without_pkt_access() {
    let source = |call: &str| {
        format!(
            r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {{
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4096);
}} events SEC(".maps");

struct {{
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16);
    __type(key, __u32);
    __type(value, __u64);
}} seen SEC(".maps");

SEC("xdp")
int prog(struct xdp_md *ctx)
{{
    void *data = (void *)(long)ctx->data;
    void *data_end = (void *)(long)ctx->data_end;
    __u64 one = 1;

    if (data + 64 > data_end)
        return XDP_PASS;
    {call};
    return XDP_PASS;
}}

char LICENSE[] SEC("license") = "GPL";
"#
        )
    };
    let refused = source("bpf_ringbuf_output(&events, data, 64, 0)");
    verdicts("pkt_ringbuf_output", &refused, false);
    let bytes = programs::compile::compile("pkt_ringbuf_output", &refused);
    let object = obj::Object::parse(&bytes).unwrap();
    let maps = verifier::MapView::of_object(&object, &|_| None);
    let e = verifier::verify(
        &object.programs[0],
        &maps,
        &verifier::VerifyOptions::default(),
    )
    .result
    .unwrap_err();
    assert_eq!(e.rule, verifier::SafetyRule::HelperArgument);
    assert!(
        e.kernel
            .contains("helper access to the packet is not allowed"),
        "{}",
        e.kernel
    );
    verdicts(
        "pkt_map_update",
        &source("bpf_map_update_elem(&seen, data, &one, BPF_ANY)"),
        true,
    );
}
