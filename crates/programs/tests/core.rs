//! CO-RE: field, type and enum relocations follow the target's types
//! (a custom target BTF, the object's own, the running kernel's), poisoned
//! instructions fail when run and only then, and every patch matches what
//! libbpf does to the same object (when root can ask bpftool).

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use common::*;
use isa::Insn;
use runtime::*;

/// The program's view: two structs and an enum, all relocatable.
const LOCAL: &str = r#"
#include "parse.h"
#include <bpf/bpf_core_read.h>

struct sluice_hdr { __u32 a; __u32 b; } __attribute__((preserve_access_index));
struct sluice_gone { __u32 x; __u32 missing; } __attribute__((preserve_access_index));
enum sluice_color { SLUICE_RED = 1, SLUICE_GREEN = 2 };
long res[8];
long bits[8];

/* The kernel's struct tcphdr (the flavor suffix is dropped when matching),
 * seen without its `seq` field: every offset moves, bitfields included. */
struct tcphdr___sluice {
	__u16 source;
	__u16 dest;
	__u32 ack_seq;
	__u16 res1:4, doff:4, fin:1, syn:1, rst:1, psh:1, ack:1, urg:1, ece:1, cwr:1;
} __attribute__((preserve_access_index));

SEC("xdp") int core_fields(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct sluice_hdr *h = data;
	struct sluice_gone *g = data;
	if (data + 64 > end)
		return XDP_DROP;
	res[0] = h->a;
	res[1] = h->b;
	res[2] = bpf_core_field_exists(g->missing);
	res[3] = bpf_core_type_size(struct sluice_hdr);
	res[4] = bpf_core_enum_value(enum sluice_color, SLUICE_GREEN);
	res[5] = bpf_core_field_size(h->b);
	/* The guarded pattern: the read runs only where the field exists. */
	res[6] = bpf_core_field_exists(g->missing) ? g->missing : -1;
	res[7] = bpf_core_type_exists(struct sluice_gone);
	return XDP_PASS;
}

SEC("xdp") int core_bitfields(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct tcphdr___sluice *t = data;
	if (data + 64 > end)
		return XDP_DROP;
	bits[0] = t->ack_seq;
	bits[1] = BPF_CORE_READ_BITFIELD(t, doff);
	bits[2] = BPF_CORE_READ_BITFIELD(t, fin);
	bits[3] = BPF_CORE_READ_BITFIELD(t, rst);
	bits[4] = BPF_CORE_READ_BITFIELD(t, psh);
	bits[5] = bpf_core_field_offset(t->ack_seq);
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
"#;

/// Another build's view of the same types: reordered, resized, one field
/// gone, the enum renumbered.
const TARGET: &str = r#"
typedef unsigned short __u16; typedef unsigned int __u32; typedef unsigned long long __u64;
struct sluice_hdr { __u64 pad; __u16 b; __u32 a; };
struct sluice_gone { __u32 x; };
enum sluice_color { SLUICE_GREEN = 7, SLUICE_RED = 1 };
struct sluice_hdr t0;
struct sluice_gone t1;
enum sluice_color t2;
__attribute__((section("xdp"), used)) int target_types(void *ctx) { return 0; }
"#;

fn run(object: obj::Object) -> Result<Vec<i64>, vm::VmError> {
    run_program(object, "core_fields", "res", &(0..64).collect::<Vec<u8>>())
}

/// Runs `prog` over `packet`; returns the global array `out`.
fn run_program(
    object: obj::Object,
    prog: &str,
    out: &str,
    packet: &[u8],
) -> Result<Vec<i64>, vm::VmError> {
    let var = object.global_var(out).unwrap();
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let p = image.find_program(Some(prog)).unwrap();
    let mut h = Hook::new(image, p, 0).unwrap();
    h.run(packet, &meta(0))?;
    let bss = h.maps()[var.map].user_lookup(&0u32.to_le_bytes()).unwrap();
    Ok(bss[var.offset..var.offset + 64]
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

#[test]
fn fields_types_and_enums_follow_a_custom_target() {
    let local = compile("core_local", LOCAL);
    let target_obj = obj::Object::parse(&compile("core_target", TARGET)).unwrap();
    let target = obj::CoreTarget::new(target_obj.btf.unwrap(), "target.o");
    let object = obj::Object::parse_with(&local, Some(&target)).unwrap();
    let p = object.program("core_fields").unwrap();
    assert!(
        p.core_relocations >= 8,
        "{} relocations",
        p.core_relocations
    );
    // Only the guarded read of the missing field is poisoned.
    assert_eq!(p.core_poisoned.len(), 1, "{:?}", p.core_poisoned);
    assert!(
        p.core_poisoned[0].1.contains("struct sluice_gone")
            && p.core_poisoned[0].1.contains("target.o"),
        "{:?}",
        p.core_poisoned
    );
    // Packet bytes are 0, 1, 2...: `a` now sits at 12, `b` is 16 bits at 8.
    assert_eq!(
        run(object).unwrap(),
        [0x0f0e0d0c, 0x0908, 0, 16, 7, 2, u32::MAX.into(), 1]
    );
}

#[test]
fn the_objects_own_types_give_the_layout_it_was_built_with() {
    let object = obj::Object::parse_with(&compile("core_own", LOCAL), None).unwrap();
    assert_eq!(object.program("core_fields").unwrap().core_poisoned, []);
    assert_eq!(
        run(object).unwrap(),
        [0x03020100, 0x07060504, 1, 8, 2, 4, 0x07060504, 1]
    );
}

#[test]
fn bitfields_follow_the_kernels_struct_tcphdr() {
    let Some(kernel) = kernel_btf("bitfield relocations against the kernel") else {
        return;
    };
    let bytes = compile("core_bits", LOCAL);
    let object = obj::Object::parse_with(&bytes, Some(kernel)).unwrap();
    assert_eq!(object.program("core_bitfields").unwrap().core_poisoned, []);
    let packet: Vec<u8> = (0..64u32).map(|i| (i * 0x1d + 0x35) as u8).collect();
    // ack_seq, then doff (bits 4-7), fin (8), rst (10) and psh (11) of the
    // flags' u16, and the offset of ack_seq: the UAPI layout of struct
    // tcphdr puts ack_seq at 8 and the flags at 12.
    let expect = |ack: usize, flags: usize| {
        let f = i64::from(u16::from_le_bytes([packet[flags], packet[flags + 1]]));
        let a = i64::from(u32::from_le_bytes(packet[ack..ack + 4].try_into().unwrap()));
        [
            a,
            (f >> 4) & 0xf,
            (f >> 8) & 1,
            (f >> 10) & 1,
            (f >> 11) & 1,
            ack as i64,
        ]
    };
    let got = run_program(object, "core_bitfields", "bits", &packet).unwrap();
    assert_eq!(got[..6], expect(8, 12));
    // The object's own layout: ack_seq at 4, the flags at 8.
    let own = obj::Object::parse_with(&bytes, None).unwrap();
    let got = run_program(own, "core_bitfields", "bits", &packet).unwrap();
    assert_eq!(got[..6], expect(4, 8));
}

#[test]
fn the_bundled_types_resolve_the_examples_like_the_kernel() {
    let Some(kernel) = kernel_btf("bundled-vs-kernel comparison") else {
        return;
    };
    for name in programs::names() {
        let bytes = compile(name, &core_variant(name));
        let a = obj::Object::parse_with(&bytes, Some(kernel)).unwrap();
        let b = obj::Object::parse_with(&bytes, Some(obj::CoreTarget::bundled())).unwrap();
        let own = obj::Object::parse_with(&bytes, None).unwrap();
        let (a, b, own) = (&a.programs[0], &b.programs[0], &own.programs[0]);
        assert_eq!(b.core_poisoned, [], "{name}");
        assert_eq!(a.core_relocations, b.core_relocations, "{name}");
        assert_eq!(
            a.insns, b.insns,
            "{name}: bundled and kernel resolutions differ"
        );
        // UAPI layouts are what the program was compiled with.
        assert_eq!(a.insns, own.insns, "{name}");
    }
}

/// The running kernel's BTF; when it has none the skip is loud, and a
/// failure under `SLUICE_REQUIRE_KERNEL=1` (CI).
fn kernel_btf(what: &str) -> Option<&'static obj::CoreTarget> {
    let k = obj::CoreTarget::kernel();
    if k.is_none() {
        eprintln!("SKIPPED {what}: no kernel BTF at /sys/kernel/btf/vmlinux");
        assert!(
            std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
            "SLUICE_REQUIRE_KERNEL=1 but {what} cannot run: no kernel BTF"
        );
    }
    k
}

#[test]
fn a_poisoned_instruction_fails_when_it_runs_naming_the_relocation() {
    // Against a target without `struct sluice_hdr`, reading its fields
    // cannot be relocated: loading succeeds, running the read fails.
    let target_obj = obj::Object::parse(&compile(
        "core_target2",
        "struct sluice_gone { unsigned x; } t1;\n\
         __attribute__((section(\"xdp\"), used)) int f(void *c) { return 0; }\n",
    ))
    .unwrap();
    let target = obj::CoreTarget::new(target_obj.btf.unwrap(), "small.o");
    let object = obj::Object::parse_with(&compile("core_p", LOCAL), Some(&target)).unwrap();
    let poisoned = &object.program("core_fields").unwrap().core_poisoned;
    assert!(
        poisoned
            .iter()
            .any(|(_, why)| why.contains("struct sluice_hdr")),
        "{poisoned:?}"
    );
    let err = run(object).unwrap_err();
    assert_eq!(err.kind, vm::VmErrorKind::CorePoisoned);
    assert!(
        err.to_string().contains("struct sluice_hdr") && err.to_string().contains("small.o"),
        "{err}"
    );
}

#[test]
fn a_relocation_against_an_unknown_local_type_is_a_load_error() {
    // A corrupt .BTF.ext record: the error names the program and the slot.
    let mut bytes = compile("core_bad", LOCAL);
    let object = obj::Object::parse_with(&bytes, None).unwrap();
    let n_types = object.btf.as_ref().unwrap().len() as u32;
    // Find the first CO-RE record's type id in .BTF.ext and break it.
    let elf = object::File::parse(&*bytes).unwrap();
    use object::{Object as _, ObjectSection as _};
    let ext = elf.section_by_name(".BTF.ext").unwrap();
    let (off, _) = ext.file_range().unwrap();
    let data = ext.data().unwrap().to_vec();
    let u32at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
    let hdr_len = u32at(4);
    let (core_off, core_len) = (u32at(24), u32at(28));
    assert!(core_len > 0, "no CO-RE section in .BTF.ext");
    // core_relo: rec_size, then per section: sec_name_off, num_info, records.
    let first_record = hdr_len + core_off + 4 + 8;
    let type_id_at = off as usize + first_record + 4;
    bytes[type_id_at..type_id_at + 4].copy_from_slice(&(n_types + 100).to_le_bytes());
    let err = obj::Object::parse_with(&bytes, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("core_fields") && err.contains("CO-RE") && err.contains("does not exist"),
        "{err}"
    );
}

/// What libbpf did to each instruction, from `bpftool -d prog loadall`'s log:
/// program -> slot -> Some(new offset or immediate) or None (poisoned).
fn libbpf_patches(object: &[u8]) -> Option<BTreeMap<String, BTreeMap<usize, Option<i64>>>> {
    let dir = std::env::temp_dir().join(format!("sluice-core-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("o.o");
    std::fs::write(&path, object).unwrap();
    let pin = format!("/sys/fs/bpf/sluice-core-{}", std::process::id());
    let out = Command::new("bpftool")
        .args(["-d", "prog", "loadall"])
        .arg(&path)
        .arg(&pin)
        .output()
        .ok()?;
    let _ = std::fs::remove_dir_all(&pin);
    std::fs::remove_dir_all(&dir).unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    // Maps pinned by name (LIBBPF_PIN_BY_NAME) land in /sys/fs/bpf itself:
    // remove the ones this load created.
    for line in log.lines() {
        if let Some(path) = line
            .strip_prefix("libbpf: pinned map '")
            .and_then(|r| r.strip_suffix('\''))
        {
            let _ = std::fs::remove_file(path);
        }
    }
    let mut patches: BTreeMap<String, BTreeMap<usize, Option<i64>>> = BTreeMap::new();
    for line in log.lines() {
        let Some(rest) = line.strip_prefix("libbpf: prog '") else {
            continue;
        };
        let Some((prog, rest)) = rest.split_once("': relo #") else {
            continue;
        };
        let insn_no = |s: &str| -> usize {
            let s = &s[s.find("insn #").unwrap() + 6..];
            s[..s.find(|c: char| !c.is_ascii_digit()).unwrap()]
                .parse()
                .unwrap()
        };
        let entry = patches.entry(prog.to_string()).or_default();
        if rest.contains("substituting insn #") {
            entry.insert(insn_no(rest), None);
        } else if rest.contains("patched insn #")
            && rest.contains(" -> ")
            && !rest.contains("mem_sz")
        {
            let new = rest
                .rsplit(" -> ")
                .next()
                .unwrap()
                .trim()
                .parse::<i64>()
                .unwrap();
            entry.insert(insn_no(rest), Some(new));
        }
    }
    Some(patches)
}

#[test]
fn every_patch_matches_libbpf_against_the_running_kernel() {
    if !testkit::root_available("the libbpf CO-RE comparison") {
        return;
    }
    assert!(
        obj::CoreTarget::kernel().is_some(),
        "the kernel has no BTF at /sys/kernel/btf/vmlinux"
    );
    let mut objects: Vec<(String, Vec<u8>)> =
        vec![("core_fields".into(), compile("core_k", LOCAL))];
    for name in programs::names() {
        objects.push((name.to_string(), compile(name, &core_variant(name))));
    }
    // Third-party objects: xdpdump's fentry programs read kernel structs.
    for path in programs::thirdparty::xdp_tools_objects() {
        objects.push((path.display().to_string(), std::fs::read(&path).unwrap()));
    }
    let mut compared = 0;
    for (name, bytes) in &objects {
        let ours = obj::Object::parse(bytes).unwrap();
        let theirs = libbpf_patches(bytes).expect("bpftool runs (the set-up installs it)");
        let original = obj::Object::parse_with(bytes, None).unwrap();
        for (p, orig) in ours.programs.iter().zip(&original.programs) {
            let want = theirs.get(&p.name).cloned().unwrap_or_default();
            // Every instruction we changed, and how (by slot, as libbpf counts).
            let (now, before) = (slots(&p.insns), slots(&orig.insns));
            let mut got = BTreeMap::new();
            for pc in 0..now.len() {
                let poisoned = |at: usize| p.core_poisoned.iter().any(|(x, _)| *x == at);
                if poisoned(pc) {
                    got.insert(pc, None);
                } else if pc > 0 && poisoned(pc - 1) && before[pc - 1].code == isa::opcode::LDDW {
                    // The second half of a poisoned lddw (libbpf logs both).
                    got.insert(pc, None);
                } else if now[pc] != before[pc] {
                    got.insert(pc, Some(patched_value(&now, pc)));
                }
            }
            // libbpf also logs patches that leave the value as it was.
            let want_changed: BTreeMap<usize, Option<i64>> = want
                .into_iter()
                .filter(|(pc, v)| v.is_none() || Some(patched_value(&before, *pc)) != *v)
                .collect();
            assert_eq!(
                got, want_changed,
                "{name}/{}: CO-RE patches differ from libbpf's",
                p.name
            );
            compared += p.core_relocations;
        }
    }
    println!("{compared} CO-RE relocations agree with libbpf");
    assert!(compared > 100);
}

fn slots(insns: &[Insn]) -> Vec<isa::RawInsn> {
    isa::encode(insns)
        .chunks_exact(8)
        .map(|c| isa::RawInsn::from_bytes(c.try_into().unwrap()))
        .collect()
}

/// The offset or immediate a CO-RE relocation sets in the instruction at
/// `pc`, as libbpf logs it.
fn patched_value(code: &[isa::RawInsn], pc: usize) -> i64 {
    use isa::opcode::class;
    let insn = code[pc];
    match insn.code & class::MASK {
        class::LDX | class::ST | class::STX => i64::from(insn.off),
        class::ALU | class::ALU64 => i64::from(insn.imm as u32),
        _ if insn.code == isa::opcode::LDDW => {
            ((insn.imm as u32 as u64) | (u64::from(code[pc + 1].imm as u32) << 32)) as i64
        }
        _ => panic!("unexpected relocated instruction {insn:?}"),
    }
}
