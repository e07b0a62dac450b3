//! Any bytes as an xPF program, an instance and packets: the assembler,
//! the checker, the interpreter and the translation never panic; a checked
//! program runs every packet to a verdict within its budget (plus the
//! handler, which only goes forward), never touches memory outside its
//! blocks, and translates in both forms unless it reads an ancillary field
//! a form has no source for.
use cbpf::xpf::{self, Form, Instance, Switch, XpfOptions};

pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = xpf::assemble(text) {
            assert!(e.line >= 1);
        }
    }
    let [n, words, budget, rest @ ..] = data else {
        return;
    };
    let len = (usize::from(*n) * 8).min(rest.len() / 8 * 8);
    let (bytes, packet) = rest.split_at(len);
    let prog = cbpf::decode(bytes).expect("whole instructions");
    let _ = xpf::image(&prog);
    let opts = XpfOptions {
        words: u32::from(*words) + 1,
        blocks: 2,
        budget: u32::from(*budget) * 4,
    };
    let Ok(mut inst) = Instance::new(&prog, opts) else {
        assert!(xpf::translate(&prog, &opts, Form::Socket).is_err());
        return;
    };
    let meta = cbpf::Meta::default();
    for chunk in packet.chunks(64).take(4) {
        let v = inst.run(chunk, &meta).expect("a checked program runs");
        // The body's budget, one loop's worth past it, and the handler.
        assert!(
            v.insns <= u64::from(opts.budget) + 2 * prog.len() as u64,
            "{v:?}"
        );
        let mem = inst.memory_mut();
        let spare = mem.malloc().unwrap_or(mem.active());
        mem.mswitch(spare, Switch::Copy).unwrap();
    }
    for form in [Form::Socket, Form::Xdp] {
        if let Err(e) = xpf::translate(&prog, &opts, form) {
            let e = e.to_string();
            assert!(
                e.contains("ancillary") || e.contains("network header"),
                "{form:?}: {e}"
            );
        }
    }
}
