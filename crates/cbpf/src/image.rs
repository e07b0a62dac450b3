//! Programs printed as tcpdump prints them: `-d` (libpcap's `bpf_image`,
//! one mnemonic line per instruction), `-dd` (C array initialisers) and
//! `-ddd` (a count, then decimal `code jt jf k` lines). The same text,
//! byte for byte, as libpcap 1.10 on Linux (`tests/image.rs` compares with
//! the installed library's own `bpf_image`).

use std::fmt::Write;

use crate::insn::{Insn, ancillary, class, mode, op, rval, size, src};

/// libpcap's names for Linux's ancillary offsets, by `k - SKF_AD_OFF`.
fn ancillary_name(off: u32) -> Option<&'static str> {
    use ancillary::*;
    Some(match off {
        PROTOCOL => "proto",
        PKTTYPE => "type",
        IFINDEX => "ifidx",
        NLATTR => "nla",
        NLATTR_NEST => "nlan",
        MARK => "mark",
        QUEUE => "queue",
        HATYPE => "hatype",
        RXHASH => "rxhash",
        CPU => "cpu",
        ALU_XOR_X => "xor_x",
        VLAN_TAG => "vlan_tci",
        VLAN_TAG_PRESENT => "vlanp",
        PAY_OFFSET => "poff",
        RANDOM => "random",
        VLAN_TPID => "vlan_tpid",
        _ => return None,
    })
}

/// An absolute load's operand: `[k]`, or `[name]` for an ancillary offset.
fn abs_operand(k: u32) -> String {
    let name = k
        .checked_sub(ancillary::AD_OFF)
        .filter(|&off| off < ancillary::MAX)
        .and_then(ancillary_name);
    let name = name.or_else(|| {
        crate::insn::xpf::TIME_NAMES
            .iter()
            .find(|&&(_, t)| t == k)
            .map(|&(n, _)| n)
    });
    match name {
        Some(n) => format!("[{n}]"),
        None => format!("[{}]", k as i32),
    }
}

/// Mnemonic and operand of instruction `n` of a program.
fn parts(p: &Insn, n: usize) -> (&'static str, String) {
    let k = p.k;
    let sk = k as i32;
    let hex = || format!("#0x{k:x}");
    let dec = || format!("#{sk}");
    let x = || "x".to_string();
    let none = String::new;
    const LD: u16 = class::LD;
    const LDX: u16 = class::LDX;
    const ALU: u16 = class::ALU;
    const JMP: u16 = class::JMP;
    match p.code {
        c if c == class::RET | rval::K => ("ret", dec()),
        c if c == class::RET | rval::A => ("ret", none()),
        c if c == LD | size::W | mode::ABS => ("ld", abs_operand(k)),
        c if c == LD | size::H | mode::ABS => ("ldh", abs_operand(k)),
        c if c == LD | size::B | mode::ABS => ("ldb", abs_operand(k)),
        c if c == LD | size::W | mode::LEN => ("ld", "#pktlen".into()),
        c if c == LD | size::W | mode::IND => ("ld", format!("[x + {sk}]")),
        c if c == LD | size::H | mode::IND => ("ldh", format!("[x + {sk}]")),
        c if c == LD | size::B | mode::IND => ("ldb", format!("[x + {sk}]")),
        c if c == LD | mode::IMM => ("ld", hex()),
        c if c == LDX | mode::IMM => ("ldx", hex()),
        c if c == LDX | mode::MSH | size::B => ("ldxb", format!("4*([{sk}]&0xf)")),
        c if c == LD | mode::MEM => ("ld", format!("M[{sk}]")),
        c if c == LDX | mode::MEM => ("ldx", format!("M[{sk}]")),
        c if c == class::ST => ("st", format!("M[{sk}]")),
        c if c == class::STX => ("stx", format!("M[{sk}]")),
        c if c == JMP | op::JA => ("ja", format!("{}", (n as i64 + 1 + i64::from(k)) as i32)),
        c if c == JMP | op::JGT | src::K => ("jgt", hex()),
        c if c == JMP | op::JGE | src::K => ("jge", hex()),
        c if c == JMP | op::JEQ | src::K => ("jeq", hex()),
        c if c == JMP | op::JSET | src::K => ("jset", hex()),
        c if c == JMP | op::JGT | src::X => ("jgt", x()),
        c if c == JMP | op::JGE | src::X => ("jge", x()),
        c if c == JMP | op::JEQ | src::X => ("jeq", x()),
        c if c == JMP | op::JSET | src::X => ("jset", x()),
        c if c == ALU | op::ADD | src::X => ("add", x()),
        c if c == ALU | op::SUB | src::X => ("sub", x()),
        c if c == ALU | op::MUL | src::X => ("mul", x()),
        c if c == ALU | op::DIV | src::X => ("div", x()),
        c if c == ALU | op::MOD | src::X => ("mod", x()),
        c if c == ALU | op::AND | src::X => ("and", x()),
        c if c == ALU | op::OR | src::X => ("or", x()),
        c if c == ALU | op::XOR | src::X => ("xor", x()),
        c if c == ALU | op::LSH | src::X => ("lsh", x()),
        c if c == ALU | op::RSH | src::X => ("rsh", x()),
        c if c == ALU | op::ADD | src::K => ("add", dec()),
        c if c == ALU | op::SUB | src::K => ("sub", dec()),
        c if c == ALU | op::MUL | src::K => ("mul", dec()),
        c if c == ALU | op::DIV | src::K => ("div", dec()),
        c if c == ALU | op::MOD | src::K => ("mod", dec()),
        c if c == ALU | op::AND | src::K => ("and", hex()),
        c if c == ALU | op::OR | src::K => ("or", hex()),
        c if c == ALU | op::XOR | src::K => ("xor", hex()),
        c if c == ALU | op::LSH | src::K => ("lsh", dec()),
        c if c == ALU | op::RSH | src::K => ("rsh", dec()),
        c if c == ALU | op::NEG => ("neg", none()),
        c if c == class::MISC | crate::insn::misc::TAX => ("tax", none()),
        c if c == class::MISC | crate::insn::misc::TXA => ("txa", none()),
        c => ("unimp", format!("0x{c:x}")),
    }
}

/// Instruction `n` as `tcpdump -d` prints it (libpcap's `bpf_image`).
pub fn image_line(p: &Insn, n: usize) -> String {
    let (mnemonic, operand) = parts(p, n);
    if p.is_conditional() {
        format!(
            "({n:03}) {mnemonic:<8} {operand:<16} jt {}\tjf {}",
            n + 1 + usize::from(p.jt),
            n + 1 + usize::from(p.jf)
        )
    } else {
        format!("({n:03}) {mnemonic:<8} {operand}")
    }
}

/// The program as `tcpdump -d` prints it, a line per instruction.
pub fn image(prog: &[Insn]) -> String {
    let mut s = String::new();
    for (n, p) in prog.iter().enumerate() {
        let _ = writeln!(s, "{}", image_line(p, n));
    }
    s
}

/// The program as `tcpdump -dd` prints it: C initialisers.
pub fn image_c(prog: &[Insn]) -> String {
    let mut s = String::new();
    for p in prog {
        let _ = writeln!(
            s,
            "{{ 0x{:x}, {}, {}, 0x{:08x} }},",
            p.code, p.jt, p.jf, p.k
        );
    }
    s
}

/// The program as `tcpdump -ddd` prints it: the count, then decimal
/// `code jt jf k` lines ([`crate::parse_decimal`] reads it back).
pub fn image_decimal(prog: &[Insn]) -> String {
    let mut s = format!("{}\n", prog.len());
    for p in prog {
        let _ = writeln!(s, "{} {} {} {}", p.code, p.jt, p.jf, p.k);
    }
    s
}
