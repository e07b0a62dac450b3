//! Conditional jumps: which outcomes are possible, and what each edge
//! teaches about the registers compared (ranges, NULL checks, packet
//! bounds against `data_end`).

use isa::{Cond, Operand, Width};

use crate::bounds::{Bits, Op, Scalar, ScalarN};
use crate::check::{Flow, Res, Verifier};
use crate::state::{Kind, MapId, Reg, State};
use crate::tnum::TnumN;
use crate::width::{ones, smax, smin};

/// The condition that holds on the other edge (`None` for `jset`).
pub(crate) fn negate(c: Cond) -> Option<Cond> {
    Some(match c {
        Cond::Eq => Cond::Ne,
        Cond::Ne => Cond::Eq,
        Cond::Gt => Cond::Le,
        Cond::Le => Cond::Gt,
        Cond::Ge => Cond::Lt,
        Cond::Lt => Cond::Ge,
        Cond::Sgt => Cond::Sle,
        Cond::Sle => Cond::Sgt,
        Cond::Sge => Cond::Slt,
        Cond::Slt => Cond::Sge,
        Cond::Set => return None,
    })
}

/// `a cond b` with the operands swapped (`a > b` is `b < a`).
fn swap(c: Cond) -> Cond {
    match c {
        Cond::Gt => Cond::Lt,
        Cond::Lt => Cond::Gt,
        Cond::Ge => Cond::Le,
        Cond::Le => Cond::Ge,
        Cond::Sgt => Cond::Slt,
        Cond::Slt => Cond::Sgt,
        Cond::Sge => Cond::Sle,
        Cond::Sle => Cond::Sge,
        c => c,
    }
}

/// A condition on one edge: `Cond`, or "no bit of the mask set".
#[derive(Copy, Clone, Debug)]
pub(crate) enum Edge {
    Holds(Cond),
    NotSet,
}

/// Narrows `a` and `b` to the values where `a edge b` holds; `None` when
/// no values do.
pub(crate) fn refine<const N: u32>(
    a: &ScalarN<N>,
    b: &ScalarN<N>,
    edge: Edge,
    bits: Bits,
) -> Option<(ScalarN<N>, ScalarN<N>)> {
    let (mut a, mut b) = (*a, *b);
    let (x, y) = (a.view(bits), b.view(bits));
    let w = bits.of(N);
    let (umax, smin, smax) = (ones(w), smin(w), smax(w));
    let mut xa = x;
    let mut yb = y;
    match edge {
        Edge::Holds(Cond::Eq) => {
            xa.umin = x.umin.max(y.umin);
            xa.umax = x.umax.min(y.umax);
            xa.smin = x.smin.max(y.smin);
            xa.smax = x.smax.min(y.smax);
            yb = xa;
            let (ta, tb) = match bits {
                Bits::B64 => (a.var, b.var),
                Bits::B32 => (a.var.subreg(), b.var.subreg()),
            };
            if !ta.overlaps(tb) {
                return None;
            }
            let t = ta.intersect(tb);
            match bits {
                Bits::B64 => {
                    a.var = t;
                    b.var = t;
                }
                Bits::B32 => {
                    a.var = a.var.with_subreg(t);
                    b.var = b.var.with_subreg(t);
                }
            }
        }
        Edge::Holds(Cond::Ne) => {
            // Only a constant on one side teaches something: an end of the
            // other's range is excluded.
            let cut = |r: &mut crate::bounds::Range, v: u64, sv: i64| {
                if r.umin == v && r.umin < r.umax {
                    r.umin += 1;
                } else if r.umax == v && r.umin < r.umax {
                    r.umax -= 1;
                } else if r.umin == v && r.umax == v {
                    r.umin = 1;
                    r.umax = 0;
                }
                if r.smin == sv && r.smin < r.smax {
                    r.smin += 1;
                } else if r.smax == sv && r.smin < r.smax {
                    r.smax -= 1;
                }
            };
            if y.umin == y.umax {
                cut(&mut xa, y.umin, y.smin);
            }
            if x.umin == x.umax {
                cut(&mut yb, x.umin, x.smin);
            }
        }
        Edge::Holds(Cond::Gt) => {
            if y.umin == umax || x.umax == 0 {
                return None;
            }
            xa.umin = x.umin.max(y.umin + 1);
            yb.umax = y.umax.min(x.umax - 1);
        }
        Edge::Holds(Cond::Ge) => {
            xa.umin = x.umin.max(y.umin);
            yb.umax = y.umax.min(x.umax);
        }
        Edge::Holds(Cond::Sgt) => {
            if y.smin == smax || x.smax == smin {
                return None;
            }
            xa.smin = x.smin.max(y.smin + 1);
            yb.smax = y.smax.min(x.smax - 1);
        }
        Edge::Holds(Cond::Sge) => {
            xa.smin = x.smin.max(y.smin);
            yb.smax = y.smax.min(x.smax);
        }
        Edge::Holds(c @ (Cond::Lt | Cond::Le | Cond::Slt | Cond::Sle)) => {
            let (nb, na) = refine(&b, &a, Edge::Holds(swap(c)), bits)?;
            return Some((na, nb));
        }
        Edge::Holds(Cond::Set) => {
            // Some bit of the mask is set: impossible when none can be.
            if let Some(m) = match bits {
                Bits::B64 => b.var.is_const().then_some(b.var.value),
                Bits::B32 => b.var.subreg().is_const().then_some(b.var.subreg().value),
            } {
                let t = match bits {
                    Bits::B64 => a.var,
                    Bits::B32 => a.var.subreg(),
                };
                if t.max() & m == 0 {
                    return None;
                }
                if m.is_power_of_two() {
                    a.var = TnumN {
                        value: a.var.value | m,
                        mask: a.var.mask & !m,
                    };
                }
            }
        }
        Edge::NotSet => {
            if let Some(m) = match bits {
                Bits::B64 => b.var.is_const().then_some(b.var.value),
                Bits::B32 => b.var.subreg().is_const().then_some(b.var.subreg().value),
            } {
                if a.var.value & m != 0 {
                    return None;
                }
                a.var = TnumN {
                    value: a.var.value & !m,
                    mask: a.var.mask & !m,
                };
            }
        }
    }
    if xa.umin > xa.umax || xa.smin > xa.smax || yb.umin > yb.umax || yb.smin > yb.smax {
        return None;
    }
    set_view(&mut a, bits, xa);
    set_view(&mut b, bits, yb);
    (a.sync() && b.sync()).then_some((a, b))
}

fn set_view<const N: u32>(s: &mut ScalarN<N>, bits: Bits, r: crate::bounds::Range) {
    match bits {
        Bits::B64 => {
            s.umin = s.umin.max(r.umin);
            s.umax = s.umax.min(r.umax);
            s.smin = s.smin.max(r.smin);
            s.smax = s.smax.min(r.smax);
        }
        Bits::B32 => {
            s.u32min = s.u32min.max(r.umin as u32);
            s.u32max = s.u32max.min(r.umax as u32);
            s.s32min = s.s32min.max(r.smin as i32);
            s.s32max = s.s32max.min(r.smax as i32);
        }
    }
}

impl Verifier<'_> {
    #[allow(clippy::too_many_arguments)]
    pub fn cond_jump(
        &mut self,
        st: &mut State,
        width: Width,
        cond: Cond,
        dst: u8,
        src: Operand,
        next: usize,
        target: usize,
    ) -> Res<Flow> {
        let d = self.read(st, dst)?;
        let (s, src_reg) = match src {
            Operand::Reg(r) => (self.read(st, r.number())?, Some(r.number())),
            Operand::Imm(i) => (
                Reg::konst(match width {
                    Width::W64 => i as i64 as u64,
                    Width::W32 => i as u32 as u64,
                }),
                None,
            ),
        };
        let bits = match width {
            Width::W64 => Bits::B64,
            Width::W32 => Bits::B32,
        };
        let mut refined = None;
        if d.is_scalar() && s.is_scalar() {
            let true_edge = refine(&d.s, &s.s, Edge::Holds(cond), bits);
            let false_edge = match negate(cond) {
                Some(n) => refine(&d.s, &s.s, Edge::Holds(n), bits),
                None => refine(&d.s, &s.s, Edge::NotSet, bits),
            };
            let compared = (1u16 << dst) | src_reg.map_or(0, |r| 1 << r);
            self.last_linked = linked(st, &[d, s]);
            if true_edge.is_none() || false_edge.is_none() {
                // The values decided the branch: they must stay as narrow
                // wherever this path is compared with another.
                self.demand(st, compared, &[]);
            }
            refined = Some((true_edge, false_edge));
        }
        let mut taken = Some(st.clone());
        let mut fall = Some(std::mem::replace(
            st,
            State {
                frames: vec![],
                refs: vec![],
                lock: None,
                callback_calls: 0,
            },
        ));

        if let Some((true_edge, false_edge)) = refined {
            apply(&mut taken, true_edge, dst, src_reg, &d, &s);
            apply(&mut fall, false_edge, dst, src_reg, &d, &s);
        } else if width == Width::W64
            && matches!(cond, Cond::Eq | Cond::Ne)
            && (d.is_null_const() || s.is_null_const())
        {
            // A pointer compared with NULL.
            let (p, preg) = if s.is_null_const() {
                (d, dst)
            } else {
                (s, src_reg.unwrap_or(dst))
            };
            if p.kind.is_pointer() {
                let (null_edge, ptr_edge) = if cond == Cond::Eq {
                    (&mut taken, &mut fall)
                } else {
                    (&mut fall, &mut taken)
                };
                if p.kind.maybe_null() {
                    let locked = |m: MapId| self.maps[m].spin_lock.is_some();
                    if let Some(st) = null_edge.as_mut() {
                        mark_null(st, &p, preg, true, &locked);
                    }
                    if let Some(st) = ptr_edge.as_mut() {
                        mark_null(st, &p, preg, false, &locked);
                    }
                } else if !matches!(p.kind, Kind::Scalar) {
                    // A pointer that cannot be NULL never equals 0.
                    *null_edge = None;
                }
            }
        } else if width == Width::W64 {
            self.packet_compare(&mut taken, &mut fall, cond, &d, &s);
        }

        match (fall, taken) {
            (Some(f), Some(t)) => {
                *st = f;
                Ok(Flow::Fork {
                    next,
                    at: target,
                    other: t,
                })
            }
            (Some(f), None) => {
                *st = f;
                Ok(Flow::Next(next))
            }
            (None, Some(t)) => {
                *st = t;
                Ok(Flow::Next(target))
            }
            (None, None) => unreachable!("one edge of a jump is always possible"),
        }
    }

    /// `pkt + N` compared with `data_end` (or `data_meta + N` with `data`):
    /// the edge where the pointer is within bounds grows the readable range
    /// of every packet pointer with its id.
    fn packet_compare(
        &self,
        taken: &mut Option<State>,
        fall: &mut Option<State>,
        cond: Cond,
        d: &Reg,
        s: &Reg,
    ) {
        let is_pair = |p: &Reg, end: &Reg| {
            (p.kind == Kind::Packet && end.kind == Kind::PacketEnd)
                || (p.kind == Kind::PacketMeta
                    && end.kind == Kind::Packet
                    && end.off == 0
                    && end.s.as_const() == Some(0))
        };
        // Normalise to `pkt cond end`.
        let (p, c) = if is_pair(d, s) {
            (d, cond)
        } else if is_pair(s, d) {
            (s, swap(cond))
        } else {
            return;
        };
        // Which edge has `pkt <= end` (closed) or `pkt < end` (open).
        let (edge, open) = match c {
            Cond::Gt => (&mut *fall, false),
            Cond::Le => (&mut *taken, false),
            Cond::Lt => (&mut *taken, true),
            Cond::Ge => (&mut *fall, true),
            _ => return,
        };
        if p.off < 0 || (p.off == 0 && open) {
            return;
        }
        if p.s.umax > MAX_PACKET_OFF || p.s.umax + p.off as u64 > MAX_PACKET_OFF {
            return;
        }
        let range = p.off + open as i32;
        if let Some(st) = edge.as_mut() {
            let (kind, id) = (p.kind, p.id);
            st.for_each_reg(|r| {
                if r.kind == kind && r.id == id {
                    r.range = r.range.max(range);
                }
            });
        }
    }
}

/// Registers and spilled numbers of the current frame linked (same id)
/// to the compared numbers, and whether links reach other frames.
fn linked(st: &State, compared: &[Reg]) -> (u16, u64, bool) {
    let ids: Vec<u32> = compared
        .iter()
        .filter(|r| r.is_scalar() && r.id != 0)
        .map(|r| r.id)
        .collect();
    if ids.is_empty() {
        return (0, 0, false);
    }
    let top = st.frames.len() - 1;
    let (mut regs, mut slots, mut far) = (0u16, 0u64, false);
    for (f, frame) in st.frames.iter().enumerate() {
        for (r, reg) in frame.regs.iter().enumerate() {
            if reg.is_scalar() && ids.contains(&reg.id) {
                if f == top {
                    regs |= 1 << r;
                } else {
                    far = true;
                }
            }
        }
        for (i, slot) in frame.stack.iter().enumerate() {
            if slot.bytes.contains(&crate::state::Byte::Spill)
                && slot.spill.is_scalar()
                && ids.contains(&slot.spill.id)
            {
                if f == top && i < 64 {
                    slots |= 1 << i;
                } else {
                    far = true;
                }
            }
        }
    }
    (regs, slots, far)
}

/// The largest packet offset the kernel tracks (`MAX_PACKET_OFF`).
const MAX_PACKET_OFF: u64 = 0xffff;

/// Applies an edge's refinement, or drops the edge when impossible.
fn apply(
    edge: &mut Option<State>,
    refined: Option<(Scalar, Scalar)>,
    dst: u8,
    src: Option<u8>,
    d: &Reg,
    s: &Reg,
) {
    let Some(st) = edge.as_mut() else { return };
    let Some((a, b)) = refined else {
        *edge = None;
        return;
    };
    set_scalar(st, dst, d, a);
    if let Some(r) = src {
        set_scalar(st, r, s, b);
    }
}

/// Gives register `r` (and every register linked to it) its narrowed value.
fn set_scalar(st: &mut State, r: u8, before: &Reg, value: Scalar) {
    st.reg_mut(r).s = value;
    if before.id == 0 {
        return;
    }
    let (id, off) = (before.id, before.off as i64);
    st.for_each_reg(|reg| {
        if reg.kind == Kind::Scalar && reg.id == id {
            let delta = reg.off as i64 - off;
            reg.s = if delta == 0 {
                value
            } else {
                value.alu(Op::Add, &Scalar::konst(delta as u64), Bits::B64)
            };
        }
    });
}

/// After `p == NULL`: on the NULL edge every copy of `p` is the number 0
/// (and a reference it held is gone); on the other, a valid pointer.
/// Values of maps with a spin lock (`locked`) keep their id, which names
/// the lock.
fn mark_null(st: &mut State, p: &Reg, preg: u8, is_null: bool, locked: &dyn Fn(MapId) -> bool) {
    let id = p.id;
    if id == 0 {
        let r = st.reg_mut(preg);
        if is_null {
            *r = Reg::konst(0);
        } else {
            r.kind = r.kind.non_null();
        }
        return;
    }
    st.for_each_reg(|r| {
        if r.id == id && r.kind.maybe_null() {
            if is_null {
                *r = Reg::konst(0);
            } else {
                r.kind = r.kind.non_null();
                // Checked map values need their id no more; without it,
                // states from different lookups can prune each other (as
                // in the kernel). References keep theirs.
                match r.kind {
                    Kind::MapValue(m) if locked(m) => {}
                    Kind::MapValue(_) | Kind::MapPtr(_) => r.id = 0,
                    _ => {}
                }
            }
        }
    });
    if is_null && p.ref_id != 0 {
        st.refs.retain(|h| h.id != p.ref_id);
    }
}
