//! One classic BPF instruction, `struct sock_filter { u16 code; u8 jt; u8
//! jf; u32 k; }`, and its byte form (eight bytes, host order, as
//! `SO_ATTACH_FILTER` takes it: little-endian here).

use std::fmt;

/// Instruction classes (`code & 0x07`).
pub mod class {
    pub const LD: u16 = 0x00;
    pub const LDX: u16 = 0x01;
    pub const ST: u16 = 0x02;
    pub const STX: u16 = 0x03;
    pub const ALU: u16 = 0x04;
    pub const JMP: u16 = 0x05;
    pub const RET: u16 = 0x06;
    pub const MISC: u16 = 0x07;
}

/// Load sizes (`code & 0x18`).
pub mod size {
    pub const W: u16 = 0x00;
    pub const H: u16 = 0x08;
    pub const B: u16 = 0x10;
}

/// Load modes (`code & 0xe0`).
pub mod mode {
    pub const IMM: u16 = 0x00;
    pub const ABS: u16 = 0x20;
    pub const IND: u16 = 0x40;
    pub const MEM: u16 = 0x60;
    pub const LEN: u16 = 0x80;
    pub const MSH: u16 = 0xa0;
}

/// ALU and jump operations (`code & 0xf0`).
pub mod op {
    pub const ADD: u16 = 0x00;
    pub const SUB: u16 = 0x10;
    pub const MUL: u16 = 0x20;
    pub const DIV: u16 = 0x30;
    pub const OR: u16 = 0x40;
    pub const AND: u16 = 0x50;
    pub const LSH: u16 = 0x60;
    pub const RSH: u16 = 0x70;
    pub const NEG: u16 = 0x80;
    pub const MOD: u16 = 0x90;
    pub const XOR: u16 = 0xa0;

    pub const JA: u16 = 0x00;
    pub const JEQ: u16 = 0x10;
    pub const JGT: u16 = 0x20;
    pub const JGE: u16 = 0x30;
    pub const JSET: u16 = 0x40;
}

/// Operand source (`code & 0x08`): the constant `k` or register X.
pub mod src {
    pub const K: u16 = 0x00;
    pub const X: u16 = 0x08;
}

/// Return value (`code & 0x18`): `k` or the accumulator.
pub mod rval {
    pub const K: u16 = 0x00;
    pub const A: u16 = 0x10;
}

/// Misc operations (`code & 0xf8`).
pub mod misc {
    pub const TAX: u16 = 0x00;
    pub const TXA: u16 = 0x80;
}

/// xPF's additions (docs/cbpf.md), in opcodes neither Linux nor the BSDs
/// use: an indexed mode for `M[]` and three misc operations. A backward
/// jump is a `ja` whose `k` is negative as an `i32`.
pub mod xpf {
    use super::class;

    /// `M[x + k]`: the load/store mode `NDX` (`ld`, `ldx`, `st`, `stx`).
    /// OpenBSD's `BPF_RND` takes 0xc0, so 0xe0.
    pub const NDX: u16 = 0xe0;
    /// `bss`: `M[]` is the per-packet scratch bank (as at the start).
    pub const BSS: u16 = class::MISC | 0x08;
    /// `bsp`: `M[]` is the instance's persistent bank.
    pub const BSP: u16 = class::MISC | 0x10;
    /// `exc`: the exception handler starts here.
    pub const EXC: u16 = class::MISC | 0x18;
    /// The indexed loads and stores.
    pub const LD_NDX: u16 = class::LD | NDX;
    pub const LDX_NDX: u16 = class::LDX | NDX;
    pub const ST_NDX: u16 = class::ST | NDX;
    pub const STX_NDX: u16 = class::STX | NDX;

    /// `ld #time_sec` and `ld #time_nsec`: the packet's arrival time, whole
    /// seconds and the nanoseconds after them, from one reading of the
    /// clock per packet. Ancillary offsets past Linux's (`SKF_AD_MAX` is
    /// 64), read by a word `ld` only.
    pub const TIME_SEC: u32 = super::ancillary::AD_OFF + 0x80;
    pub const TIME_NSEC: u32 = super::ancillary::AD_OFF + 0x84;
    /// Their names in the assembler and the listing.
    pub const TIME_NAMES: [(&str, u32); 2] = [("time_sec", TIME_SEC), ("time_nsec", TIME_NSEC)];

    /// Whether `p` is one of the time loads.
    pub fn is_time_load(p: &super::Insn) -> bool {
        p.code == class::LD | super::size::W | super::mode::ABS
            && (p.k == TIME_SEC || p.k == TIME_NSEC)
    }
}

/// Scratch memory words (`M[0]` .. `M[15]`).
pub const MEMWORDS: u32 = 16;

/// The most instructions a filter may have (the kernel's and libpcap's).
pub const MAXINSNS: usize = 4096;

/// Linux's ancillary data: loads at `AD_OFF + n` read skb fields, not
/// packet bytes (`SKF_AD_*`).
pub mod ancillary {
    /// `SKF_AD_OFF` as the unsigned `k` of a load.
    pub const AD_OFF: u32 = (-0x1000i32) as u32;
    /// Loads relative to the network header (`SKF_NET_OFF`).
    pub const NET_OFF: u32 = (-0x10_0000i32) as u32;
    /// Loads relative to the link-layer header (`SKF_LL_OFF`).
    pub const LL_OFF: u32 = (-0x20_0000i32) as u32;

    pub const PROTOCOL: u32 = 0;
    pub const PKTTYPE: u32 = 4;
    pub const IFINDEX: u32 = 8;
    pub const NLATTR: u32 = 12;
    pub const NLATTR_NEST: u32 = 16;
    pub const MARK: u32 = 20;
    pub const QUEUE: u32 = 24;
    pub const HATYPE: u32 = 28;
    pub const RXHASH: u32 = 32;
    pub const CPU: u32 = 36;
    pub const ALU_XOR_X: u32 = 40;
    pub const VLAN_TAG: u32 = 44;
    pub const VLAN_TAG_PRESENT: u32 = 48;
    pub const PAY_OFFSET: u32 = 52;
    pub const RANDOM: u32 = 56;
    pub const VLAN_TPID: u32 = 60;
    /// One past the last.
    pub const MAX: u32 = 64;

    /// `bpf_asm`'s names for them (`ld #proto`), by offset.
    pub const NAMES: [(&str, u32); 16] = [
        ("proto", PROTOCOL),
        ("type", PKTTYPE),
        ("ifidx", IFINDEX),
        ("nla", NLATTR),
        ("nlan", NLATTR_NEST),
        ("mark", MARK),
        ("queue", QUEUE),
        ("hatype", HATYPE),
        ("rxhash", RXHASH),
        ("cpu", CPU),
        ("xor_x", ALU_XOR_X),
        ("vlan_tci", VLAN_TAG),
        ("vlan_avail", VLAN_TAG_PRESENT),
        ("poff", PAY_OFFSET),
        ("rand", RANDOM),
        ("vlan_tpid", VLAN_TPID),
    ];
}

/// `struct sock_filter`, laid out as the kernel's (a slice of them can be
/// handed to `SO_ATTACH_FILTER` as is).
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

impl Insn {
    /// A statement (`BPF_STMT`).
    pub const fn stmt(code: u16, k: u32) -> Insn {
        Insn {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    /// A jump (`BPF_JUMP`).
    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn { code, jt, jf, k }
    }

    pub fn class(&self) -> u16 {
        self.code & 0x07
    }

    /// Whether the instruction is a conditional jump (two targets).
    pub fn is_conditional(&self) -> bool {
        self.class() == class::JMP && self.code & 0xf0 != op::JA
    }

    /// The eight bytes of `struct sock_filter` (little-endian host).
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0..2].copy_from_slice(&self.code.to_le_bytes());
        b[2] = self.jt;
        b[3] = self.jf;
        b[4..8].copy_from_slice(&self.k.to_le_bytes());
        b
    }

    pub fn from_bytes(b: [u8; 8]) -> Insn {
        Insn {
            code: u16::from_le_bytes([b[0], b[1]]),
            jt: b[2],
            jf: b[3],
            k: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

impl fmt::Debug for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{ {:#06x}, {}, {}, {:#010x} }}",
            self.code, self.jt, self.jf, self.k
        )
    }
}

/// Why bytes or text are not a classic program.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{0} bytes is not a whole number of 8-byte instructions")]
    Length(usize),
    #[error("line {line}: {why}")]
    Text { line: usize, why: String },
}

/// Instructions from `struct sock_filter` bytes.
pub fn decode(bytes: &[u8]) -> Result<Vec<Insn>, DecodeError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(DecodeError::Length(bytes.len()));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| Insn::from_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// The bytes of `prog`, as `SO_ATTACH_FILTER` takes them.
pub fn encode(prog: &[Insn]) -> Vec<u8> {
    prog.iter().flat_map(Insn::to_bytes).collect()
}

/// Instructions from the decimal forms tools print: `tcpdump -ddd` (a
/// count line, then `code jt jf k` per line) or `bpf_asm`'s one line
/// (`N,code jt jf k,code jt jf k,...`, as `tc ... bytecode` and
/// `iptables -m bpf` take it). The count must match.
pub fn parse_decimal(text: &str) -> Result<Vec<Insn>, DecodeError> {
    let mut items: Vec<(usize, &str)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for item in line.split(',') {
            let item = item.trim();
            if !item.is_empty() {
                items.push((n + 1, item));
            }
        }
    }
    let err = |line: usize, why: String| DecodeError::Text { line, why };
    let Some(&(first_line, count)) = items.first() else {
        return Err(err(1, "no instruction count".into()));
    };
    let count: usize = count
        .parse()
        .map_err(|_| err(first_line, format!("`{count}` is not an instruction count")))?;
    let insns = items[1..]
        .iter()
        .map(|&(line, item)| {
            let f: Vec<&str> = item.split_whitespace().collect();
            let num = |s: &str| -> Result<u64, DecodeError> {
                s.parse::<u64>()
                    .map_err(|_| err(line, format!("`{s}` is not a number")))
            };
            if f.len() != 4 {
                return Err(err(
                    line,
                    format!("`{item}`: want `code jt jf k`, four numbers"),
                ));
            }
            let (code, jt, jf, k) = (num(f[0])?, num(f[1])?, num(f[2])?, num(f[3])?);
            Ok(Insn {
                code: u16::try_from(code).map_err(|_| err(line, format!("code {code} > 65535")))?,
                jt: u8::try_from(jt).map_err(|_| err(line, format!("jt {jt} > 255")))?,
                jf: u8::try_from(jf).map_err(|_| err(line, format!("jf {jf} > 255")))?,
                k: u32::try_from(k)
                    .map_err(|_| err(line, format!("k {k} does not fit 32 bits")))?,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if insns.len() != count {
        return Err(err(
            first_line,
            format!(
                "the count says {count} instructions, {} follow",
                insns.len()
            ),
        ));
    }
    Ok(insns)
}
