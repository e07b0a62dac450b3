//! A map value's `bpf_spin_lock` seen from user space, in the VM as in the
//! kernel: updates leave the lock's word alone (a value written with
//! garbage there does not lock programs out), lookups read it as 0, and
//! `BPF_F_LOCK` copies under the lock where a value has one and is refused
//! where it has none.

use difftest::{Comparison, Differ};
use maps::{Errno, update};
use runtime::{Hook, Image, LoadOptions, PacketMeta};

const PROGRAM: &str = r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct locked {
	__u64 n;
	struct bpf_spin_lock lock;
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
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct locked);
} hlocks SEC(".maps");

/* The same layout, a plain word where the lock was. */
struct unlocked {
	__u64 n;
	__u32 word;
	__u32 tag;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unlocked);
} plain SEC(".maps");

SEC("xdp")
int count(struct xdp_md *ctx)
{
	__u32 k = 0;
	struct locked *a = bpf_map_lookup_elem(&alocks, &k);
	if (a) {
		bpf_spin_lock(&a->lock);
		a->n++;
		bpf_spin_unlock(&a->lock);
	}
	struct locked *h = bpf_map_lookup_elem(&hlocks, &k);
	if (h) {
		bpf_spin_lock(&h->lock);
		h->n += 2;
		bpf_spin_unlock(&h->lock);
	}
	struct unlocked *p = bpf_map_lookup_elem(&plain, &k);
	if (p)
		p->word++;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"#;

/// A value: `n`, the lock's word, `tag`.
fn value(n: u64, lock: u32, tag: u32) -> Vec<u8> {
    let mut v = n.to_le_bytes().to_vec();
    v.extend(lock.to_le_bytes());
    v.extend(tag.to_le_bytes());
    v
}

fn hook(ncpus: u32) -> (Vec<u8>, Hook) {
    let bytes = programs::compile::compile("spinlock", PROGRAM);
    let object = obj::Object::parse(&bytes).unwrap();
    let opts = LoadOptions {
        ncpus,
        ..LoadOptions::default()
    };
    let image = Image::load(object, &opts).unwrap();
    let p = image.find_program(Some("count")).unwrap();
    (bytes, Hook::new(image, p, 0).unwrap())
}

fn vm_map<'a>(h: &'a Hook, name: &str) -> &'a maps::Map {
    &h.maps()[h.object().map_index(name).unwrap()]
}

const K0: [u8; 4] = 0u32.to_le_bytes();
const K1: [u8; 4] = 1u32.to_le_bytes();

/// The VM alone: the lock found in the BTF, garbage in the lock's word
/// ignored, the word read as 0, `BPF_F_LOCK` where it belongs.
#[test]
fn user_space_leaves_the_lock_word_alone_in_the_vm() {
    let (_, mut h) = hook(1);
    let alocks = vm_map(&h, "alocks");
    assert_eq!(alocks.spec().spin_lock, Some(8));
    assert_eq!(vm_map(&h, "plain").spec().spin_lock, None);
    alocks
        .user_update(&K0, &value(5, 0xffff_ffff, 7), update::ANY)
        .unwrap();
    assert_eq!(alocks.user_lookup(&K0).unwrap(), value(5, 0, 7));
    vm_map(&h, "hlocks")
        .user_update(
            &K0,
            &value(1, 0xdead_beef, 3),
            update::NOEXIST | update::F_LOCK,
        )
        .unwrap();
    // Were the garbage the lock's word, the program would spin forever.
    let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
    for _ in 0..3 {
        h.run(&frame, &PacketMeta::default()).unwrap();
    }
    let alocks = vm_map(&h, "alocks");
    assert_eq!(
        alocks.user_lookup_flags(&K0, update::F_LOCK).unwrap(),
        value(8, 0, 7)
    );
    assert_eq!(
        vm_map(&h, "hlocks").user_lookup(&K0).unwrap(),
        value(7, 0, 3)
    );
    assert_eq!(alocks.user_lookup_flags(&K0, 8), Err(Errno::EINVAL));
}

/// The same operations on both sides give the same outcomes, and the
/// program then leaves the same maps.
#[test]
fn user_space_and_the_lock_agree_with_the_kernel() {
    if !testkit::kernel_available("bpf_spin_lock from user space against the kernel") {
        return;
    }
    let (bytes, h) = hook(kernel::possible_cpus() as u32);
    let mut d = Differ::new(h, &bytes, "spinlock", 5).unwrap();
    let kmaps = d.kernel_object().maps().unwrap();
    let kmap = |name: &str| kmaps.iter().find(|m| m.name == name).unwrap();
    // Outcomes as `Ok(value)` or an error's name, the same on both sides.
    let kernel_err = |e: kernel::Error| format!("{:?}", e.kind);
    let vm_err = |e: Errno| {
        format!(
            "{:?}",
            match e {
                Errno::EINVAL => kernel::ErrorKind::Invalid,
                Errno::ENOENT => kernel::ErrorKind::NotFound,
                Errno::EEXIST => kernel::ErrorKind::Busy,
                e => panic!("unexpected {e:?}"),
            }
        )
    };
    let updates: [(&str, [u8; 4], Vec<u8>, u64); 6] = [
        ("alocks", K0, value(5, 0xffff_ffff, 7), update::ANY),
        ("alocks", K1, value(9, 0x1234_5678, 1), update::F_LOCK),
        (
            "hlocks",
            K0,
            value(1, 0xdead_beef, 3),
            update::NOEXIST | update::F_LOCK,
        ),
        ("hlocks", K1, value(2, 1, 4), update::ANY),
        ("hlocks", K1, value(3, 1, 5), update::EXIST | update::F_LOCK),
        ("alocks", K0, value(6, 1, 8), update::NOEXIST),
    ];
    for (name, key, v, flags) in &updates {
        let k = kmap(name).update(key, v, *flags).map_err(kernel_err);
        let ours = vm_map(d.hook(), name)
            .user_update(key, v, *flags)
            .map_err(vm_err);
        assert_eq!(ours, k, "{name} update {v:x?} flags {flags}");
    }
    for (name, key) in [
        ("alocks", K0),
        ("alocks", K1),
        ("hlocks", K0),
        ("hlocks", K1),
    ] {
        for flags in [0, update::F_LOCK] {
            let k = kmap(name)
                .lookup_flags(&key, flags)
                .map(Option::unwrap)
                .map_err(kernel_err);
            let ours = vm_map(d.hook(), name)
                .user_lookup_flags(&key, flags)
                .map_err(vm_err);
            assert_eq!(ours, k, "{name} lookup {key:?} flags {flags}");
        }
    }
    // No lock in `plain`: which the kernel and the VM both know from the
    // BTF; `BPF_F_LOCK` is refused on it by both.
    let (k, ours) = (kmap("plain"), vm_map(d.hook(), "plain"));
    let v = value(1, 2, 3);
    assert_eq!(
        ours.user_update(&K0, &v, update::F_LOCK).map_err(vm_err),
        k.update(&K0, &v, update::F_LOCK).map_err(kernel_err)
    );
    assert_eq!(
        ours.user_lookup_flags(&K0, update::F_LOCK).map_err(vm_err),
        k.lookup_flags(&K0, update::F_LOCK)
            .map(Option::unwrap)
            .map_err(kernel_err)
    );
    // The program takes the locks after all that, on both sides alike.
    let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
    for i in 0..3 {
        let c = d.packet(i, 0, &frame);
        assert!(matches!(c, Comparison::Same), "{c:?}");
    }
}
