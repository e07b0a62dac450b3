//! The eBPF translation of tcpdump-compiled filters decides every packet
//! of tcpdump's captures as the classic interpreter does: in sluice's
//! interpreter and (verified by sluice's verifier) its JIT, and in the
//! kernel, loaded as a tc classifier (a program type with `ld_abs` whose
//! test runs see the frame from its link-layer header, as socket filters
//! on packet sockets do).

mod common;

use std::os::fd::AsRawFd;

use cbpf::{Meta, run, to_ebpf};
use common::{EXPRESSIONS, records};
use obj::{Object, Program, ProgramKind};
use runtime::{Hook, Image, LoadOptions, PacketMeta};

fn object(insns: Vec<isa::Insn>, kind: ProgramKind) -> Object {
    Object {
        license: "GPL".into(),
        kernel_version: None,
        maps: vec![],
        programs: vec![Program {
            name: "filter".into(),
            section: "filter".into(),
            kind,
            insns,
            functions: vec![("filter".into(), 0)],
            lines: vec![],
            kfuncs: vec![],
            core_relocations: 0,
            core_poisoned: vec![],
            type_given: true,
            attach_type: None,
        }],
        btf: None,
        core_target: None,
    }
}

fn hook_of(insns: &[isa::Insn], fast: bool, kind: ProgramKind) -> Hook {
    let object = object(insns.to_vec(), kind);
    let report = verifier::verify(
        &object.programs[0],
        &[],
        &verifier::VerifyOptions {
            helpers: runtime::helpers::ids_for(&object.programs[0].kind),
            ..verifier::VerifyOptions::default()
        },
    );
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let mut h = Hook::new(image, 0, 0).unwrap();
    if fast {
        assert!(
            report.result.is_ok(),
            "sluice's verifier: {:?}",
            report.result
        );
        // SAFETY: the verifier accepted the only program, which uses no maps.
        unsafe { h.trust_verified() };
        h.set_stack_depth(report.stack_depth);
        h.enable_jit().unwrap();
    }
    h
}

/// What one form's walk over every expression, link type and packet saw.
#[derive(Default)]
struct Counts {
    decisions: u64,
    in_kernel: u64,
    refused: u64,
    too_long: u64,
}

/// Every expression compiled for every link type, translated in `form`,
/// decides every packet of that link type as the classic interpreter does
/// in sluice's interpreter and JIT and (root) in the kernel, test-run as
/// the form's program type. The kernel's refusals of an input (not of the
/// program) are counted.
fn decide_everywhere(form: cbpf::Form) -> Counts {
    let (kind, prog_type, what) = match form {
        cbpf::Form::Socket => (ProgramKind::SchedCls, 3, "classic filters in the kernel"),
        cbpf::Form::Xdp => (
            ProgramKind::Xdp {
                attach: obj::XdpAttach::Device,
                frags: false,
            },
            6,
            "classic filters as XDP in the kernel",
        ),
    };
    let records = records();
    let kernel = testkit::kernel_available(what);
    let mut n = Counts::default();
    let mut linktypes: Vec<u32> = records.iter().map(|r| r.linktype).collect();
    linktypes.sort();
    linktypes.dedup();
    for (expr, lt) in EXPRESSIONS
        .iter()
        .flat_map(|e| linktypes.iter().map(move |&l| (e, l)))
    {
        let Ok(classic) = cbpf::compile_expr(expr, lt, cbpf::DEFAULT_SNAPLEN) else {
            continue;
        };
        if cbpf::check(&classic).is_err() {
            // (the kernel's checker refuses it: see tests/libpcap.rs)
            continue;
        }
        let insns = match form {
            cbpf::Form::Socket => to_ebpf(&classic),
            cbpf::Form::Xdp => cbpf::to_xdp(&classic),
        }
        .unwrap_or_else(|e| panic!("{expr}: {e}"));
        let mut interp = hook_of(&insns, false, kind.clone());
        let mut jit = hook_of(&insns, true, kind.clone());
        let loaded = kernel.then(|| {
            let (ruling, fd) =
                kernel::verify::load_keep(&isa::encode(&insns), "filter", prog_type, 0, 0).unwrap();
            fd.unwrap_or_else(|| panic!("{expr}: the kernel refuses: {}", ruling.log))
        });
        for (i, r) in records.iter().enumerate().filter(|(_, r)| r.linktype == lt) {
            let data = &r.data;
            // The kernel's len is the bytes it holds; classic loads see the
            // same.
            let meta = Meta {
                len: Some(data.len() as u32),
                ..Meta::default()
            };
            let ret = run(&classic, data, &meta).unwrap().ret;
            let want = match form {
                cbpf::Form::Socket => u64::from(ret),
                cbpf::Form::Xdp if ret != 0 => 2,
                cbpf::Form::Xdp => 1,
            };
            let m = PacketMeta::default();
            if form == cbpf::Form::Socket && data.len() > usize::from(u16::MAX) {
                // A tc hook takes no packet over 64 KiB (the error is
                // tested in the CLI's captures tests).
                assert!(interp.run(data, &m).is_err());
                n.too_long += 1;
                continue;
            }
            let a = interp.run(data, &m).map(|o| o.r0);
            assert_eq!(a, Ok(want), "`{expr}`, packet {i}: the interpreter");
            let b = jit.run(data, &m).map(|o| o.r0);
            assert_eq!(b, Ok(want), "`{expr}`, packet {i}: the JIT");
            if let Some(fd) = &loaded
                && data.len() >= 14
            {
                let out = kernel::testrun::run(
                    fd.as_raw_fd(),
                    &kernel::testrun::RunInput {
                        data,
                        ..Default::default()
                    },
                );
                match out {
                    Ok(out) => {
                        assert_eq!(
                            u64::from(out.retval),
                            want,
                            "`{expr}`, packet {i}: the kernel"
                        );
                        n.in_kernel += 1;
                    }
                    // A test run takes at most a page of data (an XDP
                    // frame less its head- and tailroom: EINVAL or ENOMEM),
                    // and an skb's refuses some malformed frames (an IPv6
                    // header cut short): the input, not the program.
                    Err(e)
                        if e.to_string().contains("Invalid argument")
                            || (form == cbpf::Form::Xdp
                                && data.len() > 3000
                                && e.to_string().contains("Cannot allocate memory")) =>
                    {
                        n.refused += 1
                    }
                    Err(e) => panic!("`{expr}`, packet {i} ({} bytes): {e}", data.len()),
                }
            }
            n.decisions += 1;
        }
    }
    if kernel {
        assert!(
            n.refused * 50 < n.decisions,
            "{} refused of {}",
            n.refused,
            n.decisions
        );
    }
    n
}

#[test]
fn translated_filters_decide_as_classic_in_the_vm_and_the_kernel() {
    let n = decide_everywhere(cbpf::Form::Socket);
    println!(
        "{} expressions x {} packets of every link type: {} decisions alike in sluice's interpreter and JIT, \
         {} in the kernel too ({} inputs a kernel test run refuses: over a page, \
         or malformed; frames under 14 bytes left out; {} runs of packets over 64 KiB, \
         which a tc hook refuses)",
        EXPRESSIONS.len(),
        records().len(),
        n.decisions,
        n.in_kernel,
        n.refused,
        n.too_long,
    );
}

#[test]
fn ancillary_fields_without_an_ebpf_equivalent_are_refused_by_name() {
    for (name, text) in [("hatype", "ld #hatype\nret a"), ("poff", "ld #poff\nret a")] {
        let p = cbpf::assemble(text).unwrap();
        let e = to_ebpf(&p).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains("insn 0"), "{e}");
    }
    // XDP has the ingress device and queue, not the skb's fields.
    for name in ["proto", "type", "mark", "rxhash", "vlan_tci", "vlan_avail"] {
        let p = cbpf::assemble(&format!("ld #{name}\nret a")).unwrap();
        let e = cbpf::to_xdp(&p).unwrap_err().to_string();
        assert!(
            e.contains("no XDP equivalent") && e.contains("insn 0"),
            "{e}"
        );
    }
    for name in ["ifidx", "queue", "cpu", "rand", "xor_x"] {
        let p = cbpf::assemble(&format!("ld #{name}\nret a")).unwrap();
        assert!(cbpf::to_xdp(&p).is_ok(), "{name}");
    }
    let net = cbpf::assemble("ldb [-1048576]\nret a").unwrap();
    let e = cbpf::to_xdp(&net).unwrap_err().to_string();
    assert!(e.contains("network header"), "{e}");
    let bad = cbpf::assemble("ld M[0]\nret a").unwrap();
    assert!(to_ebpf(&bad).unwrap_err().to_string().contains("M[0]"));
}

/// The XDP form: the same filters, reading the frame directly, decide
/// every packet as the classic interpreter does (`XDP_PASS` for a match,
/// `XDP_DROP` otherwise) in sluice's interpreter and JIT, and in the
/// kernel loaded as XDP and test-run.
#[test]
fn the_xdp_form_decides_as_classic_in_the_vm_and_the_kernel() {
    let n = decide_everywhere(cbpf::Form::Xdp);
    println!(
        "XDP form: {} decisions alike in sluice's interpreter and JIT, {} in the kernel \
         too ({} frames an XDP test run refuses)",
        n.decisions, n.in_kernel, n.refused
    );
    assert!(n.decisions > 100_000, "{}", n.decisions);
}
