//! Arithmetic: scalar transfer functions, and the pointer arithmetic the
//! kernel allows (`adjust_ptr_min_max_vals`).

use isa::{AluOp, Endian, Operand, Width};

use crate::SafetyRule;
use crate::bounds::{Bits, Op, Scalar, ScalarN};
use crate::check::{Res, Verifier, fail};
use crate::kfmt::alu_string;
use crate::state::{Kind, Reg, State};

/// Offsets beyond this make a pointer out of bounds (`BPF_MAX_VAR_OFF`).
pub const MAX_VAR_OFF: i64 = 1 << 29;

fn bits(width: Width) -> Bits {
    match width {
        Width::W32 => Bits::B32,
        Width::W64 => Bits::B64,
    }
}

impl Verifier<'_> {
    pub fn alu(
        &mut self,
        st: &mut State,
        width: Width,
        op: AluOp,
        dst: u8,
        src: Operand,
    ) -> Res<()> {
        let src_reg = match src {
            Operand::Reg(r) => Some(self.read(st, r.number())?),
            Operand::Imm(_) => None,
        };
        self.writable(dst)?;
        if matches!(
            op,
            AluOp::Mov | AluOp::MovSx8 | AluOp::MovSx16 | AluOp::MovSx32
        ) {
            return self.mov(st, width, op, dst, src);
        }
        let d = self.read(st, dst)?;
        let width_bits = bits(width).n() as i64;
        // Constant divisors and shift amounts are checked first.
        if let Operand::Imm(imm) = src {
            if matches!(op, AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod) && imm == 0 {
                return Err(fail(
                    SafetyRule::InvalidInstruction,
                    "div by zero",
                    "the program divides by the constant 0",
                ));
            }
            if matches!(op, AluOp::Lsh | AluOp::Rsh | AluOp::Arsh)
                && !(0..width_bits).contains(&(imm as i64))
            {
                return Err(fail(
                    SafetyRule::InvalidInstruction,
                    format!("invalid shift {imm}"),
                    format!("a shift by {imm} is undefined for a {width_bits}-bit operation"),
                ));
            }
        }
        let s = match src {
            Operand::Reg(_) => src_reg.expect("read above"),
            Operand::Imm(i) => Reg::konst(match width {
                Width::W64 => i as i64 as u64,
                Width::W32 => i as u32 as u64,
            }),
        };
        if d.kind.is_pointer() || s.kind.is_pointer() {
            // The number added to a pointer decides what it may reach.
            let number = match src {
                Operand::Reg(r) if d.kind.is_pointer() && s.is_scalar() => 1u16 << r.number(),
                _ if d.is_scalar() => 1u16 << dst,
                _ => 0,
            };
            if number != 0 {
                self.demand(st, number, &[]);
            }
            let out = self.pointer_alu(width, op, dst, d, s, src_reg.is_some())?;
            *st.reg_mut(dst) = out;
            return Ok(());
        }
        let result = scalar_alu(op, &d.s, &s.s, width);
        let mut out = Reg::scalar(result);
        // `rX += K` keeps rX linked to its copies with a known delta.
        if matches!(op, AluOp::Add | AluOp::Sub)
            && width == Width::W64
            && d.id != 0
            && let Some(k) = s.as_const()
        {
            let k = k as i64;
            let delta = if op == AluOp::Add {
                k
            } else {
                k.wrapping_neg()
            };
            if let Some(off) = (d.off as i64)
                .checked_add(delta)
                .filter(|o| i32::try_from(*o).is_ok())
            {
                out.id = d.id;
                out.off = off as i32;
            }
        }
        *st.reg_mut(dst) = out;
        Ok(())
    }

    fn mov(&mut self, st: &mut State, width: Width, op: AluOp, dst: u8, src: Operand) -> Res<()> {
        let value = match src {
            Operand::Imm(i) => Reg::konst(match width {
                Width::W64 => i as i64 as u64,
                Width::W32 => i as u32 as u64,
            }),
            Operand::Reg(r) => {
                let r = r.number();
                let s = *st.reg(r);
                if s.kind.is_pointer() {
                    if op == AluOp::Mov && width == Width::W64 {
                        s
                    } else if self.opts.privileged {
                        let mut u = Scalar::unknown();
                        if width == Width::W32 {
                            u.zext32();
                        }
                        Reg::scalar(u)
                    } else {
                        return Err(fail(
                            SafetyRule::PointerArithmetic,
                            format!("R{r} partial copy of pointer"),
                            format!(
                                "r{r} holds a pointer; copying part of it would leak an address"
                            ),
                        ));
                    }
                } else {
                    match (op, width) {
                        (AluOp::Mov, Width::W64) => {
                            // Copies share an id so that a range check on
                            // one applies to the other.
                            if s.id == 0 && !s.s.is_const() {
                                let id = self.fresh_id();
                                st.reg_mut(r).id = id;
                            }
                            *st.reg(r)
                        }
                        (AluOp::Mov, Width::W32) => {
                            let mut v = Reg::scalar(s.s.truncate(4));
                            if s.id != 0 && s.off == 0 && s.s.umax <= u32::MAX as u64 {
                                v.id = s.id;
                            }
                            v
                        }
                        (AluOp::MovSx8, w) => extend(&s.s, 1, w),
                        (AluOp::MovSx16, w) => extend(&s.s, 2, w),
                        (AluOp::MovSx32, w) => extend(&s.s, 4, w),
                        _ => unreachable!("a move"),
                    }
                }
            }
        };
        *st.reg_mut(dst) = value;
        Ok(())
    }

    /// Arithmetic with a pointer operand.
    fn pointer_alu(
        &mut self,
        width: Width,
        op: AluOp,
        dst: u8,
        d: Reg,
        s: Reg,
        src_is_reg: bool,
    ) -> Res<Reg> {
        let opstr = alu_string(op);
        if d.kind.is_pointer() && s.kind.is_pointer() {
            if op == AluOp::Sub && self.opts.privileged {
                let mut u = Scalar::unknown();
                if width == Width::W32 {
                    u.zext32();
                }
                return Ok(Reg::scalar(u));
            }
            return Err(fail(
                SafetyRule::PointerArithmetic,
                format!("R{dst} pointer {opstr} pointer prohibited"),
                format!(
                    "r{dst} combines two pointers with {opstr}; only subtracting one from another is allowed (privileged)"
                ),
            ));
        }
        let (ptr, off, ptr_is_dst) = if d.kind.is_pointer() {
            (d, s, true)
        } else {
            (s, d, false)
        };
        if width == Width::W32 {
            if op == AluOp::Sub && self.opts.privileged {
                let mut u = Scalar::unknown();
                u.zext32();
                return Ok(Reg::scalar(u));
            }
            return Err(fail(
                SafetyRule::PointerArithmetic,
                format!("R{dst} 32-bit pointer arithmetic prohibited"),
                format!(
                    "r{dst} is a pointer: 32-bit arithmetic would cut it in half; use 64-bit operations on pointers"
                ),
            ));
        }
        let name = ptr.kind.name();
        if ptr.kind.maybe_null() {
            return Err(fail(
                SafetyRule::NullPointer,
                format!("R{dst} pointer arithmetic on {name} prohibited, null-check it first"),
                format!(
                    "r{dst} may be NULL: check it (`if (!p) return ...;`) before computing addresses from it"
                ),
            ));
        }
        let known = off.s.as_const();
        let allowed = match ptr.kind {
            Kind::Ctx
            | Kind::MapValue(_)
            | Kind::MapKey(_)
            | Kind::Stack(_)
            | Kind::Packet
            | Kind::PacketMeta
            | Kind::Mem { .. }
            | Kind::Func(_) => true,
            Kind::MapPtr(_) => known == Some(0) && op == AluOp::Add,
            _ => false,
        };
        if !allowed {
            return Err(fail(
                SafetyRule::PointerArithmetic,
                format!("R{dst} pointer arithmetic on {name} prohibited"),
                format!("r{dst} is a {name} pointer, which cannot be moved by arithmetic"),
            ));
        }
        sane_offset(&off, name)?;
        let _ = src_is_reg;
        let mut out = ptr;
        match op {
            AluOp::Add => match known {
                Some(k) if i32::try_from(ptr.off as i64 + k as i64).is_ok() => {
                    out.off = ptr.off + k as i64 as i32;
                }
                _ => {
                    out.s = ptr.s.alu(Op::Add, &off.s, Bits::B64);
                    if ptr.kind.is_packet() {
                        out.id = self.fresh_id();
                        out.range = 0;
                    }
                }
            },
            AluOp::Sub => {
                if !ptr_is_dst {
                    return Err(fail(
                        SafetyRule::PointerArithmetic,
                        format!("R{dst} tried to subtract pointer from scalar"),
                        format!(
                            "r{dst} = number - pointer has no meaning; subtract the number from the pointer instead"
                        ),
                    ));
                }
                if matches!(ptr.kind, Kind::Stack(_)) {
                    return Err(fail(
                        SafetyRule::PointerArithmetic,
                        format!("R{dst} subtraction from stack pointer prohibited"),
                        format!(
                            "r{dst} points into the stack; the kernel only allows adding to stack pointers (use `+= -N`)"
                        ),
                    ));
                }
                match known {
                    Some(k) if i32::try_from(ptr.off as i64 - k as i64).is_ok() => {
                        out.off = ptr.off - k as i64 as i32;
                    }
                    _ => {
                        out.s = ptr.s.alu(Op::Sub, &off.s, Bits::B64);
                        if ptr.kind.is_packet() {
                            out.id = self.fresh_id();
                            if off.s.smin < 0 {
                                out.range = 0;
                            }
                        }
                    }
                }
            }
            AluOp::And | AluOp::Or | AluOp::Xor => {
                return Err(fail(
                    SafetyRule::PointerArithmetic,
                    format!("R{dst} bitwise operator {opstr} on pointer prohibited"),
                    format!("r{dst} is a pointer; bitwise operations on pointers are not allowed"),
                ));
            }
            _ => {
                return Err(fail(
                    SafetyRule::PointerArithmetic,
                    format!("R{dst} pointer arithmetic with {opstr} operator prohibited"),
                    format!("r{dst} is a pointer; only + and - are allowed on pointers"),
                ));
            }
        }
        if (out.off as i64).abs() >= MAX_VAR_OFF {
            return Err(out_of_bounds(
                format!("{name} pointer offset {} is not allowed", out.off),
                name,
                dst,
            ));
        }
        sane_offset(&out, name)?;
        Ok(out)
    }

    pub fn neg(&mut self, st: &mut State, width: Width, dst: u8) -> Res<()> {
        let d = self.read(st, dst)?;
        self.writable(dst)?;
        let out = if d.kind.is_pointer() {
            self.pointer_to_scalar(dst, width)?
        } else {
            Reg::scalar(Scalar::konst(0).alu(Op::Sub, &d.s, bits(width)))
        };
        *st.reg_mut(dst) = out;
        Ok(())
    }

    pub fn endian(&mut self, st: &mut State, order: Endian, bit_count: u8, dst: u8) -> Res<()> {
        let d = self.read(st, dst)?;
        self.writable(dst)?;
        let bytes = bit_count as u32 / 8;
        let out = if d.kind.is_pointer() {
            self.pointer_to_scalar(dst, Width::W64)?
        } else {
            let s = match order {
                // Little endian on a little-endian host: a truncation.
                Endian::Le => d.s.truncate(bytes),
                Endian::Be | Endian::Swap => {
                    let mut s = Scalar::unknown();
                    s.var = d.s.var.swap_bytes(bytes);
                    s.sync();
                    s
                }
            };
            Reg::scalar(s)
        };
        *st.reg_mut(dst) = out;
        Ok(())
    }

    /// A pointer turned into a number by an operation only privileged
    /// programs may do.
    fn pointer_to_scalar(&self, dst: u8, width: Width) -> Res<Reg> {
        if !self.opts.privileged {
            return Err(fail(
                SafetyRule::PointerArithmetic,
                format!("R{dst} pointer arithmetic prohibited"),
                format!("r{dst} holds a pointer; this operation would leak its address"),
            ));
        }
        let mut u = Scalar::unknown();
        if width == Width::W32 {
            u.zext32();
        }
        Ok(Reg::scalar(u))
    }
}

fn out_of_bounds(kernel: String, name: &str, dst: u8) -> crate::check::Fail {
    fail(
        SafetyRule::PointerArithmetic,
        kernel,
        format!(
            "the {name} pointer in r{dst} would move too far (2^29 bytes or more, or without a lower bound): bound the offset first"
        ),
    )
}

/// The kernel's `check_reg_sane_offset`: offsets (fixed, or the smallest
/// variable one) stay within 2^29 bytes and have a lower bound.
fn sane_offset(r: &Reg, name: &str) -> Res<()> {
    let fail_with = |k: String| Err(out_of_bounds(k, name, 0));
    if let Some(v) = r.s.as_const() {
        let v = v as i64;
        if r.is_scalar() && !(-MAX_VAR_OFF + 1..MAX_VAR_OFF).contains(&v) {
            return fail_with(format!(
                "math between {name} pointer and {v} is not allowed"
            ));
        }
    }
    if r.s.smin == i64::MIN {
        return fail_with(format!(
            "math between {name} pointer and register with unbounded min value is not allowed"
        ));
    }
    if r.s.smin >= MAX_VAR_OFF || r.s.smin <= -MAX_VAR_OFF {
        return fail_with(format!(
            "value {} makes {name} pointer be out of bounds",
            r.s.smin
        ));
    }
    Ok(())
}

fn extend(s: &Scalar, bytes: u32, width: Width) -> Reg {
    let v = s.sign_extend(bytes);
    Reg::scalar(match width {
        Width::W64 => v,
        Width::W32 => v.truncate(4),
    })
}

/// `d op s` on scalars of width `width` (`W32`: the low half of `N` bits).
pub fn scalar_alu<const N: u32>(
    op: AluOp,
    d: &ScalarN<N>,
    s: &ScalarN<N>,
    width: Width,
) -> ScalarN<N> {
    let b = bits(width);
    let n = b.of(N) as u64;
    let shift = |s: &ScalarN<N>| s.as_const().filter(|&k| k < n).map(|k| k as u32);
    let r = match op {
        AluOp::Add => Some(d.alu(Op::Add, s, b)),
        AluOp::Sub => Some(d.alu(Op::Sub, s, b)),
        AluOp::Mul => Some(d.alu(Op::Mul, s, b)),
        AluOp::And => Some(d.alu(Op::And, s, b)),
        AluOp::Or => Some(d.alu(Op::Or, s, b)),
        AluOp::Xor => Some(d.alu(Op::Xor, s, b)),
        AluOp::Lsh => shift(s).map(|k| d.alu(Op::Lsh(k), s, b)),
        AluOp::Rsh => shift(s).map(|k| d.alu(Op::Rsh(k), s, b)),
        AluOp::Arsh => shift(s).map(|k| d.alu(Op::Arsh(k), s, b)),
        // Division and modulo leave an unknown number, as in the kernel
        // (6.18 tracks no range through them, even of constants).
        _ => None,
    };
    let mut out = r.unwrap_or_else(ScalarN::unknown);
    if width == Width::W32 {
        out.zext32();
    }
    out
}
