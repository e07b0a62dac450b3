//! A verified program in the trusted JIT (array lookups inline, hash
//! lookups called directly, the stack zeroed only to the verifier's depth)
//! gives what the checked interpreter
//! gives: verdicts, instruction and helper counts per packet, and maps, on
//! one CPU and on two sibling hooks.

use runtime::{Hook, Image, LoadOptions, PacketMeta};

/// Looks up packet byte 14 in a 4-entry array (out of range: dropped),
/// adds the packet's length there, counts per CPU and per flow in an LRU
/// hash (a miss inserts).
const SOURCE: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4);
         __type(key, __u32); __type(value, __u64); } bytes SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __uint(max_entries, 3);
         __type(key, __u32); __type(value, __u64[3]); } seen SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_LRU_HASH); __uint(max_entries, 4);
         __type(key, __u32); __type(value, __u64); } flows SEC(".maps");

SEC("xdp")
int fast(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	if (data + 15 > end)
		return XDP_ABORTED;
	__u32 key = ((__u8 *)data)[14];
	__u64 *v = bpf_map_lookup_elem(&bytes, &key);
	__u32 k2 = key % 3;
	__u64 *s = bpf_map_lookup_elem(&seen, &k2);
	/* key & 1, not key % 3: the kernel (and sluice) track no range
	   through a remainder, so s[key % 3] would be unbounded. */
	if (s)
		s[key & 1] += 1;
	__u32 fk = key * 7;
	__u64 *c = bpf_map_lookup_elem(&flows, &fk);
	if (c) {
		*c += 1;
	} else {
		__u64 one = 1;
		bpf_map_update_elem(&flows, &fk, &one, BPF_ANY);
	}
	if (!v)
		return XDP_DROP;
	__sync_fetch_and_add(v, end - data);
	return XDP_PASS;
}
char _license[] SEC("license") = "GPL";
"#;

fn hook(bytes: &[u8], fast: bool) -> Hook {
    let object = obj::Object::parse(bytes).unwrap();
    let opts = LoadOptions {
        ncpus: 2,
        ..LoadOptions::default()
    };
    let image = Image::load(object, &opts).unwrap();
    let p = image.find_program(None).unwrap();
    let mut h = Hook::new(image, p, 0).unwrap();
    if fast {
        let maps = verifier::MapView::of_object(h.object(), &|_| None);
        let opts = verifier::VerifyOptions {
            helpers: runtime::helpers::ids_for(&h.program().kind),
            ..verifier::VerifyOptions::default()
        };
        let report = verifier::verify(h.program(), &maps, &opts);
        assert!(report.result.is_ok(), "{:?}", report.result);
        assert!(report.stack_depth > 0 && report.stack_depth < 64);
        // SAFETY: the verifier accepted the only program, for these maps.
        unsafe { h.trust_verified() };
        h.set_stack_depth(report.stack_depth);
        if h.enable_jit().is_err() {
            eprintln!("SKIP the JIT half: not an x86-64 host");
        }
    }
    h
}

fn frames() -> Vec<Vec<u8>> {
    (0..200u8)
        .map(|i| {
            let mut f = vec![0u8; 60 + usize::from(i % 7)];
            // Two hot flows and four cold ones: hits, misses, evictions.
            f[14] = if i % 4 == 0 { (i / 4) % 6 } else { i % 2 };
            f
        })
        .collect()
}

/// The two arrays' values, then the flows (`None`: evicted or never seen).
fn dump(h: &Hook) -> (Vec<Vec<u8>>, Vec<Option<Vec<u8>>>) {
    let m = h.maps();
    let arrays = m[..2]
        .iter()
        .flat_map(|m| (0..m.spec().max_entries).map(|k| m.user_lookup(&k.to_le_bytes()).unwrap()))
        .collect();
    let flows = (0..6u32)
        .map(|k| m[2].user_lookup(&(k * 7).to_le_bytes()).ok())
        .collect();
    (arrays, flows)
}

#[test]
fn trusted_jit_and_checked_interpreter_agree() {
    let bytes = programs::compile::compile("fast", SOURCE);
    let meta = PacketMeta::default();
    let (mut slow, mut fast) = (hook(&bytes, false), hook(&bytes, true));
    let mut other = fast.sibling(1).unwrap();
    for (i, f) in frames().iter().enumerate() {
        let a = slow.run(f, &meta).unwrap();
        let (verdict, stats) = (a.verdict, *a.stats);
        let h = if i % 2 == 0 { &mut fast } else { &mut other };
        let b = h.run(f, &meta).unwrap();
        assert_eq!(
            (b.verdict, b.stats.insns),
            (verdict, stats.insns),
            "packet {i}"
        );
        assert_eq!(b.stats.helper_calls, stats.helper_calls, "packet {i}");
        assert!(stats.helper_calls >= 3);
    }
    // Per-CPU copies land on each hook's CPU: the array map and the flows
    // match exactly, the per-CPU map's copies sum to the one CPU's.
    let ((want, want_flows), (got, got_flows)) = (dump(&slow), dump(&fast));
    assert_eq!(got_flows, want_flows);
    assert_eq!(got_flows.iter().flatten().count(), 4, "the LRU map is full");
    assert!(
        got_flows.iter().flatten().any(|v| v[0] > 20),
        "the hot flows were found, not inserted again"
    );
    assert_eq!(got[..4], want[..4]);
    let mut per_cpu = [0u64; 2];
    for (g, w) in got[4..].iter().zip(&want[4..]) {
        let words = |v: &[u8]| -> Vec<u64> {
            v.chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let (g, w) = (words(g), words(w));
        let sum: Vec<u64> = (0..3).map(|i| g[i] + g[3 + i]).collect();
        assert_eq!(sum, w[..3].to_vec());
        per_cpu[0] += g[..3].iter().sum::<u64>();
        per_cpu[1] += g[3..].iter().sum::<u64>();
    }
    assert_eq!(per_cpu, [100, 100], "each hook counted on its own CPU");
}
