//! The x86-64 instruction forms the JIT emits, over dynasmrt's assembler:
//! one method per form, registers by their hardware numbers. Which forms an
//! eBPF instruction becomes is `codegen.rs`'s business.

// dynasm!'s expansion converts register numbers with `.into()`.
#![allow(clippy::useless_conversion)]

use dynasmrt::x64::Assembler;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// A general-purpose register by its hardware number.
pub type R = u8;

pub const RAX: R = 0;
pub const RCX: R = 1;
pub const RDX: R = 2;
pub const RBX: R = 3;
pub const RBP: R = 5;
pub const RSI: R = 6;
pub const RDI: R = 7;
pub const R8: R = 8;
pub const R9: R = 9;
pub const R10: R = 10;
pub const R11: R = 11;
pub const R12: R = 12;
pub const R13: R = 13;
pub const R14: R = 14;
pub const R15: R = 15;

/// Operand width of an arithmetic form; 32-bit forms zero the upper half.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum W {
    D,
    Q,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Alu {
    Add,
    Sub,
    And,
    Or,
    Xor,
    Mov,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Shift {
    Shl,
    Shr,
    Sar,
}

/// Jump conditions (after `cmp a, b`: a OP b).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Cond {
    Eq,
    Ne,
    /// Unsigned >, >=, <, <=.
    Above,
    AboveEq,
    Below,
    BelowEq,
    /// Signed >, >=, <, <=.
    Greater,
    GreaterEq,
    Less,
    LessEq,
}

impl Cond {
    /// The condition that holds exactly when `self` does not.
    pub fn not(self) -> Cond {
        match self {
            Cond::Eq => Cond::Ne,
            Cond::Ne => Cond::Eq,
            Cond::Above => Cond::BelowEq,
            Cond::AboveEq => Cond::Below,
            Cond::Below => Cond::AboveEq,
            Cond::BelowEq => Cond::Above,
            Cond::Greater => Cond::LessEq,
            Cond::GreaterEq => Cond::Less,
            Cond::Less => Cond::GreaterEq,
            Cond::LessEq => Cond::Greater,
        }
    }
}

/// Memory operand sizes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Size {
    B,
    H,
    W,
    Dw,
}

pub struct Asm {
    pub ops: Assembler,
}

impl Asm {
    pub fn new() -> std::io::Result<Asm> {
        Ok(Asm {
            ops: Assembler::new()?,
        })
    }

    /// Where the next instruction goes.
    pub fn offset(&self) -> dynasmrt::AssemblyOffset {
        self.ops.offset()
    }

    pub fn label(&mut self) -> DynamicLabel {
        self.ops.new_dynamic_label()
    }

    pub fn bind(&mut self, l: DynamicLabel) {
        dynasm!(self.ops ; .arch x64 ; =>l);
    }

    pub fn alu_rr(&mut self, op: Alu, w: W, d: R, s: R) {
        match (op, w) {
            (Alu::Add, W::Q) => dynasm!(self.ops ; .arch x64 ; add Rq(d), Rq(s)),
            (Alu::Sub, W::Q) => dynasm!(self.ops ; .arch x64 ; sub Rq(d), Rq(s)),
            (Alu::And, W::Q) => dynasm!(self.ops ; .arch x64 ; and Rq(d), Rq(s)),
            (Alu::Or, W::Q) => dynasm!(self.ops ; .arch x64 ; or Rq(d), Rq(s)),
            (Alu::Xor, W::Q) => dynasm!(self.ops ; .arch x64 ; xor Rq(d), Rq(s)),
            (Alu::Mov, W::Q) => dynasm!(self.ops ; .arch x64 ; mov Rq(d), Rq(s)),
            (Alu::Add, W::D) => dynasm!(self.ops ; .arch x64 ; add Rd(d), Rd(s)),
            (Alu::Sub, W::D) => dynasm!(self.ops ; .arch x64 ; sub Rd(d), Rd(s)),
            (Alu::And, W::D) => dynasm!(self.ops ; .arch x64 ; and Rd(d), Rd(s)),
            (Alu::Or, W::D) => dynasm!(self.ops ; .arch x64 ; or Rd(d), Rd(s)),
            (Alu::Xor, W::D) => dynasm!(self.ops ; .arch x64 ; xor Rd(d), Rd(s)),
            (Alu::Mov, W::D) => dynasm!(self.ops ; .arch x64 ; mov Rd(d), Rd(s)),
        }
    }

    /// `op d, imm` with the immediate sign-extended to 64 bits (Q).
    pub fn alu_ri(&mut self, op: Alu, w: W, d: R, imm: i32) {
        match (op, w) {
            (Alu::Add, W::Q) => dynasm!(self.ops ; .arch x64 ; add Rq(d), imm),
            (Alu::Sub, W::Q) => dynasm!(self.ops ; .arch x64 ; sub Rq(d), imm),
            (Alu::And, W::Q) => dynasm!(self.ops ; .arch x64 ; and Rq(d), imm),
            (Alu::Or, W::Q) => dynasm!(self.ops ; .arch x64 ; or Rq(d), imm),
            (Alu::Xor, W::Q) => dynasm!(self.ops ; .arch x64 ; xor Rq(d), imm),
            (Alu::Mov, W::Q) => dynasm!(self.ops ; .arch x64 ; mov Rq(d), DWORD imm),
            (Alu::Add, W::D) => dynasm!(self.ops ; .arch x64 ; add Rd(d), imm),
            (Alu::Sub, W::D) => dynasm!(self.ops ; .arch x64 ; sub Rd(d), imm),
            (Alu::And, W::D) => dynasm!(self.ops ; .arch x64 ; and Rd(d), imm),
            (Alu::Or, W::D) => dynasm!(self.ops ; .arch x64 ; or Rd(d), imm),
            (Alu::Xor, W::D) => dynasm!(self.ops ; .arch x64 ; xor Rd(d), imm),
            (Alu::Mov, W::D) => dynasm!(self.ops ; .arch x64 ; mov Rd(d), imm),
        }
    }

    /// `movabs d, imm64`.
    pub fn mov_ri64(&mut self, d: R, imm: i64) {
        dynasm!(self.ops ; .arch x64 ; mov Rq(d), QWORD imm);
    }

    pub fn imul_rr(&mut self, w: W, d: R, s: R) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; imul Rq(d), Rq(s)),
            W::D => dynasm!(self.ops ; .arch x64 ; imul Rd(d), Rd(s)),
        }
    }

    pub fn imul_ri(&mut self, w: W, d: R, imm: i32) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; imul Rq(d), Rq(d), imm),
            W::D => dynasm!(self.ops ; .arch x64 ; imul Rd(d), Rd(d), imm),
        }
    }

    pub fn neg(&mut self, w: W, d: R) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; neg Rq(d)),
            W::D => dynasm!(self.ops ; .arch x64 ; neg Rd(d)),
        }
    }

    pub fn shift_ri(&mut self, op: Shift, w: W, d: R, n: i8) {
        match (op, w) {
            (Shift::Shl, W::Q) => dynasm!(self.ops ; .arch x64 ; shl Rq(d), n),
            (Shift::Shr, W::Q) => dynasm!(self.ops ; .arch x64 ; shr Rq(d), n),
            (Shift::Sar, W::Q) => dynasm!(self.ops ; .arch x64 ; sar Rq(d), n),
            (Shift::Shl, W::D) => dynasm!(self.ops ; .arch x64 ; shl Rd(d), n),
            (Shift::Shr, W::D) => dynasm!(self.ops ; .arch x64 ; shr Rd(d), n),
            (Shift::Sar, W::D) => dynasm!(self.ops ; .arch x64 ; sar Rd(d), n),
        }
    }

    /// Shift `d` by `cl`.
    pub fn shift_cl(&mut self, op: Shift, w: W, d: R) {
        match (op, w) {
            (Shift::Shl, W::Q) => dynasm!(self.ops ; .arch x64 ; shl Rq(d), cl),
            (Shift::Shr, W::Q) => dynasm!(self.ops ; .arch x64 ; shr Rq(d), cl),
            (Shift::Sar, W::Q) => dynasm!(self.ops ; .arch x64 ; sar Rq(d), cl),
            (Shift::Shl, W::D) => dynasm!(self.ops ; .arch x64 ; shl Rd(d), cl),
            (Shift::Shr, W::D) => dynasm!(self.ops ; .arch x64 ; shr Rd(d), cl),
            (Shift::Sar, W::D) => dynasm!(self.ops ; .arch x64 ; sar Rd(d), cl),
        }
    }

    /// `rdx:rax / s` (unsigned: rdx zeroed first; signed: sign-extended).
    pub fn div(&mut self, w: W, signed: bool, s: R) {
        match (w, signed) {
            (W::Q, false) => dynasm!(self.ops ; .arch x64 ; xor edx, edx ; div Rq(s)),
            (W::Q, true) => dynasm!(self.ops ; .arch x64 ; cqo ; idiv Rq(s)),
            (W::D, false) => dynasm!(self.ops ; .arch x64 ; xor edx, edx ; div Rd(s)),
            (W::D, true) => dynasm!(self.ops ; .arch x64 ; cdq ; idiv Rd(s)),
        }
    }

    /// Sign extension from 8, 16 or 32 bits into a 32- or 64-bit register.
    pub fn movsx(&mut self, w: W, from: Size, d: R, s: R) {
        match (w, from) {
            (W::Q, Size::B) => dynasm!(self.ops ; .arch x64 ; movsx Rq(d), Rb(s)),
            (W::Q, Size::H) => dynasm!(self.ops ; .arch x64 ; movsx Rq(d), Rw(s)),
            (W::Q, _) => dynasm!(self.ops ; .arch x64 ; movsxd Rq(d), Rd(s)),
            (W::D, Size::B) => dynasm!(self.ops ; .arch x64 ; movsx Rd(d), Rb(s)),
            (W::D, _) => dynasm!(self.ops ; .arch x64 ; movsx Rd(d), Rw(s)),
        }
    }

    /// Zero extension of the low 16 bits.
    pub fn movzx16(&mut self, d: R) {
        dynasm!(self.ops ; .arch x64 ; movzx Rd(d), Rw(d));
    }

    /// Swaps the two low bytes (then `movzx16` clears the rest).
    pub fn rol16_8(&mut self, d: R) {
        dynasm!(self.ops ; .arch x64 ; rol Rw(d), 8);
    }

    pub fn bswap(&mut self, w: W, d: R) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; bswap Rq(d)),
            W::D => dynasm!(self.ops ; .arch x64 ; bswap Rd(d)),
        }
    }

    /// A load into `d` from `[b + off]`, zero- or sign-extended to 64 bits.
    pub fn load(&mut self, size: Size, signed: bool, d: R, b: R, off: i32) {
        match (size, signed) {
            (Size::B, false) => dynasm!(self.ops ; .arch x64 ; movzx Rd(d), BYTE [Rq(b) + off]),
            (Size::H, false) => dynasm!(self.ops ; .arch x64 ; movzx Rd(d), WORD [Rq(b) + off]),
            (Size::W, false) => dynasm!(self.ops ; .arch x64 ; mov Rd(d), DWORD [Rq(b) + off]),
            (Size::Dw, _) => dynasm!(self.ops ; .arch x64 ; mov Rq(d), QWORD [Rq(b) + off]),
            (Size::B, true) => dynasm!(self.ops ; .arch x64 ; movsx Rq(d), BYTE [Rq(b) + off]),
            (Size::H, true) => dynasm!(self.ops ; .arch x64 ; movsx Rq(d), WORD [Rq(b) + off]),
            (Size::W, true) => dynasm!(self.ops ; .arch x64 ; movsxd Rq(d), DWORD [Rq(b) + off]),
        }
    }

    /// A store of the low `size` bytes of `s` to `[b + off]`.
    pub fn store_r(&mut self, size: Size, b: R, off: i32, s: R) {
        match size {
            Size::B => dynasm!(self.ops ; .arch x64 ; mov BYTE [Rq(b) + off], Rb(s)),
            Size::H => dynasm!(self.ops ; .arch x64 ; mov WORD [Rq(b) + off], Rw(s)),
            Size::W => dynasm!(self.ops ; .arch x64 ; mov DWORD [Rq(b) + off], Rd(s)),
            Size::Dw => dynasm!(self.ops ; .arch x64 ; mov QWORD [Rq(b) + off], Rq(s)),
        }
    }

    /// A store of an immediate (sign-extended for 8 bytes).
    pub fn store_i(&mut self, size: Size, b: R, off: i32, imm: i32) {
        match size {
            Size::B => dynasm!(self.ops ; .arch x64 ; mov BYTE [Rq(b) + off], imm as i8),
            Size::H => dynasm!(self.ops ; .arch x64 ; mov WORD [Rq(b) + off], imm as i16),
            Size::W => dynasm!(self.ops ; .arch x64 ; mov DWORD [Rq(b) + off], imm),
            Size::Dw => dynasm!(self.ops ; .arch x64 ; mov QWORD [Rq(b) + off], imm),
        }
    }

    pub fn lea(&mut self, d: R, b: R, off: i32) {
        dynasm!(self.ops ; .arch x64 ; lea Rq(d), [Rq(b) + off]);
    }

    pub fn cmp_rr(&mut self, w: W, a: R, b: R) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; cmp Rq(a), Rq(b)),
            W::D => dynasm!(self.ops ; .arch x64 ; cmp Rd(a), Rd(b)),
        }
    }

    pub fn cmp_ri(&mut self, w: W, a: R, imm: i32) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; cmp Rq(a), imm),
            W::D => dynasm!(self.ops ; .arch x64 ; cmp Rd(a), imm),
        }
    }

    pub fn test_rr(&mut self, w: W, a: R, b: R) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; test Rq(a), Rq(b)),
            W::D => dynasm!(self.ops ; .arch x64 ; test Rd(a), Rd(b)),
        }
    }

    pub fn test_ri(&mut self, w: W, a: R, imm: i32) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; test Rq(a), imm),
            W::D => dynasm!(self.ops ; .arch x64 ; test Rd(a), imm),
        }
    }

    /// Jump to `l` if the last comparison or test says `c`; `Ne` after a
    /// test is "some bit set".
    pub fn jcc(&mut self, c: Cond, l: DynamicLabel) {
        match c {
            Cond::Eq => dynasm!(self.ops ; .arch x64 ; je =>l),
            Cond::Ne => dynasm!(self.ops ; .arch x64 ; jne =>l),
            Cond::Above => dynasm!(self.ops ; .arch x64 ; ja =>l),
            Cond::AboveEq => dynasm!(self.ops ; .arch x64 ; jae =>l),
            Cond::Below => dynasm!(self.ops ; .arch x64 ; jb =>l),
            Cond::BelowEq => dynasm!(self.ops ; .arch x64 ; jbe =>l),
            Cond::Greater => dynasm!(self.ops ; .arch x64 ; jg =>l),
            Cond::GreaterEq => dynasm!(self.ops ; .arch x64 ; jge =>l),
            Cond::Less => dynasm!(self.ops ; .arch x64 ; jl =>l),
            Cond::LessEq => dynasm!(self.ops ; .arch x64 ; jle =>l),
        }
    }

    pub fn jmp(&mut self, l: DynamicLabel) {
        dynasm!(self.ops ; .arch x64 ; jmp =>l);
    }

    /// `jmp r`.
    pub fn jmp_r(&mut self, r: R) {
        dynasm!(self.ops ; .arch x64 ; jmp Rq(r));
    }

    pub fn push(&mut self, r: R) {
        dynasm!(self.ops ; .arch x64 ; push Rq(r));
    }

    pub fn pop(&mut self, r: R) {
        dynasm!(self.ops ; .arch x64 ; pop Rq(r));
    }

    /// `rsp += n` (negative: reserve).
    pub fn add_rsp(&mut self, n: i32) {
        dynasm!(self.ops ; .arch x64 ; add rsp, n);
    }

    /// Calls the function at `addr` through `r11`.
    pub fn call_abs(&mut self, addr: i64) {
        dynasm!(self.ops ; .arch x64 ; mov r11, QWORD addr ; call r11);
    }

    /// `d = [b + off]`, 64 bits.
    pub fn load_q(&mut self, d: R, b: R, off: i32) {
        self.load(Size::Dw, false, d, b, off);
    }

    /// `[b + off] = s`, 64 bits.
    pub fn store_q(&mut self, b: R, off: i32, s: R) {
        self.store_r(Size::Dw, b, off, s);
    }

    pub fn cmp_mi(&mut self, b: R, off: i32, imm: i32) {
        dynasm!(self.ops ; .arch x64 ; cmp QWORD [Rq(b) + off], imm);
    }

    /// `qword [b + off] -= imm`; the carry flag tells a borrow.
    pub fn sub_mi(&mut self, b: R, off: i32, imm: i32) {
        dynasm!(self.ops ; .arch x64 ; sub QWORD [Rq(b) + off], imm);
    }

    /// `qword [b + off] += imm`.
    pub fn add_mi(&mut self, b: R, off: i32, imm: i32) {
        dynasm!(self.ops ; .arch x64 ; add QWORD [Rq(b) + off], imm);
    }

    /// `qword [b + off] = imm` (sign-extended).
    pub fn mov_mi(&mut self, b: R, off: i32, imm: i32) {
        dynasm!(self.ops ; .arch x64 ; mov QWORD [Rq(b) + off], imm);
    }

    /// `lock <op> [b], s` for add/or/and/xor (no result).
    pub fn lock_alu_mr(&mut self, op: Alu, w: W, b: R, s: R) {
        match (op, w) {
            (Alu::Add, W::Q) => dynasm!(self.ops ; .arch x64 ; lock add QWORD [Rq(b)], Rq(s)),
            (Alu::Or, W::Q) => dynasm!(self.ops ; .arch x64 ; lock or QWORD [Rq(b)], Rq(s)),
            (Alu::And, W::Q) => dynasm!(self.ops ; .arch x64 ; lock and QWORD [Rq(b)], Rq(s)),
            (Alu::Xor, W::Q) => dynasm!(self.ops ; .arch x64 ; lock xor QWORD [Rq(b)], Rq(s)),
            (Alu::Add, W::D) => dynasm!(self.ops ; .arch x64 ; lock add DWORD [Rq(b)], Rd(s)),
            (Alu::Or, W::D) => dynasm!(self.ops ; .arch x64 ; lock or DWORD [Rq(b)], Rd(s)),
            (Alu::And, W::D) => dynasm!(self.ops ; .arch x64 ; lock and DWORD [Rq(b)], Rd(s)),
            (Alu::Xor, W::D) => dynasm!(self.ops ; .arch x64 ; lock xor DWORD [Rq(b)], Rd(s)),
            (op, _) => unreachable!("no atomic {op:?}"),
        }
    }

    /// `lock xadd [b], s`: s gets the old value.
    pub fn lock_xadd(&mut self, w: W, b: R, s: R) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; lock xadd QWORD [Rq(b)], Rq(s)),
            W::D => dynasm!(self.ops ; .arch x64 ; lock xadd DWORD [Rq(b)], Rd(s)),
        }
    }

    /// `xchg [b], s` (locked by the processor).
    pub fn xchg_mr(&mut self, w: W, b: R, s: R) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; xchg QWORD [Rq(b)], Rq(s)),
            W::D => dynasm!(self.ops ; .arch x64 ; xchg DWORD [Rq(b)], Rd(s)),
        }
    }

    /// `lock cmpxchg [b], s` (compares with and loads into rax).
    pub fn lock_cmpxchg(&mut self, w: W, b: R, s: R) {
        match w {
            W::Q => dynasm!(self.ops ; .arch x64 ; lock cmpxchg QWORD [Rq(b)], Rq(s)),
            W::D => dynasm!(self.ops ; .arch x64 ; lock cmpxchg DWORD [Rq(b)], Rd(s)),
        }
    }

    pub fn ret(&mut self) {
        dynasm!(self.ops ; .arch x64 ; ret);
    }
}
