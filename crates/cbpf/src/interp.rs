//! Running a classic filter with the kernel's semantics (the eBPF it
//! translates a socket filter to): A, X and `M[]` start at zero; a packet
//! load outside the packet ends the filter with 0, as does a division or
//! modulo by an X of zero; arithmetic is 32-bit and wraps; shifts by X use
//! its low five bits (as the kernel's code does on x86-64); negative
//! offsets reach Linux's ancillary fields (`SKF_AD_OFF`) and the
//! network- and link-layer-relative windows (`SKF_NET_OFF`, `SKF_LL_OFF`).

use crate::insn::{Insn, MEMWORDS, ancillary, class, misc, mode, op, rval, size, src};

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
}

/// A filter's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
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

/// Bytes `[off, off + n)` of the packet as a big-endian number, with the
/// kernel's negative windows; `None` outside.
fn load(packet: &[u8], meta: &Meta, off: i64, n: usize) -> Option<u32> {
    let start = if off >= 0 {
        off
    } else if off >= i64::from(ancillary::NET_OFF as i32) {
        i64::from(meta.network_offset) + off - i64::from(ancillary::NET_OFF as i32)
    } else if off >= i64::from(ancillary::LL_OFF as i32) {
        off - i64::from(ancillary::LL_OFF as i32)
    } else {
        return None;
    };
    let start = usize::try_from(start).ok()?;
    let bytes = packet.get(start..start.checked_add(n)?)?;
    Some(bytes.iter().fold(0u32, |v, &b| v << 8 | u32::from(b)))
}

/// The ancillary field at `SKF_AD_OFF + off` (`off` checked known).
fn ancillary_load(meta: &Meta, off: u32, a: u32, x: u32) -> u32 {
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
        // Netlink attributes: a packet is no netlink message.
        _ => 0,
    }
}

/// Runs `prog` over `packet`.
pub fn run(prog: &[Insn], packet: &[u8], meta: &Meta) -> Result<Verdict, RunError> {
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; MEMWORDS as usize];
    let mut pc = 0usize;
    let mut insns = 0u64;
    let fail = |insn: usize, why: &str| RunError {
        insn,
        why: why.into(),
    };
    let end = |insns| Ok(Verdict { ret: 0, insns });
    loop {
        let Some(p) = prog.get(pc) else {
            return Err(fail(pc, "runs past the last instruction"));
        };
        insns += 1;
        let (c, k) = (p.code, p.k);
        let mut next = pc + 1;
        match c & 0x07 {
            class::LD | class::LDX => {
                let value = match c & 0xe0 {
                    mode::IMM => k,
                    mode::LEN => meta.len.unwrap_or(packet.len() as u32),
                    mode::MEM => *mem
                        .get(k as usize)
                        .ok_or_else(|| fail(pc, "scratch word out of range"))?,
                    mode::ABS | mode::IND | mode::MSH => {
                        let n = match c & 0x18 {
                            size::W => 4,
                            size::H => 2,
                            size::B => 1,
                            _ => return Err(fail(pc, "unknown load size")),
                        };
                        let ind = c & 0xe0 == mode::IND;
                        if c & 0xe0 == mode::ABS && c & 0x07 == class::LD && k >= ancillary::AD_OFF
                        {
                            ancillary_load(meta, k - ancillary::AD_OFF, a, x)
                        } else {
                            let off = if ind {
                                i64::from((x as i32).wrapping_add(k as i32))
                            } else {
                                i64::from(k as i32)
                            };
                            match load(packet, meta, off, n) {
                                Some(v) if c & 0xe0 == mode::MSH => 4 * (v & 0xf),
                                Some(v) => v,
                                None => return end(insns),
                            }
                        }
                    }
                    _ => return Err(fail(pc, "unknown load mode")),
                };
                if c & 0x07 == class::LD {
                    a = value;
                } else {
                    x = value;
                }
            }
            class::ST | class::STX => {
                let slot = mem
                    .get_mut(k as usize)
                    .ok_or_else(|| fail(pc, "scratch word out of range"))?;
                *slot = if c & 0x07 == class::ST { a } else { x };
            }
            class::ALU => {
                let v = if c & 0x08 == src::X { x } else { k };
                a = match c & 0xf0 {
                    op::ADD => a.wrapping_add(v),
                    op::SUB => a.wrapping_sub(v),
                    op::MUL => a.wrapping_mul(v),
                    op::DIV | op::MOD if v == 0 => return end(insns),
                    op::DIV => a / v,
                    op::MOD => a % v,
                    op::OR => a | v,
                    op::AND => a & v,
                    op::XOR => a ^ v,
                    op::LSH => a.wrapping_shl(v),
                    op::RSH => a.wrapping_shr(v),
                    op::NEG => a.wrapping_neg(),
                    _ => return Err(fail(pc, "unknown ALU operation")),
                };
            }
            class::JMP => {
                let v = if c & 0x08 == src::X { x } else { k };
                let taken = match c & 0xf0 {
                    op::JA => {
                        next = pc
                            .checked_add(1 + k as usize)
                            .ok_or_else(|| fail(pc, "jump out of range"))?;
                        None
                    }
                    op::JEQ => Some(a == v),
                    op::JGT => Some(a > v),
                    op::JGE => Some(a >= v),
                    op::JSET => Some(a & v != 0),
                    _ => return Err(fail(pc, "unknown jump")),
                };
                if let Some(t) = taken {
                    next = pc + 1 + usize::from(if t { p.jt } else { p.jf });
                }
            }
            class::RET => {
                let ret = match c & 0x18 {
                    rval::K => k,
                    rval::A => a,
                    _ => return Err(fail(pc, "`ret x` is not Linux's")),
                };
                return Ok(Verdict { ret, insns });
            }
            _ => match c & 0xf8 {
                misc::TAX => x = a,
                misc::TXA => a = x,
                _ => return Err(fail(pc, "unknown misc operation")),
            },
        }
        pc = next;
    }
}
