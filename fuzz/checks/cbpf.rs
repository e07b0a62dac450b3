//! Any bytes as a classic BPF program and a packet: decoding, the
//! printers, the checker, the interpreter (on checked and unchecked
//! programs) and the translation to eBPF never panic; a checked program
//! runs to a verdict and translates unless it reads an ancillary field
//! with no eBPF equivalent; the decimal form reads back; any text handed
//! to the assembler gives a program or an error naming a line.
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = cbpf::assemble(text) {
            assert!(e.line >= 1);
        }
    }
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let len = (usize::from(n) * 8).min(rest.len() / 8 * 8);
    let (bytes, packet) = rest.split_at(len);
    let prog = cbpf::decode(bytes).expect("whole instructions");
    let _ = cbpf::image(&prog);
    let _ = cbpf::image_c(&prog);
    assert_eq!(
        cbpf::parse_decimal(&cbpf::image_decimal(&prog)).ok(),
        Some(prog.clone())
    );
    let meta = cbpf::Meta::default();
    match cbpf::check(&prog) {
        Ok(()) => {
            let v = cbpf::run(&prog, packet, &meta).expect("a checked program runs");
            assert!(v.insns as usize <= prog.len());
            if let Err(e) = cbpf::to_ebpf(&prog) {
                assert!(e.to_string().contains("ancillary"), "{e}");
            }
        }
        Err(_) => {
            let _ = cbpf::run(&prog, packet, &meta);
            assert!(cbpf::to_ebpf(&prog).is_err());
        }
    }
}
