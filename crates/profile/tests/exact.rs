//! Programs of known cost, written instruction by instruction, give their
//! alpha, beta, gamma and delta exactly, in the interpreter and the JIT.

use pipeline::Generated;
use profile::{CostModel, VmEngine, profile};
use runtime::{Hook, Image, LoadOptions};

/// `asm` as the whole body of an XDP program.
fn object(asm: &str) -> Vec<u8> {
    let asm: String = asm
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("\t\t\"{}\\n\"\n", l.trim()))
        .collect();
    let source = format!(
        r#"#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("xdp") __attribute__((naked)) int prog(struct xdp_md *ctx)
{{
	asm volatile(
{asm}	::: "memory");
}}
char _license[] SEC("license") = "GPL";
"#
    );
    programs::compile::compile("exact", &source)
}

fn hook(object: &[u8], jit: bool) -> Hook {
    let object = obj::Object::parse(object).unwrap();
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let prog = image.find_program(None).unwrap();
    let mut h = Hook::new(image, prog, 0).unwrap();
    if jit {
        h.enable_jit().unwrap();
    }
    h
}

/// Frames of 64 to 1500 bytes, three of each size.
fn sizes() -> Generated {
    let specs: Vec<packet::GenSpec> = (64..=1500)
        .step_by(97)
        .map(|size| packet::GenSpec::parse(&format!("udp,size={size},count=3")).unwrap())
        .collect();
    Generated::new(&specs)
}

fn model(asm: &str, jit: bool) -> CostModel {
    let mut h = hook(&object(asm), jit);
    let p = profile(&mut h, "exact", &mut sizes(), None, &mut |_| {}).unwrap();
    assert_eq!(
        p.engine,
        if jit {
            VmEngine::Jit
        } else {
            VmEngine::Interpreter
        }
    );
    assert_eq!(p.packets.len(), 15 * 3);
    CostModel::fit(&p)
}

/// Sums every byte of the packet: two context loads and 4 instructions
/// before the loop, 7 instructions and one packet load per byte, 3 to
/// leave the loop and 2 to return.
const SUM: &str = r"
	r2 = *(u32 *)(r1 + 0)
	r3 = *(u32 *)(r1 + 4)
	r0 = 0
	r4 = r2
l_%=:
	r5 = r4
	r5 += 1
	if r5 > r3 goto e_%=
	r6 = *(u8 *)(r4 + 0)
	r0 += r6
	r4 += 1
	goto l_%=
e_%=:
	r0 = 2
	exit
";

#[test]
fn a_loop_over_the_packet() {
    for jit in [false, true] {
        let m = model(SUM, jit);
        let got = (m.alpha(), m.beta(), m.gamma(), m.delta());
        assert_eq!(got, (9.0, 7.0, 2.0, 1.0), "jit {jit}");
        assert_eq!((m.insns.line.r2, m.accesses.line.r2), (1.0, 1.0));
        assert!(m.linear);
        assert_eq!(m.insns.outliers, 0);
        // Per byte one branch not taken; the last one is taken.
        let row = &m.rows[0];
        assert_eq!(row.branches_mean, f64::from(row.len) + 1.0);
        assert_eq!(row.taken_mean, 1.0);
        let packet = row.places.iter().find(|p| p.place == "packet").unwrap();
        assert_eq!((packet.loads, packet.stores), (f64::from(row.len), 0.0));
        let ctx = row.places.iter().find(|p| p.place == "context").unwrap();
        assert_eq!(ctx.loads, 2.0);
    }
}

/// Straight-line code: 8 instructions, 3 packet loads (bounds checked
/// first), one stack store and one stack load, whatever the length.
const FIXED: &str = r"
	r2 = *(u32 *)(r1 + 0)
	r3 = *(u32 *)(r1 + 4)
	r4 = r2
	r4 += 14
	if r4 > r3 goto d_%=
	r5 = *(u8 *)(r2 + 0)
	r5 = *(u16 *)(r2 + 12)
	r5 = *(u8 *)(r2 + 13)
	*(u64 *)(r10 - 8) = r5
	r0 = *(u64 *)(r10 - 8)
	r0 = 2
d_%=:
	exit
";

#[test]
fn straight_line_code_costs_the_same_at_every_length() {
    for jit in [false, true] {
        let m = model(FIXED, jit);
        let got = (m.alpha(), m.beta(), m.gamma(), m.delta());
        assert_eq!(got, (12.0, 0.0, 7.0, 0.0), "jit {jit}");
        assert!(m.linear);
    }
}

#[test]
fn one_length_says_the_slope_is_unknown() {
    let mut h = hook(&object(SUM), false);
    let mut one = Generated::new(&[packet::GenSpec::parse("udp,size=100,count=5").unwrap()]);
    let p = profile(&mut h, "exact", &mut one, None, &mut |_| {}).unwrap();
    let m = CostModel::fit(&p);
    assert_eq!(m.alpha(), 9.0 + 700.0);
    assert!(!m.insns.line.slope_known);
    assert!(m.notes[0].contains("per-byte terms"), "{:?}", m.notes);
}
