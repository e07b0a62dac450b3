//! Objects as older toolchains and other loaders' conventions leave them:
//! `.maps` relocations of type R_BPF_64_64, ring buffers with key and
//! value sizes, sizes of maps of maps.

mod common;

use common::{PRELUDE, build};
use maps::MapType;
use obj::*;

/// Rewrites the type of every relocation in section `rel_section` from
/// `from` to `to` (ELF64 little-endian, SHT_REL entries of 16 bytes).
fn retype_relocations(elf: &mut [u8], rel_section: &str, from: u32, to: u32) -> usize {
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes(b[at..at + 2].try_into().unwrap());
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at =
        |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(elf, 0x28),
        u16_at(elf, 0x3a) as usize,
        u16_at(elf, 0x3c) as usize,
        u16_at(elf, 0x3e) as usize,
    );
    let header = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(elf, header(shstrndx) + 0x18);
    let mut changed = 0;
    for i in 0..shnum {
        let h = header(i);
        let name_at = strtab + u32_at(elf, h) as usize;
        let name_len = elf[name_at..].iter().position(|&c| c == 0).unwrap();
        if &elf[name_at..name_at + name_len] != rel_section.as_bytes() || u32_at(elf, h + 4) != 9 {
            continue;
        }
        let (off, size) = (u64_at(elf, h + 0x18), u64_at(elf, h + 0x20));
        for e in (off..off + size).step_by(16) {
            if u32_at(elf, e + 8) == from {
                elf[e + 8..e + 12].copy_from_slice(&to.to_le_bytes());
                changed += 1;
            }
        }
    }
    changed
}

const MAP_IN_MAP: &str = r#"
int tail(struct xdp_md *ctx);
struct inner { __uint(type, 2); __uint(max_entries, 1); __type(key, __u32); __type(value, __u32); } inner_a SEC(".maps");
struct { __uint(type, 12); __uint(max_entries, 2); __type(key, __u32); __array(values, struct inner); } outer SEC(".maps") = { .values = { &inner_a } };
struct { __uint(type, 3); __uint(max_entries, 2); __uint(key_size, 4); __array(values, int (void *)); } jumps SEC(".maps") = { .values = { [1] = (void *)&tail } };
SEC("xdp") int main_prog(struct xdp_md *ctx) { __u32 k = 0; bpf_tail_call(ctx, &jumps, 1); return bpf_map_lookup_elem(&outer, &k) ? 1 : 2; }
SEC("xdp") int tail(struct xdp_md *ctx) { return 2; }
"#;

#[test]
fn maps_relocations_of_older_clang_fill_the_same_slots() {
    let mut elf = build("mim", &format!("{PRELUDE}{MAP_IN_MAP}"), &["-O2"]);
    let new = Object::parse(&elf).unwrap();
    // clang before 14 wrote R_BPF_64_64 (1) where it now writes
    // R_BPF_64_ABS64 (2).
    assert_eq!(retype_relocations(&mut elf, ".rel.maps", 2, 1), 2);
    let old = Object::parse(&elf).unwrap();
    for name in ["outer", "jumps"] {
        let (a, b) = (
            &new.maps[new.map_index(name).unwrap()],
            &old.maps[old.map_index(name).unwrap()],
        );
        assert!(!a.initial.is_empty());
        assert_eq!(a.initial, b.initial, "{name}");
    }
    // Any other type there is still an error.
    assert_eq!(retype_relocations(&mut elf, ".rel.maps", 1, 7), 2);
    let err = Object::parse(&elf).unwrap_err().to_string();
    assert!(err.contains("relocation type 7 in .maps"), "{err}");
}

#[test]
fn maps_of_maps_hold_four_byte_ids_whatever_the_declared_size() {
    // An explicit value_size 0 (as some older headers leave it) is 4, as
    // in libbpf; a conflicting size is an error naming the map.
    let src = MAP_IN_MAP.replace(
        "__type(key, __u32); __array(values, struct inner)",
        "__type(key, __u32); __uint(value_size, 0); __array(values, struct inner)",
    );
    let o = Object::parse(&build("mim0", &format!("{PRELUDE}{src}"), &["-O2"])).unwrap();
    let outer = &o.maps[o.map_index("outer").unwrap()];
    assert_eq!((outer.spec.key_size, outer.spec.value_size), (4, 4));
    let jumps = &o.maps[o.map_index("jumps").unwrap()];
    assert_eq!(jumps.spec.value_size, 4);

    let src = MAP_IN_MAP.replace(
        "__type(key, __u32); __array(values, struct inner)",
        "__type(key, __u32); __type(value, __u64); __array(values, struct inner)",
    );
    let err = Object::parse(&build("mim8", &format!("{PRELUDE}{src}"), &["-O2"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("map outer") && err.contains("conflicting value size 8 != 4"),
        "{err}"
    );
}

#[test]
fn ring_buffers_declared_with_key_and_value_sizes_load() {
    let src = r#"
struct event { __u64 ts; __u32 len; };
struct { __uint(type, 27); __uint(max_entries, 5000); __type(value, struct event); } events SEC(".maps");
struct { __uint(type, 27); __uint(max_entries, 4096); __uint(key_size, 4); __uint(value_size, 4); } sized SEC(".maps");
struct bpf_map_def { __u32 type, key_size, value_size, max_entries, map_flags; };
struct bpf_map_def SEC("maps") legacy = { .type = 27, .key_size = 4, .value_size = 16, .max_entries = 1 << 16 };
SEC("xdp") int prog(struct xdp_md *ctx) { return (bpf_map_lookup_elem(&events, 0) || bpf_map_lookup_elem(&sized, 0) || bpf_map_lookup_elem(&legacy, 0)) ? 1 : 2; }
"#;
    let o = Object::parse(&build("ringbuf", &format!("{PRELUDE}{src}"), &["-O2"])).unwrap();
    for (name, size) in [("events", 8192), ("sized", 4096), ("legacy", 65536)] {
        let m = &o.maps[o.map_index(name).unwrap()];
        assert_eq!(m.spec.map_type, MapType::Ringbuf);
        assert_eq!(
            (m.spec.key_size, m.spec.value_size, m.spec.max_entries),
            (0, 0, size),
            "{name}: no keys or values, a power-of-2 number of pages"
        );
        maps::Map::new(m.spec.clone(), 1).unwrap();
    }
}
