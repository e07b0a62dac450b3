//! Malformed and hostile objects give clear errors, never panics.

mod common;

use common::{PRELUDE, build};
use obj::{ObjError, Object};
use object::{Object as _, ObjectSection};

const SOURCE: &str = r#"
struct { __uint(type, 2); __uint(max_entries, 4); __type(key, __u32); __type(value, __u64); } counters SEC(".maps");
typedef __u32 my_u32;
my_u32 seen;
SEC("xdp") int prog(struct xdp_md *ctx) {
    __u32 k = 0;
    __u64 *v = bpf_map_lookup_elem(&counters, &k);
    seen = 1;
    return v ? 2 : 1;
}
"#;

fn good() -> Vec<u8> {
    build("malformed", &format!("{PRELUDE}{SOURCE}"), &["-O2"])
}

/// File offset and size of a section's data.
fn section_range(elf: &[u8], name: &str) -> (usize, usize) {
    let f = object::File::parse(elf).unwrap();
    let s = f
        .section_by_name(name)
        .unwrap_or_else(|| panic!("no section {name}"));
    let (off, size) = s.file_range().unwrap();
    (off as usize, size as usize)
}

fn err(bytes: &[u8]) -> ObjError {
    Object::parse(bytes).expect_err("must not load")
}

#[test]
fn the_good_object_loads() {
    Object::parse(&good()).unwrap();
}

#[test]
fn truncated_files() {
    let g = good();
    for len in [0, 3, 16, 63, 64, g.len() / 2, g.len() - 1] {
        let e = Object::parse(&g[..len]).expect_err("truncated");
        assert!(
            matches!(e, ObjError::NotElf | ObjError::Malformed(_)),
            "{len}: {e}"
        );
    }
}

#[test]
fn wrong_machine() {
    let mut g = good();
    g[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    let e = err(&g);
    assert!(matches!(e, ObjError::WrongMachine(_)), "{e}");
    assert!(e.to_string().contains("not BPF"), "{e}");
}

#[test]
fn bad_relocations() {
    let g = good();
    let (off, size) = section_range(&g, ".relxdp");
    assert!(size >= 16);
    // Unknown relocation type.
    let mut b = g.clone();
    b[off + 8] = 99;
    let e = err(&b);
    assert!(
        matches!(&e, ObjError::Relocation { section, .. } if section == "xdp"),
        "{e}"
    );
    assert!(e.to_string().contains("unknown relocation type 99"), "{e}");
    // A relocation that does not land on an lddw or call.
    let mut b = g.clone();
    b[off..off + 8].copy_from_slice(&0u64.to_le_bytes());
    let e = err(&b);
    assert!(e.to_string().contains("offset 0 of section xdp"), "{e}");
    // A relocation past the section.
    let mut b = g.clone();
    b[off..off + 8].copy_from_slice(&4096u64.to_le_bytes());
    assert!(matches!(
        err(&b),
        ObjError::Relocation { .. } | ObjError::Malformed(_)
    ));
    // A symbol index out of range.
    let mut b = g.clone();
    b[off + 12..off + 16].copy_from_slice(&0x00ff_ffffu32.to_le_bytes());
    let e = err(&b);
    assert!(
        matches!(e, ObjError::Relocation { .. } | ObjError::Malformed(_)),
        "{e}"
    );
}

#[test]
fn btf_loops_and_dangling_types() {
    let g = good();
    let (off, _) = section_range(&g, ".BTF");
    let hdr_len = u32::from_le_bytes(g[off + 4..off + 8].try_into().unwrap()) as usize;
    let type_off = u32::from_le_bytes(g[off + 8..off + 12].try_into().unwrap()) as usize;
    let types = off + hdr_len + type_off;
    // Find the typedef my_u32 (kind 8) by walking the type records.
    let btf = obj::Btf::parse(&g[off..]).unwrap();
    let (id, _) = btf.types().find(|(_, t)| t.name == "my_u32").unwrap();
    let mut pos = types;
    for (i, t) in btf.types().skip(1) {
        if i == id {
            break;
        }
        pos += 12 + extra_bytes(&t.kind);
    }
    // The typedef points at itself.
    let mut b = g.clone();
    b[pos + 8..pos + 12].copy_from_slice(&id.to_le_bytes());
    let e = err(&b);
    assert!(matches!(e, ObjError::Btf(obj::BtfError::Loop(_))), "{e}");
    assert!(e.to_string().contains("loop"), "{e}");
    // The typedef points past the last type.
    let mut b = g.clone();
    b[pos + 8..pos + 12].copy_from_slice(&100_000u32.to_le_bytes());
    let e = err(&b);
    assert!(
        matches!(
            e,
            ObjError::Btf(obj::BtfError::Dangling {
                target: 100_000,
                ..
            })
        ),
        "{e}"
    );
    // A bad magic.
    let mut b = g.clone();
    b[off] = 0;
    assert!(err(&b).to_string().contains("bad magic"));
}

fn extra_bytes(k: &obj::BtfKind) -> usize {
    use obj::BtfKind::*;
    match k {
        Int { .. } | Var { .. } | DeclTag { .. } => 4,
        Array { .. } => 12,
        Struct { members, .. } | Union { members, .. } => 12 * members.len(),
        Enum { values, .. } => 8 * values.len(),
        FuncProto { params, .. } => 8 * params.len(),
        Datasec { vars, .. } => 12 * vars.len(),
        _ => 0,
    }
}

#[test]
fn maps_without_btf() {
    let g = good();
    // Rename .BTF (and .BTF.ext) in the section name table.
    let mut b = g.clone();
    let (off, size) = section_range(&g, ".strtab");
    let names = &mut b[off..off + size];
    let mut i = 0;
    while let Some(p) = names[i..]
        .windows(5)
        .position(|w| w == b".BTF\0" || w == b".BTF.")
    {
        names[i + p + 1] = b'X';
        i += p + 1;
    }
    let e = err(&b);
    assert!(e.to_string().contains("no .BTF"), "{e}");
}

#[test]
fn random_corruption_never_panics() {
    let g = good();
    let mut seed = 0x1234_5678_9abc_def0u64;
    for _ in 0..3000 {
        let mut b = g.clone();
        for _ in 0..4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = (seed as usize) % b.len();
            b[at] = (seed >> 32) as u8;
        }
        let _ = Object::parse(&b);
    }
}

const CORE_SOURCE: &str = r#"
struct hdr { __u32 a; __u16 lo:4, hi:12; __u64 big[2]; } __attribute__((preserve_access_index));
enum e { E1 = 1, E2 = 2 };
SEC("xdp") int prog(struct xdp_md *ctx) {
    struct hdr *h = (void *)(long)ctx->data;
    if ((void *)(h + 1) > (void *)(long)ctx->data_end) return 1;
    return h->a + h->hi + __builtin_preserve_field_info(h->big, 1)
        + __builtin_preserve_enum_value(*(typeof(enum e) *)E2, 1);
}
"#;

#[test]
fn corrupt_core_relocations_give_errors_not_panics() {
    let g = build("core", &format!("{PRELUDE}{CORE_SOURCE}"), &["-O2"]);
    let loaded = Object::parse_with(&g, None).unwrap();
    assert!(loaded.programs[0].core_relocations >= 4);
    // Rewrite the relocation records (type ids, access strings, kinds) and
    // the types they point at, at random.
    let (ext, ext_len) = section_range(&g, ".BTF.ext");
    let (btf, btf_len) = section_range(&g, ".BTF");
    let mut seed = 0x0bad_c0de_1234_5678u64;
    let mut errors = 0;
    for i in 0..4000 {
        let mut b = g.clone();
        for _ in 0..3 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let (base, len) = if i % 2 == 0 {
                (ext, ext_len)
            } else {
                (btf, btf_len)
            };
            b[base + (seed as usize) % len] = (seed >> 40) as u8;
        }
        let target = obj::CoreTarget::bundled();
        for r in [
            Object::parse_with(&b, None),
            Object::parse_with(&b, Some(target)),
        ] {
            errors += usize::from(r.is_err());
        }
    }
    assert!(errors > 0);
    // Every record with every relocation kind (and some that do not exist):
    // a shift asked of a 16-byte array, an enum kind on a struct...
    let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let hdr_len = word(&g, ext + 4);
    let core = ext + hdr_len + word(&g, ext + 24);
    let rec_size = word(&g, core);
    let records = word(&g, core + 8);
    assert!(records >= 4);
    for r in 0..records {
        for kind in 0..16u32 {
            let mut b = g.clone();
            let at = core + 12 + r * rec_size + 12;
            b[at..at + 4].copy_from_slice(&kind.to_le_bytes());
            let _ = Object::parse_with(&b, None);
            let _ = Object::parse_with(&b, Some(obj::CoreTarget::bundled()));
        }
    }
}
