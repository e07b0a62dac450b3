//! The interpreter's memory operations beyond plain loads and stores:
//! atomics (on the host's atomic types, so concurrent runs see real
//! atomicity) and the legacy packet loads `ld_abs`/`ld_ind`. The JIT's
//! native code calls `legacy_load` too (through `Machine`).

use std::ptr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use isa::opcode::atomic;

use crate::Regs;
use crate::Stats;
use crate::error::VmErrorKind;
use crate::memory::{Access, Memory, RegionKind};
use crate::op::{Op, Slot};

/// The host atomics behind the 32- and 64-bit atomic instructions.
trait Atom {
    type V: Copy;
    /// # Safety
    /// `addr` must be naturally aligned, mapped and writable for the
    /// duration of the returned borrow.
    unsafe fn at<'a>(addr: u64) -> &'a Self;
    fn from_reg(v: u64) -> Self::V;
    fn to_reg(v: Self::V) -> u64;
    fn rmw(&self, op: i32, v: Self::V) -> Self::V;
    fn cmpxchg(&self, expected: Self::V, new: Self::V) -> Self::V;
}

macro_rules! atom {
    ($atomic:ty, $v:ty) => {
        impl Atom for $atomic {
            type V = $v;
            unsafe fn at<'a>(addr: u64) -> &'a Self {
                // SAFETY: the caller guarantees alignment and validity.
                unsafe { <$atomic>::from_ptr(ptr::with_exposed_provenance_mut(addr as usize)) }
            }
            fn from_reg(v: u64) -> $v {
                v as $v
            }
            fn to_reg(v: $v) -> u64 {
                u64::from(v)
            }
            fn rmw(&self, op: i32, v: $v) -> $v {
                match op & !atomic::FETCH {
                    atomic::ADD => self.fetch_add(v, Ordering::SeqCst),
                    atomic::OR => self.fetch_or(v, Ordering::SeqCst),
                    atomic::AND => self.fetch_and(v, Ordering::SeqCst),
                    atomic::XOR => self.fetch_xor(v, Ordering::SeqCst),
                    _ => self.swap(v, Ordering::SeqCst),
                }
            }
            fn cmpxchg(&self, expected: $v, new: $v) -> $v {
                let (Ok(old) | Err(old)) =
                    self.compare_exchange(expected, new, Ordering::SeqCst, Ordering::SeqCst);
                old
            }
        }
    };
}
atom!(AtomicU32, u32);
atom!(AtomicU64, u64);

#[inline(never)]
pub(crate) fn atomic_op<const COUNT: bool>(
    s: &Slot,
    r: &mut Regs,
    mem: &Memory<'_>,
    stats: &mut Stats,
    regions: &mut [[u64; 2]],
) -> Result<(), VmErrorKind> {
    if s.op == Op::Atomic32 {
        atomic_on::<AtomicU32, COUNT>(s, r, mem, stats, regions)
    } else {
        atomic_on::<AtomicU64, COUNT>(s, r, mem, stats, regions)
    }
}

fn atomic_on<A: Atom, const COUNT: bool>(
    s: &Slot,
    r: &mut Regs,
    mem: &Memory<'_>,
    stats: &mut Stats,
    regions: &mut [[u64; 2]],
) -> Result<(), VmErrorKind> {
    let (d, x) = ((s.dst & 15) as usize, (s.src & 15) as usize);
    let addr = r[d].wrapping_add(s.off as i64 as u64);
    let size = size_of::<A::V>() as u64;
    if !addr.is_multiple_of(size) {
        return Err(VmErrorKind::MisalignedAtomic { addr, size });
    }
    let (kind, at) = mem
        .find_at(addr, size, Access::Write)
        .ok_or_else(|| VmErrorKind::Memory(mem.fault(addr, size, Access::Write)))?;
    if COUNT {
        stats.loads[kind as usize] += 1;
        stats.stores[kind as usize] += 1;
        regions[at][0] += 1;
        regions[at][1] += 1;
    }
    // SAFETY: aligned (checked above), and `check` proved the word is
    // mapped and writable.
    let cell = unsafe { A::at(addr) };
    let op = s.imm as i32;
    if op == atomic::CMPXCHG {
        r[0] = A::to_reg(cell.cmpxchg(A::from_reg(r[0]), A::from_reg(r[x])));
    } else {
        let old = cell.rmw(op, A::from_reg(r[x]));
        if op & atomic::FETCH != 0 {
            r[x] = A::to_reg(old);
        }
    }
    Ok(())
}

/// `ldabs`/`ldind`: a big-endian load from the packet; `None` when the
/// offset is outside the packet, which ends the program with 0 as in the
/// kernel.
#[inline(never)]
pub(crate) fn legacy_load<const COUNT: bool>(
    s: &Slot,
    r: &Regs,
    mem: &Memory<'_>,
    stats: &mut Stats,
    regions: &mut [[u64; 2]],
) -> Result<Option<u64>, VmErrorKind> {
    let packet = mem.packet().ok_or(VmErrorKind::NoPacket)?;
    let indirect = matches!(s.op, Op::LdIndB | Op::LdIndH | Op::LdIndW);
    let base = if indirect {
        r[(s.src & 15) as usize] as i32
    } else {
        0
    };
    let off = base.wrapping_add(s.imm as i32);
    let size: u64 = match s.op {
        Op::LdAbsB | Op::LdIndB => 1,
        Op::LdAbsH | Op::LdIndH => 2,
        _ => 4,
    };
    if off < 0 || off as u64 + size > packet.len {
        return Ok(None);
    }
    if COUNT {
        stats.loads[RegionKind::Packet as usize] += 1;
        if let Some(i) = mem.index_of(RegionKind::Packet) {
            regions[i + 1][0] += 1;
        }
    }
    let bytes = mem
        .read_untallied(packet.start + off as u64, size as usize)
        .map_err(VmErrorKind::Memory)?;
    Ok(Some(
        bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
    ))
}
