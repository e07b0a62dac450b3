//! xPF programs printed as `tcpdump -d` prints classic ones, with xPF's
//! mnemonics (`bss`, `bsp`, `exc`, `M[x + k]`) where libpcap would print
//! `unimp`. A backward `ja` prints its target, as libpcap's does.

use std::fmt::Write;

use crate::image::image_line;
use crate::insn::{Insn, xpf};

/// Instruction `n` of an xPF program.
fn line(p: &Insn, n: usize) -> String {
    let indexed = |m: &str| format!("({n:03}) {m:<8} M[x + {}]", p.k);
    match p.code {
        xpf::BSS => format!("({n:03}) bss"),
        xpf::BSP => format!("({n:03}) bsp"),
        xpf::EXC => format!("({n:03}) exc"),
        xpf::LD_NDX => indexed("ld"),
        xpf::LDX_NDX => indexed("ldx"),
        xpf::ST_NDX => indexed("st"),
        xpf::STX_NDX => indexed("stx"),
        _ => image_line(p, n),
    }
}

/// The xPF program, a line per instruction.
pub fn image(prog: &[Insn]) -> String {
    let mut s = String::new();
    for (n, p) in prog.iter().enumerate() {
        let _ = writeln!(s, "{}", line(p, n));
    }
    s
}
