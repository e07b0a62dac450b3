//! Running a classic filter with the kernel's semantics (the eBPF it
//! translates a socket filter to): A, X and `M[]` start at zero; a packet
//! load outside the packet ends the filter with 0, as does a division or
//! modulo by an X of zero; arithmetic is 32-bit and wraps; shifts by X use
//! its low five bits (as the kernel's code does on x86-64); negative
//! offsets reach Linux's ancillary fields (`SKF_AD_OFF`) and the
//! network- and link-layer-relative windows (`SKF_NET_OFF`, `SKF_LL_OFF`).
//!
//! Two things the kernel's checker refuses run as libpcap's `bpf_filter`
//! runs them, since tcpdump's programs have them: a negative offset that
//! names no ancillary field (libpcap's `ldb [-2]` on some link types) is
//! outside the packet (0), and a `ja` whose `k` is negative as a signed
//! 32-bit number jumps backward (libpcap's `ip6 protochain` loop; a loop
//! still running after [`LOOP_LIMIT`] instructions is an error).
//!
//! A program is decoded once into a [`Filter`] (operations with their
//! operands and absolute jump targets, so a run decodes nothing) and then
//! run over any number of packets.

use crate::insn::{Insn, MEMWORDS, ancillary, class, misc, mode, op, rval, size, src, xpf};
use crate::xpf::{Bank, Shape};

/// What a filter may read besides the packet's bytes: the fields of the
/// kernel's `sk_buff` Linux's ancillary loads return. A replay fills in
/// what it knows; the rest reads as zero, as for a packet without them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// `skb->len`, what `ld #pktlen` loads; `None`: the packet's length.
    pub len: Option<u32>,
    /// `skb->protocol`, the EtherType (`SKF_AD_PROTOCOL`).
    pub protocol: u16,
    /// `skb->pkt_type` (`PACKET_HOST` 0, `BROADCAST` 1, ...).
    pub pkttype: u32,
    pub ifindex: u32,
    pub mark: u32,
    /// `skb->queue_mapping`.
    pub queue: u32,
    /// The device type (`ARPHRD_ETHER` is 1).
    pub hatype: u32,
    pub rxhash: u32,
    pub cpu: u32,
    /// A VLAN tag the device took off the frame: TPID and TCI.
    pub vlan: Option<(u16, u16)>,
    /// What `SKF_AD_RANDOM` returns (a replay picks it, reproducibly).
    pub random: u32,
    /// Where the network header starts (`SKF_NET_OFF` loads).
    pub network_offset: u32,
    /// Where the transport payload starts (`SKF_AD_PAY_OFFSET`), as the
    /// kernel's flow dissector finds it.
    pub payload_offset: u32,
    /// xPF: the packet's arrival time in nanoseconds (`ld #time_sec`,
    /// `ld #time_nsec`).
    pub time_ns: u64,
}

/// A filter's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterResult {
    /// What `ret` returned: the bytes to keep, 0 to drop.
    pub ret: u32,
    /// Instructions executed.
    pub insns: u64,
}

/// Why a filter could not run (only a program that failed [`crate::check`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("insn {insn}: {why} (the checker refuses this program)")]
pub struct RunError {
    pub insn: usize,
    pub why: String,
}

/// One decoded instruction, one flat variant per operation and operand
/// kind, so a run dispatches once per instruction. Jump targets are
/// absolute and inside the program; scratch indices are below 16 (else the
/// instruction decodes to [`Op::Bad`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Op {
    LdB(u32),
    LdH(u32),
    LdW(u32),
    LdIndB(u32),
    LdIndH(u32),
    LdIndW(u32),
    /// A packet load into X (not Linux's, but decodable).
    LdxPacket(u8, bool, u32),
    /// `X = 4 * (p[k] & 0xf)`.
    Msh(u32),
    Ancillary(u32),
    LdImm(u32),
    LdxImm(u32),
    LdLen,
    LdxLen,
    LdMem(u8),
    LdxMem(u8),
    St(u8),
    Stx(u8),
    AddK(u32),
    AddX,
    SubK(u32),
    SubX,
    MulK(u32),
    MulX,
    DivK(u32),
    DivX,
    ModK(u32),
    ModX,
    OrK(u32),
    OrX,
    AndK(u32),
    AndX,
    XorK(u32),
    XorX,
    LshK(u32),
    LshX,
    RshK(u32),
    RshX,
    Neg,
    Ja(u32),
    JeqK(u32, u32, u32),
    JeqX(u32, u32),
    JgtK(u32, u32, u32),
    JgtX(u32, u32),
    JgeK(u32, u32, u32),
    JgeX(u32, u32),
    JsetK(u32, u32, u32),
    JsetX(u32, u32),
    RetK(u32),
    RetA,
    Tax,
    Txa,
    /// xPF: `M[k]` of the persistent bank.
    LdP(u32),
    LdxP(u32),
    StP(u32),
    StxP(u32),
    /// xPF: `M[x + k]`, of the persistent bank when `true`.
    LdNdx(bool, u32),
    LdxNdx(bool, u32),
    StNdx(bool, u32),
    StxNdx(bool, u32),
    /// xPF: a backward `ja` (the budget is checked first).
    JaBack(u32),
    /// xPF's `bss`, `bsp` and `exc`: each access knows its bank.
    Nop,
    /// What the checker refuses: an error if run.
    Bad(&'static str),
}

/// Instructions a classic run that jumps backward may execute before it
/// is stopped as looping forever: libpcap's `protochain` loop over a
/// 256 KiB packet (at least 8 bytes an iteration) runs under 600,000.
pub const LOOP_LIMIT: u64 = 1 << 24;

/// A classic program decoded for running.
#[derive(Clone, Debug)]
pub struct Filter {
    pub(crate) ops: Vec<Op>,
}

/// How an xPF run went: the result, and whether the budget ran out.
pub(crate) struct XpfRun {
    pub verdict: FilterResult,
    pub exceeded: bool,
}

/// Decodes xPF instruction `pc` (checked, with its bank known).
fn decode_xpf(pc: usize, p: &Insn, len: usize, bank: Bank) -> Op {
    let pers = bank == Bank::Persistent;
    let (c, k) = (p.code, p.k);
    match c {
        xpf::BSS | xpf::BSP | xpf::EXC => Op::Nop,
        xpf::LD_NDX => Op::LdNdx(pers, k),
        xpf::LDX_NDX => Op::LdxNdx(pers, k),
        xpf::ST_NDX => Op::StNdx(pers, k),
        xpf::STX_NDX => Op::StxNdx(pers, k),
        _ if c == class::JMP | op::JA => match crate::xpf::ja_target(pc, k, len) {
            Some(t) if t <= pc => Op::JaBack(t as u32),
            Some(t) => Op::Ja(t as u32),
            None => Op::Bad("jump out of range"),
        },
        _ if pers && c == class::LD | mode::MEM => Op::LdP(k),
        _ if pers && c == class::LDX | mode::MEM => Op::LdxP(k),
        _ if pers && c == class::ST => Op::StP(k),
        _ if pers && c == class::STX => Op::StxP(k),
        _ => decode(pc, p, len),
    }
}

fn decode(pc: usize, p: &Insn, len: usize) -> Op {
    let (c, k) = (p.code, p.k);
    let target = |off: i64| -> Option<u32> {
        let t = pc as i64 + 1 + off;
        (0..len as i64).contains(&t).then_some(t as u32)
    };
    let slot = |k: u32| (k < MEMWORDS).then_some(k as u8);
    let bad_slot = Op::Bad("scratch word out of range");
    let x = c & 0x08 == src::X;
    match c & 0x07 {
        class::LD | class::LDX => {
            let a = c & 0x07 == class::LD;
            match (c & 0xe0, a) {
                (mode::IMM, true) => Op::LdImm(k),
                (mode::IMM, false) => Op::LdxImm(k),
                (mode::LEN, true) => Op::LdLen,
                (mode::LEN, false) => Op::LdxLen,
                (mode::MEM, true) => slot(k).map_or(bad_slot, Op::LdMem),
                (mode::MEM, false) => slot(k).map_or(bad_slot, Op::LdxMem),
                (mode::MSH, false) if c & 0x18 == size::B => Op::Msh(k),
                (mode::ABS | mode::IND, _) => {
                    let ind = c & 0xe0 == mode::IND;
                    let n = match c & 0x18 {
                        size::W => 4,
                        size::H => 2,
                        size::B => 1,
                        _ => return Op::Bad("unknown load size"),
                    };
                    match (a, ind, n) {
                        (true, false, _) if k >= ancillary::AD_OFF && reads_field(k) => {
                            Op::Ancillary(k - ancillary::AD_OFF)
                        }
                        (true, false, 1) => Op::LdB(k),
                        (true, false, 2) => Op::LdH(k),
                        (true, false, _) => Op::LdW(k),
                        (true, true, 1) => Op::LdIndB(k),
                        (true, true, 2) => Op::LdIndH(k),
                        (true, true, _) => Op::LdIndW(k),
                        (false, _, _) => Op::LdxPacket(n, ind, k),
                    }
                }
                _ => Op::Bad("unknown load mode"),
            }
        }
        class::ST => slot(k).map_or(bad_slot, Op::St),
        class::STX => slot(k).map_or(bad_slot, Op::Stx),
        class::ALU => match (c & 0xf0, x) {
            (op::ADD, false) => Op::AddK(k),
            (op::ADD, true) => Op::AddX,
            (op::SUB, false) => Op::SubK(k),
            (op::SUB, true) => Op::SubX,
            (op::MUL, false) => Op::MulK(k),
            (op::MUL, true) => Op::MulX,
            (op::DIV, false) => Op::DivK(k),
            (op::DIV, true) => Op::DivX,
            (op::MOD, false) => Op::ModK(k),
            (op::MOD, true) => Op::ModX,
            (op::OR, false) => Op::OrK(k),
            (op::OR, true) => Op::OrX,
            (op::AND, false) => Op::AndK(k),
            (op::AND, true) => Op::AndX,
            (op::XOR, false) => Op::XorK(k),
            (op::XOR, true) => Op::XorX,
            (op::LSH, false) => Op::LshK(k),
            (op::LSH, true) => Op::LshX,
            (op::RSH, false) => Op::RshK(k),
            (op::RSH, true) => Op::RshX,
            (op::NEG, _) => Op::Neg,
            _ => Op::Bad("unknown ALU operation"),
        },
        class::JMP => {
            if c & 0xf0 == op::JA {
                // libpcap's `bpf_filter` sign-extends `k` (`protochain`
                // jumps backward); a forward target is the kernel's too.
                return match target(i64::from(k as i32)) {
                    Some(t) if t as usize <= pc => Op::JaBack(t),
                    Some(t) => Op::Ja(t),
                    None => Op::Bad("jump out of range"),
                };
            }
            let (Some(t), Some(f)) = (target(i64::from(p.jt)), target(i64::from(p.jf))) else {
                return Op::Bad("jump out of range");
            };
            match (c & 0xf0, x) {
                (op::JEQ, false) => Op::JeqK(k, t, f),
                (op::JEQ, true) => Op::JeqX(t, f),
                (op::JGT, false) => Op::JgtK(k, t, f),
                (op::JGT, true) => Op::JgtX(t, f),
                (op::JGE, false) => Op::JgeK(k, t, f),
                (op::JGE, true) => Op::JgeX(t, f),
                (op::JSET, false) => Op::JsetK(k, t, f),
                (op::JSET, true) => Op::JsetX(t, f),
                _ => Op::Bad("unknown jump"),
            }
        }
        class::RET => match c & 0x18 {
            rval::K => Op::RetK(k),
            rval::A => Op::RetA,
            _ => Op::Bad("`ret x` is not Linux's"),
        },
        _ => match c & 0xf8 {
            misc::TAX => Op::Tax,
            misc::TXA => Op::Txa,
            _ => Op::Bad("unknown misc operation"),
        },
    }
}

/// Whether an absolute load at `k` (at or past `SKF_AD_OFF`) reads a field:
/// one of Linux's ancillary fields or xPF's clock. Any other such `k` is a
/// negative offset outside the packet.
fn reads_field(k: u32) -> bool {
    crate::check::known_ancillary(k) || k == xpf::TIME_SEC || k == xpf::TIME_NSEC
}

/// Bytes `[off, off + n)` of the packet as a big-endian number, with the
/// kernel's negative windows; `None` outside (a negative offset in neither
/// window, as libpcap and the kernel's `ld_abs` both read it).
#[inline]
pub(crate) fn load(packet: &[u8], meta: &Meta, off: i64, n: usize) -> Option<u32> {
    let start = if off >= 0 {
        off
    } else if off >= i64::from(ancillary::AD_OFF as i32) {
        return None;
    } else if off >= i64::from(ancillary::NET_OFF as i32) {
        i64::from(meta.network_offset) + off - i64::from(ancillary::NET_OFF as i32)
    } else if off >= i64::from(ancillary::LL_OFF as i32) {
        off - i64::from(ancillary::LL_OFF as i32)
    } else {
        return None;
    };
    let start = usize::try_from(start).ok()?;
    let bytes = packet.get(start..start.checked_add(n)?)?;
    Some(match *bytes {
        [b] => u32::from(b),
        [a, b] => u32::from(u16::from_be_bytes([a, b])),
        [a, b, c, d] => u32::from_be_bytes([a, b, c, d]),
        _ => return None,
    })
}

const NS_PER_SEC: u64 = 1_000_000_000;

/// The ancillary field at `SKF_AD_OFF + off`.
pub(crate) fn ancillary_load(meta: &Meta, off: u32, a: u32, x: u32) -> u32 {
    use ancillary::*;
    match off {
        PROTOCOL => u32::from(meta.protocol),
        PKTTYPE => meta.pkttype,
        IFINDEX => meta.ifindex,
        MARK => meta.mark,
        QUEUE => meta.queue,
        HATYPE => meta.hatype,
        RXHASH => meta.rxhash,
        CPU => meta.cpu,
        ALU_XOR_X => a ^ x,
        VLAN_TAG => meta.vlan.map_or(0, |(_, tci)| u32::from(tci)),
        VLAN_TAG_PRESENT => u32::from(meta.vlan.is_some()),
        VLAN_TPID => meta.vlan.map_or(0, |(tpid, _)| u32::from(tpid)),
        PAY_OFFSET => meta.payload_offset,
        RANDOM => meta.random,
        _ if off == xpf::TIME_SEC - AD_OFF => (meta.time_ns / NS_PER_SEC) as u32,
        _ if off == xpf::TIME_NSEC - AD_OFF => (meta.time_ns % NS_PER_SEC) as u32,
        // Netlink attributes: a packet is no netlink message.
        _ => 0,
    }
}

impl Filter {
    /// Decodes `prog` (checked or not: what the checker would refuse fails
    /// when it runs, never earlier).
    pub fn new(prog: &[Insn]) -> Filter {
        Filter {
            ops: prog
                .iter()
                .enumerate()
                .map(|(pc, p)| decode(pc, p, prog.len()))
                .collect(),
        }
    }

    /// Decodes a checked xPF program.
    pub(crate) fn new_xpf(prog: &[Insn], shape: &Shape) -> Filter {
        Filter {
            ops: prog
                .iter()
                .enumerate()
                .map(|(pc, p)| decode_xpf(pc, p, prog.len(), shape.banks[pc]))
                .collect(),
        }
    }

    /// Runs the filter over `packet`.
    pub fn run(&self, packet: &[u8], meta: &Meta) -> Result<FilterResult, RunError> {
        self.exec::<false>(packet, meta, &mut [], u64::MAX, None)
            .map(|r| r.verdict)
    }

    /// Runs an xPF filter over `packet` with `persistent` the active block.
    pub(crate) fn run_xpf(
        &self,
        packet: &[u8],
        meta: &Meta,
        persistent: &mut [u32],
        budget: u32,
        handler: Option<usize>,
    ) -> Result<XpfRun, RunError> {
        self.exec::<true>(packet, meta, persistent, budget.into(), handler)
    }

    #[inline(always)]
    fn exec<const XPF: bool>(
        &self,
        packet: &[u8],
        meta: &Meta,
        pmem: &mut [u32],
        budget: u64,
        handler: Option<usize>,
    ) -> Result<XpfRun, RunError> {
        let (mut a, mut x) = (0u32, 0u32);
        let mut mem = [0u32; MEMWORDS as usize];
        let mut pc = 0usize;
        let mut insns = 0u64;
        // xPF: whether the budget ran out and the handler took over.
        let mut exceeded = false;
        macro_rules! done {
            ($ret:expr) => {
                XpfRun {
                    verdict: FilterResult { ret: $ret, insns },
                    exceeded,
                }
            };
        }
        let abs = |k: u32| i64::from(k as i32);
        let ind = |x: u32, k: u32| i64::from((x as i32).wrapping_add(k as i32));
        macro_rules! load {
            ($off:expr, $n:expr) => {
                match load(packet, meta, $off, $n) {
                    Some(v) => v,
                    None => return Ok(done!(0)),
                }
            };
        }
        // xPF's indexed accesses: the word's index in a bank of `len`.
        let ndx = |x: u32, k: u32, len: usize| -> Option<usize> {
            let i = u64::from(x) + u64::from(k);
            (i < len as u64).then_some(i as usize)
        };
        let bad = |pc: usize, why: &str| RunError {
            insn: pc,
            why: why.into(),
        };
        macro_rules! jump {
            ($cond:expr, $t:expr, $f:expr) => {
                pc = if $cond { $t } else { $f } as usize
            };
        }
        loop {
            let Some(&op) = self.ops.get(pc) else {
                return Err(RunError {
                    insn: pc,
                    why: "runs past the last instruction".into(),
                });
            };
            insns += 1;
            pc += 1;
            match op {
                Op::LdB(k) => a = load!(abs(k), 1),
                Op::LdH(k) => a = load!(abs(k), 2),
                Op::LdW(k) => a = load!(abs(k), 4),
                Op::LdIndB(k) => a = load!(ind(x, k), 1),
                Op::LdIndH(k) => a = load!(ind(x, k), 2),
                Op::LdIndW(k) => a = load!(ind(x, k), 4),
                Op::LdxPacket(n, i, k) => {
                    x = load!(if i { ind(x, k) } else { abs(k) }, usize::from(n))
                }
                Op::Msh(k) => x = 4 * (load!(abs(k), 1) & 0xf),
                Op::Ancillary(off) => a = ancillary_load(meta, off, a, x),
                Op::LdImm(k) => a = k,
                Op::LdxImm(k) => x = k,
                Op::LdLen => a = meta.len.unwrap_or(packet.len() as u32),
                Op::LdxLen => x = meta.len.unwrap_or(packet.len() as u32),
                Op::LdMem(s) => a = mem[usize::from(s) & 15],
                Op::LdxMem(s) => x = mem[usize::from(s) & 15],
                Op::St(s) => mem[usize::from(s) & 15] = a,
                Op::Stx(s) => mem[usize::from(s) & 15] = x,
                Op::AddK(k) => a = a.wrapping_add(k),
                Op::AddX => a = a.wrapping_add(x),
                Op::SubK(k) => a = a.wrapping_sub(k),
                Op::SubX => a = a.wrapping_sub(x),
                Op::MulK(k) => a = a.wrapping_mul(k),
                Op::MulX => a = a.wrapping_mul(x),
                Op::DivK(k) | Op::ModK(k) if k == 0 => return Ok(done!(0)),
                Op::DivX | Op::ModX if x == 0 => return Ok(done!(0)),
                Op::DivK(k) => a /= k,
                Op::DivX => a /= x,
                Op::ModK(k) => a %= k,
                Op::ModX => a %= x,
                Op::OrK(k) => a |= k,
                Op::OrX => a |= x,
                Op::AndK(k) => a &= k,
                Op::AndX => a &= x,
                Op::XorK(k) => a ^= k,
                Op::XorX => a ^= x,
                Op::LshK(k) => a = a.wrapping_shl(k),
                Op::LshX => a = a.wrapping_shl(x),
                Op::RshK(k) => a = a.wrapping_shr(k),
                Op::RshX => a = a.wrapping_shr(x),
                Op::Neg => a = a.wrapping_neg(),
                Op::Ja(t) => pc = t as usize,
                Op::JeqK(k, t, f) => jump!(a == k, t, f),
                Op::JeqX(t, f) => jump!(a == x, t, f),
                Op::JgtK(k, t, f) => jump!(a > k, t, f),
                Op::JgtX(t, f) => jump!(a > x, t, f),
                Op::JgeK(k, t, f) => jump!(a >= k, t, f),
                Op::JgeX(t, f) => jump!(a >= x, t, f),
                Op::JsetK(k, t, f) => jump!(a & k != 0, t, f),
                Op::JsetX(t, f) => jump!(a & x != 0, t, f),
                Op::RetK(k) => return Ok(done!(k)),
                Op::RetA => return Ok(done!(a)),
                Op::Tax => x = a,
                Op::Txa => a = x,
                Op::LdP(k) | Op::LdxP(k) | Op::StP(k) | Op::StxP(k) if XPF => {
                    let Some(w) = pmem.get_mut(k as usize) else {
                        return Err(bad(pc - 1, "persistent word out of range"));
                    };
                    match op {
                        Op::LdP(_) => a = *w,
                        Op::LdxP(_) => x = *w,
                        Op::StP(_) => *w = a,
                        _ => *w = x,
                    }
                }
                Op::LdNdx(p, k) | Op::LdxNdx(p, k) | Op::StNdx(p, k) | Op::StxNdx(p, k) if XPF => {
                    let bank: &mut [u32] = if p { pmem } else { &mut mem };
                    let Some(i) = ndx(x, k, bank.len()) else {
                        return Ok(done!(0));
                    };
                    match op {
                        Op::LdNdx(..) => a = bank[i],
                        Op::LdxNdx(..) => x = bank[i],
                        Op::StNdx(..) => bank[i] = a,
                        _ => bank[i] = x,
                    }
                }
                Op::JaBack(t) if XPF => {
                    if insns > budget {
                        exceeded = true;
                        match handler {
                            // The handler jumps forward only: no more checks.
                            Some(h) => pc = h,
                            None => return Ok(done!(0)),
                        }
                    } else {
                        pc = t as usize;
                    }
                }
                Op::JaBack(t) => {
                    if insns > LOOP_LIMIT {
                        return Err(bad(
                            pc - 1,
                            &format!("still looping after {LOOP_LIMIT} instructions"),
                        ));
                    }
                    pc = t as usize;
                }
                Op::Nop if XPF => {}
                Op::LdP(_)
                | Op::LdxP(_)
                | Op::StP(_)
                | Op::StxP(_)
                | Op::LdNdx(..)
                | Op::LdxNdx(..)
                | Op::StNdx(..)
                | Op::StxNdx(..)
                | Op::Nop => return Err(bad(pc - 1, "an xPF instruction in a classic filter")),
                Op::Bad(why) => {
                    return Err(RunError {
                        insn: pc - 1,
                        why: why.into(),
                    });
                }
            }
        }
    }
}

/// Runs `prog` over `packet` (decoding it first: a [`Filter`] decodes
/// once for many packets).
pub fn run(prog: &[Insn], packet: &[u8], meta: &Meta) -> Result<FilterResult, RunError> {
    Filter::new(prog).run(packet, meta)
}
