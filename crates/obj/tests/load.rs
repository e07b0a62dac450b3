//! Loading clang-built objects: maps, programs, relocations, linking.

mod common;

use common::{PRELUDE, build};
use isa::{CallTarget, Insn, Lddw};
use maps::MapType;
use obj::*;

const MIXED: &str = r#"
struct { __uint(type, 2); __uint(max_entries, 4); __type(key, __u32); __type(value, __u64); } counters SEC(".maps");
struct { __uint(type, 1); __uint(max_entries, 1024); __type(key, __u32); __type(value, __u64); __uint(pinning, 1); } flows SEC(".maps");
int tail_target(struct xdp_md *ctx);
struct { __uint(type, 3); __uint(max_entries, 2); __uint(key_size, 4); __array(values, int (void *)); } jumps SEC(".maps") = { .values = { [1] = (void *)&tail_target } };
struct inner { __uint(type, 2); __uint(max_entries, 1); __type(key, __u32); __type(value, __u32); } inner_a SEC(".maps");
struct { __uint(type, 12); __uint(max_entries, 2); __type(key, __u32); __array(values, struct inner); } outer SEC(".maps") = { .values = { &inner_a } };
volatile const __u32 mode = 2;
__u64 total = 7;
__u32 zero;
static __attribute__((noinline)) __u64 bump(__u32 k) {
    __u64 *v = bpf_map_lookup_elem(&counters, &k);
    if (!v) return 0;
    return __sync_fetch_and_add(v, 1) + total + zero;
}
SEC("xdp") int main_prog(struct xdp_md *ctx) {
    if (mode == 3) bpf_tail_call(ctx, &jumps, 1);
    return bump(ctx->rx_queue_index & 3) ? 2 : 1;
}
SEC("xdp") int tail_target(struct xdp_md *ctx) { return bump(0) ? 1 : 2; }
SEC("kprobe/foo") int probe(void *ctx) { return 0; }
"#;

fn mixed() -> Object {
    Object::parse(&build("mixed", &format!("{PRELUDE}{MIXED}"), &["-O2"])).unwrap()
}

#[test]
fn maps_from_btf_and_data_sections() {
    let o = mixed();
    assert_eq!(o.license, "GPL");
    let names: Vec<&str> = o.maps.iter().map(MapDef::name).collect();
    for want in [
        "counters", "flows", "jumps", "inner_a", "outer", ".rodata", ".data", ".bss",
    ] {
        assert!(names.contains(&want), "missing {want} in {names:?}");
    }
    let m = &o.maps[o.map_index("counters").unwrap()];
    assert_eq!(
        (
            m.spec.map_type,
            m.spec.key_size,
            m.spec.value_size,
            m.spec.max_entries
        ),
        (MapType::Array, 4, 8, 4)
    );
    assert!(o.maps[o.map_index("flows").unwrap()].pin_by_name);
    let jumps = &o.maps[o.map_index("jumps").unwrap()];
    assert_eq!(jumps.spec.value_size, 4);
    assert_eq!(
        jumps.initial,
        vec![(1, InitialRef::Program("tail_target".into()))]
    );
    let outer = &o.maps[o.map_index("outer").unwrap()];
    assert_eq!(outer.initial, vec![(0, InitialRef::Map("inner_a".into()))]);
    let inner = outer.inner.as_ref().unwrap();
    assert_eq!(
        (inner.spec.map_type, inner.spec.value_size),
        (MapType::Array, 4)
    );
    // Global data: .rodata is read-only to programs, .bss is zeroed.
    let rodata = &o.maps[o.map_index(".rodata").unwrap()];
    assert_eq!(rodata.data.as_deref(), Some(&2u32.to_le_bytes()[..]));
    assert!(matches!(
        rodata.origin,
        MapOrigin::Data { readonly: true, .. }
    ));
    assert_eq!(
        o.maps[o.map_index(".data").unwrap()].data.as_deref(),
        Some(&7u64.to_le_bytes()[..])
    );
    assert_eq!(
        o.maps[o.map_index(".bss").unwrap()].data.as_deref(),
        Some(&[0u8; 4][..])
    );
    let mode = o.global_var("mode").unwrap();
    assert_eq!((mode.offset, mode.size, mode.readonly), (0, 4, true));
    assert!(mode.type_name.contains("u32"), "{}", mode.type_name);
}

#[test]
fn programs_are_linked_with_their_subprograms() {
    let o = mixed();
    let names: Vec<(&str, &str)> = o
        .programs
        .iter()
        .map(|p| (p.name.as_str(), p.section.as_str()))
        .collect();
    assert!(
        names.contains(&("main_prog", "xdp")) && names.contains(&("tail_target", "xdp")),
        "{names:?}"
    );
    let probe = o.program("probe").unwrap();
    assert!(
        matches!(&probe.kind, ProgramKind::Unsupported(why) if why.contains("kprobe")),
        "{:?}",
        probe.kind
    );

    let main = o.program("main_prog").unwrap();
    assert!(main.kind.is_xdp());
    assert_eq!(
        main.functions
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        ["main_prog", "bump"]
    );
    let bump_at = main.functions[1].1;
    // The call lands on bump, appended after main_prog.
    let mut pc = 0;
    let mut saw_call = false;
    for insn in &main.insns {
        if let Insn::Call(CallTarget::Local(off)) = insn {
            assert_eq!((pc as i64 + 1 + i64::from(*off)) as usize, bump_at);
            saw_call = true;
        }
        pc += insn.slots();
    }
    assert!(saw_call);
    // Map and data references point at the object's maps.
    let lddws: Vec<Lddw> = main
        .insns
        .iter()
        .filter_map(|i| match i {
            Insn::Lddw { value, .. } => Some(*value),
            _ => None,
        })
        .collect();
    let idx = |n: &str| o.map_index(n).unwrap() as i32;
    assert!(
        lddws.contains(&Lddw::MapIdxValue {
            idx: idx(".rodata"),
            off: 0
        }),
        "{lddws:?}"
    );
    assert!(lddws.contains(&Lddw::MapIdx(idx("jumps"))));
    assert!(lddws.contains(&Lddw::MapIdx(idx("counters"))));
    assert!(lddws.contains(&Lddw::MapIdxValue {
        idx: idx(".data"),
        off: 0
    }));
    assert!(lddws.contains(&Lddw::MapIdxValue {
        idx: idx(".bss"),
        off: 0
    }));
    // Line info from -g maps instructions back to the C source.
    let line = main.line_at(0).expect("line info");
    assert!(line.file.ends_with("prog.c"), "{line:?}");
    assert!(
        main.lines
            .iter()
            .any(|l| l.source.contains("bpf_tail_call")),
        "{:?}",
        main.lines
    );
    assert!(
        main.line_at(bump_at)
            .unwrap()
            .source
            .contains("bpf_map_lookup_elem")
            || main.lines.iter().any(|l| l.pc >= bump_at)
    );
}

#[test]
fn every_cpu_level_and_optimisation_loads() {
    for cpu in ["v1", "v2", "v3", "v4"] {
        for opt in ["-O1", "-O2"] {
            let bytes = build(
                &format!("lvl{cpu}{opt}"),
                &format!("{PRELUDE}{MIXED}"),
                &[opt, &format!("-mcpu={cpu}")],
            );
            let o = Object::parse(&bytes).unwrap_or_else(|e| panic!("{cpu} {opt}: {e}"));
            assert_eq!(o.programs.len(), 3, "{cpu} {opt}");
        }
    }
}

const TAGGED: &str = r#"
struct { __uint(type, 3); __uint(max_entries, 4); __uint(key_size, 4); __uint(value_size, 4); __uint(pinning, 16); } calls SEC(".maps");
struct { __uint(type, 2); __uint(max_entries, 1); __type(key, __u32); __type(value, __u32); __uint(pinning, 2); } shared SEC(".maps");
__attribute__((section("xdp/tail"), used, btf_decl_tag("tail:calls/" TAIL_INDEX))) int tail_a(struct xdp_md *ctx) { return 1; }
SEC("xdp/entry") int entry(struct xdp_md *ctx) { bpf_tail_call(ctx, &calls, 2); return 2; }
"#;

#[test]
fn tail_call_tags_fill_program_arrays_and_other_pinning_values_load() {
    // Cilium's convention: `btf_decl_tag("tail:MAP/INDEX")` on a function.
    let src = format!("{PRELUDE}#define TAIL_INDEX \"2\"\n{TAGGED}");
    let o = Object::parse(&build("tagged", &src, &["-O2"])).unwrap();
    let calls = &o.maps[o.map_index("calls").unwrap()];
    assert_eq!(calls.initial, [(2, InitialRef::Program("tail_a".into()))]);
    // Pinning 16 is another loader's flag (Cilium's), 2 iproute2's global
    // namespace: both load; only the latter shares by name.
    assert!(!calls.pin_by_name);
    assert!(o.maps[o.map_index("shared").unwrap()].pin_by_name);
    // A tag past the map's end names the map and the function.
    let src = format!("{PRELUDE}#define TAIL_INDEX \"9\"\n{TAGGED}");
    let err = Object::parse(&build("tagged_bad", &src, &["-O2"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("calls") && err.contains("tail_a") && err.contains("4 entries"),
        "{err}"
    );
}
