//! Against libpcap itself (linked from the system, as tcpdump uses it):
//! every opcode printed as its `bpf_image` prints it, and filters compiled
//! by tcpdump deciding every packet of tcpdump's test captures as its
//! `bpf_filter` does.

use std::ffi::{CStr, c_char, c_int, c_uint};
use std::process::Command;

mod common;

use common::{EXPRESSIONS, compile, records};

use cbpf::{Insn, Meta, image_line, run};

/// libpcap's `struct bpf_insn`: the same layout as `struct sock_filter`.
#[repr(C)]
struct BpfInsn {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

#[link(name = "pcap")]
unsafe extern "C" {
    fn bpf_image(p: *const BpfInsn, n: c_int) -> *const c_char;
    fn bpf_filter(pc: *const BpfInsn, p: *const u8, wirelen: c_uint, buflen: c_uint) -> c_uint;
}

fn theirs(p: &Insn, n: usize) -> String {
    let insn = BpfInsn {
        code: p.code,
        jt: p.jt,
        jf: p.jf,
        k: p.k,
    };
    // SAFETY: a valid instruction; bpf_image returns a NUL-terminated
    // string in a buffer of its own, read before the next call.
    unsafe { CStr::from_ptr(bpf_image(&insn, n as c_int)) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_opcode_prints_as_libpcap_prints_it() {
    let ks = [
        0u32,
        1,
        12,
        0x800,
        0x7fff_ffff,
        0xffff_ffff,
        cbpf::ancillary::AD_OFF,
        cbpf::ancillary::AD_OFF + 4,
        cbpf::ancillary::AD_OFF + 48,
        cbpf::ancillary::AD_OFF + 60,
        cbpf::ancillary::AD_OFF + 64,
    ];
    let mut compared = 0;
    for code in 0..=0xffffu16 {
        for &k in &ks {
            for (n, jt, jf) in [(0usize, 0u8, 0u8), (7, 3, 255)] {
                let p = Insn { code, jt, jf, k };
                assert_eq!(image_line(&p, n), theirs(&p, n), "{p:?} at {n}");
                compared += 1;
            }
        }
    }
    println!("{compared} instructions printed alike");
}

#[test]
fn filters_decide_every_packet_as_libpcap_does() {
    let records = records();
    assert!(records.len() > 3000, "{} packets", records.len());
    let mut linktypes: Vec<u32> = records.iter().map(|r| r.linktype).collect();
    linktypes.sort();
    linktypes.dedup();
    let (mut compared, mut matched, mut refused, mut unchecked) = (0u64, 0u64, 0u64, 0u64);
    for expr in EXPRESSIONS {
        for &lt in &linktypes {
            // libpcap refuses expressions a link type cannot carry.
            let Ok(prog) = cbpf::compile_expr(expr, lt, cbpf::DEFAULT_SNAPLEN) else {
                refused += 1;
                continue;
            };
            // A few programs for other link types load below the packet
            // (`ldh [-2]`), which Linux refuses as an unknown ancillary
            // field: the interpreter reads them as libpcap does (outside
            // the packet), so they are compared too.
            if let Err(e) = cbpf::check(&prog) {
                assert_ne!(lt, cbpf::ETHERNET, "{expr}: {e}");
                unchecked += 1;
            }
            let theirs: Vec<BpfInsn> = prog
                .iter()
                .map(|p| BpfInsn {
                    code: p.code,
                    jt: p.jt,
                    jf: p.jf,
                    k: p.k,
                })
                .collect();
            for (i, r) in records.iter().enumerate().filter(|(_, r)| r.linktype == lt) {
                let meta = Meta {
                    len: Some(r.wire),
                    ..Meta::default()
                };
                let ours = run(&prog, &r.data, &meta)
                    .expect("libpcap's programs run")
                    .ret;
                // SAFETY: a program of `theirs.len()` valid instructions and
                // a buffer of `data.len()` bytes.
                let want = unsafe {
                    bpf_filter(
                        theirs.as_ptr(),
                        r.data.as_ptr(),
                        r.wire,
                        r.data.len() as c_uint,
                    )
                };
                assert_eq!(ours, want, "`{expr}` (link type {lt}) on packet {i}");
                compared += 1;
                matched += u64::from(ours != 0);
            }
        }
    }
    println!(
        "{} expressions x {} packets of {} link types: {compared} decisions equal to \
         libpcap's ({matched} matches; {refused} expression/link type pairs libpcap refuses, \
         {unchecked} of them programs the kernel's checker refuses)",
        EXPRESSIONS.len(),
        records.len(),
        linktypes.len()
    );
    assert!(EXPRESSIONS.len() >= 60 && matched > 5_000);
}

#[test]
fn tcpdump_d_dd_ddd_print_the_same_text() {
    for expr in EXPRESSIONS {
        let prog = compile(expr);
        for (flag, ours) in [
            ("-d", cbpf::image(&prog)),
            ("-dd", cbpf::image_c(&prog)),
            ("-ddd", cbpf::image_decimal(&prog)),
        ] {
            let out =
                testkit::tool::output(Command::new("tcpdump").args(["-y", "EN10MB", flag, expr]));
            assert_eq!(
                ours,
                String::from_utf8_lossy(&out.stdout),
                "tcpdump {flag} '{expr}'"
            );
        }
    }
}

#[test]
fn expressions_compile_to_tcpdumps_program() {
    for expr in EXPRESSIONS {
        let ours = cbpf::compile_expr(expr, cbpf::ETHERNET, cbpf::DEFAULT_SNAPLEN).unwrap();
        assert_eq!(ours, compile(expr), "{expr}");
    }
    // Another link type and snap length: raw IP, 96 bytes.
    let raw = cbpf::compile_expr("udp", 101, 96).unwrap();
    assert!(cbpf::image(&raw).contains("ret      #96"));
    let e = cbpf::compile_expr("udp port", cbpf::ETHERNET, 65535).unwrap_err();
    assert!(e.to_string().contains("syntax error"), "{e}");
    let e = cbpf::compile_expr("wlan host 1.2.3.4", cbpf::ETHERNET, 65535).unwrap_err();
    assert!(!e.to_string().is_empty());
}
