//! The classic JIT ([`cbpf::JitFilter`]) against the interpreter
//! ([`cbpf::run`]): random programs over random packets (every opcode
//! class, forward jumps, loads near and past the packet's end and in the
//! negative windows, division and modulo by zero, `msh`, ancillary
//! fields, `M[]` read before written), the same refusals as the checker;
//! the interpreter's edge cases one by one; and libpcap's programs for
//! the expressions of the other tests over every packet of tcpdump's
//! captures.

#![cfg(target_arch = "x86_64")]

mod common;

use cbpf::ancillary::{AD_OFF, LL_OFF, NET_OFF};
use cbpf::{Insn, JitError, JitFilter, Meta, assemble, check, class, misc, mode, op, run, rval};
use cbpf::{size, src};
use common::{EXPRESSIONS, records};
use proptest::prelude::*;

/// A random instruction: a selector, two operands, two jump offsets; made
/// into an instruction at `pc` of a program of `n` by [`insn`].
type Raw = (u8, u32, u32, u8, u8);

/// An offset for a packet load: near the start or end of packets of up
/// to 80 bytes, in the `SKF_LL_OFF` and `SKF_NET_OFF` windows, just below
/// `SKF_AD_OFF`, or anywhere.
fn offset(sel: u32, any: u32) -> u32 {
    let near = sel % 84;
    match (sel >> 8) % 10 {
        0 => LL_OFF.wrapping_add(near),
        1 => NET_OFF.wrapping_add(near),
        2 => AD_OFF - 1 - (near % 4),
        3 => any,
        4 => 0x7fff_fffc + (near % 8),
        _ => near,
    }
}

/// A constant: small (so X is often a small offset or zero), a power of
/// two, an edge, or anything.
fn constant(sel: u32, any: u32) -> u32 {
    match (sel >> 12) % 6 {
        0 => sel % 4,
        1 => 1 << (sel % 32),
        2 => [0, 1, 31, 32, 0x7fff_ffff, 0x8000_0000, u32::MAX][(sel % 7) as usize],
        3 => any,
        _ => sel % 100,
    }
}

fn insn(pc: usize, n: usize, (s, a, b, jt, jf): Raw) -> Insn {
    // Forward offsets inside the program, mostly (a few past it).
    let room = (n - pc - 1) as u32;
    let fwd = |o: u8| {
        if room <= 1 || o == 255 {
            o
        } else {
            (u32::from(o) % (room - 1)) as u8
        }
    };
    let sizes = [size::B, size::H, size::W];
    let sz = sizes[(a % 3) as usize];
    let alu = [
        op::ADD,
        op::SUB,
        op::MUL,
        op::DIV,
        op::MOD,
        op::OR,
        op::AND,
        op::XOR,
        op::LSH,
        op::RSH,
    ];
    let jmp = [op::JEQ, op::JGT, op::JGE, op::JSET];
    let k = constant(a, b);
    match s % 20 {
        0 | 1 => Insn::stmt(class::LD | sz | mode::ABS, offset(a, b)),
        2 | 3 => Insn::stmt(class::LD | sz | mode::IND, offset(a, b)),
        4 => Insn::stmt(class::LDX | size::B | mode::MSH, offset(a, b)),
        5 => Insn::stmt(class::LD | mode::IMM, k),
        6 => Insn::stmt(class::LDX | mode::IMM, k),
        7 => Insn::stmt(
            [class::LD, class::LDX][(a % 2) as usize] | size::W | mode::LEN,
            0,
        ),
        8 => Insn::stmt(
            [class::LD, class::LDX][(a % 2) as usize] | mode::MEM,
            b % 17,
        ),
        9 => Insn::stmt([class::ST, class::STX][(a % 2) as usize], b % 17),
        10 | 11 => {
            let o = alu[(b % 10) as usize];
            let x = if a % 3 == 0 { src::X } else { src::K };
            Insn::stmt(class::ALU | o | x, k)
        }
        12 => Insn::stmt(class::ALU | op::NEG, 0),
        13 => Insn::stmt(class::JMP | op::JA, u32::from(fwd(jt))),
        14 | 15 => {
            let x = if a % 3 == 0 { src::X } else { src::K };
            Insn::jump(class::JMP | jmp[(b % 4) as usize] | x, k, fwd(jt), fwd(jf))
        }
        16 => Insn::stmt(class::RET | [rval::K, rval::A][(a % 2) as usize], k),
        17 => Insn::stmt(class::MISC | [misc::TAX, misc::TXA][(a % 2) as usize], 0),
        // An ancillary field (one in 20 unknown, which the checker refuses).
        18 => Insn::stmt(
            class::LD | sz | mode::ABS,
            AD_OFF + (a % 68) / 4 * 4 + (b % 20 / 19),
        ),
        // Anything (mostly refused).
        _ => Insn::jump(a as u16, b, jt, jf),
    }
}

fn program(raw: &[Raw], last: Raw) -> Vec<Insn> {
    let n = raw.len() + 1;
    let mut prog: Vec<Insn> = raw
        .iter()
        .enumerate()
        .map(|(pc, r)| insn(pc, n, *r))
        .collect();
    let ret = if last.0.is_multiple_of(2) {
        rval::A
    } else {
        rval::K
    };
    prog.push(Insn::stmt(class::RET | ret, last.1));
    prog
}

fn meta(m: (u32, u32, u32, u16, Option<(u16, u16)>, u32)) -> Meta {
    let (len, network_offset, payload_offset, protocol, vlan, seed) = m;
    Meta {
        len: (len % 3 != 0).then_some(len % 200),
        protocol,
        pkttype: seed % 5,
        ifindex: seed >> 3,
        mark: seed.rotate_left(7),
        queue: seed % 16,
        hatype: 1,
        rxhash: seed.wrapping_mul(2_654_435_761),
        cpu: seed % 2,
        vlan,
        random: seed ^ 0x5555,
        network_offset: network_offset % 40,
        payload_offset: payload_offset % 80,
        time_ns: 0,
    }
}

/// The JIT compiles exactly what the checker accepts, and returns what
/// the interpreter returns.
fn agrees(prog: &[Insn], packets: &[Vec<u8>], metas: &[Meta]) -> Result<bool, TestCaseError> {
    match (check(prog), JitFilter::compile(prog)) {
        (Err(want), Err(JitError::Check(got))) => {
            prop_assert_eq!(got, want);
            Ok(false)
        }
        (Ok(()), Ok(f)) => {
            for (p, m) in packets.iter().zip(metas.iter().cycle()) {
                let want = run(prog, p, m).map_err(|e| {
                    TestCaseError::fail(format!("a checked program failed to run: {e}"))
                })?;
                prop_assert_eq!(f.run(p, m), want.ret, "{:?} on {:?} with {:?}", prog, p, m);
            }
            Ok(true)
        }
        (c, j) => Err(TestCaseError::fail(format!(
            "{prog:?}: the checker says {c:?}, the JIT {j:?}"
        ))),
    }
}

fn raw() -> impl Strategy<Value = Raw> {
    (
        any::<u8>(),
        any::<u32>(),
        any::<u32>(),
        any::<u8>(),
        any::<u8>(),
    )
}

/// Runs `cases` random cases of `strategy` through [`agrees`]; returns how
/// many programs passed the checker (and so were compared).
fn run_cases<S>(cases: u32, strategy: S) -> u32
where
    S: Strategy<Value = (Vec<Insn>, Vec<Vec<u8>>, Vec<Meta>)>,
{
    let compiled = std::cell::Cell::new(0u32);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let result = runner.run(&strategy, |(prog, packets, metas)| {
        if agrees(&prog, &packets, &metas)? {
            compiled.set(compiled.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    compiled.get()
}

fn packets() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 1..6)
}

#[test]
fn native_code_returns_what_the_interpreter_returns() {
    let metas = prop::collection::vec(
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u16>(),
            prop::option::of((any::<u16>(), any::<u16>())),
            any::<u32>(),
        ),
        1..3,
    );
    let strategy = (prop::collection::vec(raw(), 0..40), raw(), packets(), metas).prop_map(
        |(body, last, packets, metas)| {
            (
                program(&body, last),
                packets,
                metas.into_iter().map(meta).collect(),
            )
        },
    );
    let cases = 4000;
    let compiled = run_cases(cases, strategy);
    println!("{cases} random programs: {compiled} passed the checker and ran alike");
    assert!(compiled > cases / 8, "{compiled} of {cases} checked");
}

/// Programs of packet loads, arithmetic and forward jumps only, so that
/// most pass the checker.
#[test]
fn checked_programs_of_loads_and_jumps() {
    let sel = prop::sample::select(vec![
        0u8, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17,
    ]);
    let body = prop::collection::vec(
        (sel, any::<u32>(), any::<u32>(), any::<u8>(), any::<u8>()),
        1..30,
    );
    let strategy = (body, raw(), packets()).prop_map(|(body, last, packets)| {
        let metas = vec![
            Meta::default(),
            Meta {
                len: Some(1000),
                network_offset: 14,
                ..Meta::default()
            },
        ];
        (program(&body, last), packets, metas)
    });
    let cases = 3000;
    let compiled = run_cases(cases, strategy);
    println!("{cases} programs of loads and jumps: {compiled} passed the checker and ran alike");
    assert!(compiled > cases / 2, "{compiled} of {cases} checked");
}

/// What the interpreter's own tests check, through native code.
#[test]
fn the_interpreters_edge_cases() {
    let jit = |text: &str, packet: &[u8], meta: &Meta| -> u32 {
        let p = assemble(text).unwrap();
        let f = JitFilter::compile(&p).unwrap();
        let got = f.run(packet, meta);
        assert_eq!(got, run(&p, packet, meta).unwrap().ret, "{text}");
        got
    };
    let pkt = [1u8, 2, 3, 4, 5, 6];
    let m = Meta::default();
    assert_eq!(jit("ld [2]\nret a", &pkt, &m), 0x0304_0506);
    assert_eq!(jit("ldh [4]\nret a", &pkt, &m), 0x0506);
    assert_eq!(jit("ldb [5]\nret a", &pkt, &m), 6);
    assert_eq!(jit("ld [3]\nret #7", &pkt, &m), 0, "a word past the end");
    assert_eq!(jit("ldh [5]\nret #7", &pkt, &m), 0);
    assert_eq!(jit("ldx #1\nldb [x + 5]\nret #7", &pkt, &m), 0);
    assert_eq!(jit("ldx #1\nldh [x + 3]\nret a", &pkt, &m), 0x0506);
    assert_eq!(jit("ldx #0xffffffff\nldb [x + 1]\nret a", &pkt, &m), 1);
    assert_eq!(jit("ld #10\nldx #0\ndiv x\nret #7", &pkt, &m), 0);
    assert_eq!(jit("ld #10\nldx #0\nmod x\nret #7", &pkt, &m), 0);
    assert_eq!(jit("ld #10\nldx #3\nmod x\nret a", &pkt, &m), 1);
    assert_eq!(jit("ld #10\nldx #3\ndiv x\nret a", &pkt, &m), 3);
    assert_eq!(jit("ld #1000\ndiv #7\nret a", &pkt, &m), 142);
    assert_eq!(jit("ld #1000\nmod #7\nret a", &pkt, &m), 6);
    assert_eq!(jit("ld #1000\ndiv #8\nret a", &pkt, &m), 125);
    assert_eq!(jit("ld #1000\nmod #8\nret a", &pkt, &m), 0);
    assert_eq!(jit("ldxb 4*([0]&0xf)\ntxa\nret a", &pkt, &m), 4);
    assert_eq!(jit("ldxb 4*([6]&0xf)\ntxa\nret #9", &pkt, &m), 0);
    assert_eq!(jit("ld #1\nldx #33\nlsh x\nret a", &pkt, &m), 2);
    assert_eq!(
        jit("ld #0x80000000\nldx #33\nrsh x\nret a", &pkt, &m),
        0x4000_0000
    );
    assert_eq!(jit("ld #0\nsub #1\nret a", &pkt, &m), u32::MAX);
    assert_eq!(jit("ld #5\nneg\nret a", &pkt, &m), 5u32.wrapping_neg());
    assert_eq!(jit("ld #7\nmul #0x10000001\nret a", &pkt, &m), 0x7000_0007);
    let wire = Meta {
        len: Some(1500),
        ..Meta::default()
    };
    assert_eq!(jit("ld #pktlen\nret a", &pkt, &wire), 1500);
    assert_eq!(
        jit("ld #pktlen\nret a", &pkt, &m),
        6,
        "no wire length: the bytes"
    );
    assert_eq!(jit("ldx #len\ntxa\nret a", &pkt, &wire), 1500);
    // M[] survives jumps; a word written on every path is read back.
    assert_eq!(
        jit(
            "ld #3\nst M[15]\nldx #9\nstx M[0]\njeq #3, yes, no\nyes: ld M[0]\nldx M[15]\n\
             add x\nret a\nno: ret #1",
            &pkt,
            &m
        ),
        12
    );
    // The windows: link-layer relative, network relative.
    let net = Meta {
        network_offset: 2,
        ..Meta::default()
    };
    assert_eq!(jit(&format!("ldb [{}]\nret a", LL_OFF + 1), &pkt, &m), 2);
    assert_eq!(
        jit(&format!("ldh [{}]\nret a", NET_OFF + 1), &pkt, &net),
        0x0405
    );
    assert_eq!(jit(&format!("ldb [{}]\nret #3", LL_OFF + 6), &pkt, &m), 0);
    assert_eq!(
        jit(&format!("ldx #{}\nldb [x + 2]\nret a", LL_OFF), &pkt, &m),
        3,
        "X + k in a window"
    );
    // Ancillary fields, from the run's Meta.
    let anc = Meta {
        protocol: 0x86dd,
        vlan: Some((0x8100, 42)),
        mark: 77,
        ..Meta::default()
    };
    assert_eq!(jit("ld #proto\nret a", &pkt, &anc), 0x86dd);
    assert_eq!(jit("ld #vlan_tci\nret a", &pkt, &anc), 42);
    assert_eq!(jit("ld #vlan_avail\nret a", &pkt, &anc), 1);
    assert_eq!(jit("ld #mark\nret a", &pkt, &anc), 77);
    assert_eq!(jit("ld #3\nldx #5\nld #xor_x\nret a", &pkt, &anc), 6);
    // An ancillary call keeps A, X and M[].
    assert_eq!(
        jit(
            "ld #4\nst M[2]\nldx #6\nld #mark\ntax\nld M[2]\nadd x\nret a",
            &pkt,
            &anc
        ),
        81
    );
    // A short packet, an empty one.
    assert_eq!(jit("ldb [0]\nret a", &[], &m), 0);
    assert_eq!(jit("ret #0xffffffff", &[], &m), u32::MAX);
}

#[test]
fn what_the_checker_refuses_is_not_compiled() {
    for text in ["ld M[3]\nret a", "ld #1\ndiv #0\nret a", "ld #1", "ret x"] {
        let Ok(p) = assemble(text) else { continue };
        let e = JitFilter::compile(&p).unwrap_err();
        assert!(matches!(e, JitError::Check(_)), "{text}: {e}");
        assert_eq!(e.to_string(), check(&p).unwrap_err().to_string());
    }
    let long = vec![Insn::stmt(class::RET | rval::K, 0); 4097];
    let e = JitFilter::compile(&long).unwrap_err();
    assert!(e.to_string().contains("over the 4096"), "{e}");
}

/// libpcap's programs for the other tests' expressions, on every packet
/// of tcpdump's captures of their link type, with its wire length.
#[test]
fn libpcaps_programs_decide_every_capture_as_the_interpreter() {
    let records = records();
    assert!(records.len() > 3000, "{} packets", records.len());
    let mut linktypes: Vec<u32> = records.iter().map(|r| r.linktype).collect();
    linktypes.sort();
    linktypes.dedup();
    let (mut compared, mut matched, mut compiled, mut unchecked) = (0u64, 0u64, 0u64, 0u64);
    for expr in EXPRESSIONS
        .iter()
        .chain(&["len > 100 and udp", "ether[0] & 1 = 0"])
    {
        for &lt in &linktypes {
            let Ok(prog) = cbpf::compile_expr(expr, lt, cbpf::DEFAULT_SNAPLEN) else {
                continue;
            };
            let f = match JitFilter::compile(&prog) {
                Ok(f) => f,
                Err(e) => {
                    // The programs for other link types that load below
                    // the packet (see tests/libpcap.rs).
                    assert!(check(&prog).is_err(), "{expr}: {e}");
                    assert_ne!(lt, cbpf::ETHERNET, "{expr}: {e}");
                    unchecked += 1;
                    continue;
                }
            };
            compiled += 1;
            for r in records.iter().filter(|r| r.linktype == lt) {
                let meta = Meta {
                    len: Some(r.wire),
                    ..Meta::default()
                };
                let want = run(&prog, &r.data, &meta).unwrap().ret;
                assert_eq!(f.run(&r.data, &meta), want, "`{expr}` (link type {lt})");
                compared += 1;
                matched += u64::from(want != 0);
            }
        }
    }
    println!(
        "{compiled} programs compiled ({unchecked} refused by the checker): {compared} \
         decisions equal to the interpreter's ({matched} matches)"
    );
    assert!(compiled > 500 && matched > 5_000, "{compiled} {matched}");
}
