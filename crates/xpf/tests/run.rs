//! `run_xpf` over a pipeline source: the same counts on the xPF
//! interpreter and on the translation in sluice's VM and JIT, and errors
//! in the words the command line prints.

use ::xpf::{XpfEngine, XpfError, XpfRunOptions, XpfRunner, run_xpf};
use cbpf::xpf::{self, Form, XpfOptions};
use pipeline::Packets;

/// A 60-byte Ethernet frame whose IP protocol byte is `proto`.
fn frame(proto: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[12] = 0x08;
    f[23] = proto;
    f
}

#[test]
fn every_sluice_engine_counts_alike() {
    // Accept TCP only, and count every packet in persistent word 0.
    let prog = xpf::assemble(
        "bsp\nld M[0]\nadd #1\nst M[0]\nbss\nldb [23]\njeq #6, yes, no\nyes: ret #1\nno: ret #0",
    )
    .unwrap();
    let packets: Vec<(u64, Vec<u8>)> = [6, 17, 6, 1, 6]
        .iter()
        .enumerate()
        .map(|(i, &p)| (i as u64 * 1000, frame(p)))
        .collect();
    for engine in [XpfEngine::Interp, XpfEngine::Vm, XpfEngine::Jit] {
        let mut runner =
            XpfRunner::new(&prog, XpfOptions::default(), engine, Form::Socket).unwrap();
        let mut source = Packets::new(packets.clone());
        let s = run_xpf(&mut runner, &mut source, &XpfRunOptions::default()).unwrap();
        assert_eq!((s.packets, s.accepted, s.refused), (5, 3, 0), "{engine:?}");
        let mem = runner.memory();
        let active = mem.active();
        assert_eq!(mem.mread(active, 0, 1).unwrap(), vec![5], "{engine:?}");
    }
}

#[test]
fn errors_read_as_before() {
    let e = XpfError::Packet {
        seq: 7,
        error: Box::new(XpfError::VerifierRefuses("R0 !read_ok".into())),
    };
    assert_eq!(
        e.to_string(),
        "packet 7: sluice's verifier refuses the translation: R0 !read_ok"
    );
}
