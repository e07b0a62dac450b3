//! The typed form of an eBPF instruction.
//!
//! Every value of [`Insn`] has exactly one encoding and every valid encoding
//! decodes to exactly one value, so `decode` and `encode` are inverses.

use crate::Reg;

/// 32-bit (ALU, JMP32) or 64-bit (ALU64, JMP) operation.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Width {
    W32,
    W64,
}

/// The second operand of arithmetic, jump and store instructions.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Operand {
    Reg(Reg),
    Imm(i32),
}

/// Binary arithmetic operations, including the signed and sign-extending
/// variants that RFC 9669 encodes in the offset field.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Div,
    SDiv,
    Or,
    And,
    Lsh,
    Rsh,
    Mod,
    SMod,
    Xor,
    Mov,
    /// `movsx`: move the low 8 bits sign-extended (register source only).
    MovSx8,
    /// `movsx`: move the low 16 bits sign-extended (register source only).
    MovSx16,
    /// `movsx`: move the low 32 bits sign-extended (ALU64, register source only).
    MovSx32,
    Arsh,
}

impl AluOp {
    pub const ALL: [AluOp; 17] = [
        AluOp::Add,
        AluOp::Sub,
        AluOp::Mul,
        AluOp::Div,
        AluOp::SDiv,
        AluOp::Or,
        AluOp::And,
        AluOp::Lsh,
        AluOp::Rsh,
        AluOp::Mod,
        AluOp::SMod,
        AluOp::Xor,
        AluOp::Mov,
        AluOp::MovSx8,
        AluOp::MovSx16,
        AluOp::MovSx32,
        AluOp::Arsh,
    ];

    /// Mnemonic without the width suffix.
    pub fn mnemonic(self) -> &'static str {
        match self {
            AluOp::Add => "add",
            AluOp::Sub => "sub",
            AluOp::Mul => "mul",
            AluOp::Div => "div",
            AluOp::SDiv => "sdiv",
            AluOp::Or => "or",
            AluOp::And => "and",
            AluOp::Lsh => "lsh",
            AluOp::Rsh => "rsh",
            AluOp::Mod => "mod",
            AluOp::SMod => "smod",
            AluOp::Xor => "xor",
            AluOp::Mov => "mov",
            AluOp::MovSx8 => "movsx8",
            AluOp::MovSx16 => "movsx16",
            AluOp::MovSx32 => "movsx32",
            AluOp::Arsh => "arsh",
        }
    }

    /// The sign-extending moves take a register source only.
    pub fn is_movsx(self) -> bool {
        matches!(self, AluOp::MovSx8 | AluOp::MovSx16 | AluOp::MovSx32)
    }
}

/// Byte-order operations (`END` opcode).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Endian {
    /// Convert to little endian (ALU class, source flag clear).
    Le,
    /// Convert to big endian (ALU class, source flag set).
    Be,
    /// Unconditional byte swap (ALU64 class), `bswap` in RFC 9669.
    Swap,
}

/// Conditions of conditional jumps.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Cond {
    Eq,
    Gt,
    Ge,
    Set,
    Ne,
    Sgt,
    Sge,
    Lt,
    Le,
    Slt,
    Sle,
}

impl Cond {
    pub const ALL: [Cond; 11] = [
        Cond::Eq,
        Cond::Gt,
        Cond::Ge,
        Cond::Set,
        Cond::Ne,
        Cond::Sgt,
        Cond::Sge,
        Cond::Lt,
        Cond::Le,
        Cond::Slt,
        Cond::Sle,
    ];

    pub fn mnemonic(self) -> &'static str {
        match self {
            Cond::Eq => "jeq",
            Cond::Gt => "jgt",
            Cond::Ge => "jge",
            Cond::Set => "jset",
            Cond::Ne => "jne",
            Cond::Sgt => "jsgt",
            Cond::Sge => "jsge",
            Cond::Lt => "jlt",
            Cond::Le => "jle",
            Cond::Slt => "jslt",
            Cond::Sle => "jsle",
        }
    }
}

/// Access size of loads and stores.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Size {
    B,
    H,
    W,
    DW,
}

impl Size {
    pub const ALL: [Size; 4] = [Size::B, Size::H, Size::W, Size::DW];

    pub const fn bytes(self) -> usize {
        match self {
            Size::B => 1,
            Size::H => 2,
            Size::W => 4,
            Size::DW => 8,
        }
    }

    pub fn suffix(self) -> &'static str {
        match self {
            Size::B => "b",
            Size::H => "h",
            Size::W => "w",
            Size::DW => "dw",
        }
    }
}

/// Read-modify-write operations of atomic instructions.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum AtomicOp {
    Add,
    Or,
    And,
    Xor,
    /// Exchange: always returns the old value.
    Xchg,
    /// Compare with r0 and exchange: always returns the old value in r0.
    CmpXchg,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 6] = [
        AtomicOp::Add,
        AtomicOp::Or,
        AtomicOp::And,
        AtomicOp::Xor,
        AtomicOp::Xchg,
        AtomicOp::CmpXchg,
    ];

    pub fn mnemonic(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Or => "or",
            AtomicOp::And => "and",
            AtomicOp::Xor => "xor",
            AtomicOp::Xchg => "xchg",
            AtomicOp::CmpXchg => "cmpxchg",
        }
    }

    /// Exchange operations fetch by definition; the others fetch on request.
    pub fn always_fetches(self) -> bool {
        matches!(self, AtomicOp::Xchg | AtomicOp::CmpXchg)
    }
}

/// What a 64-bit immediate load (`lddw`) loads.
///
/// Only [`Lddw::Imm`] is a plain constant: the others are references that a
/// loader resolves (libbpf conventions, Linux `BPF_PSEUDO_*`).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Lddw {
    /// A 64-bit constant.
    Imm(u64),
    /// A map, by file descriptor.
    MapFd(i32),
    /// The address of a map value: map fd and byte offset into the value.
    MapValue { fd: i32, off: i32 },
    /// A kernel variable by BTF id; `btf_fd` 0 means vmlinux.
    BtfId { id: i32, btf_fd: i32 },
    /// The address of a BPF function, relative to the next instruction.
    Func(i32),
    /// A map, by index into the map array given at load time.
    MapIdx(i32),
    /// The address of a value of an indexed map.
    MapIdxValue { idx: i32, off: i32 },
}

/// The target of a `call` with an immediate.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum CallTarget {
    /// A helper function by its static id.
    Helper(i32),
    /// A BPF function, relative to the next instruction.
    Local(i32),
    /// A kernel function by BTF id; `btf_fd_idx` selects module BTF (0 = vmlinux).
    Kfunc { btf_id: i32, btf_fd_idx: i16 },
}

/// One eBPF instruction (one slot, or two for `lddw`).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Insn {
    /// `dst = dst op src` (for `mov`: `dst = src`).
    Alu {
        width: Width,
        op: AluOp,
        dst: Reg,
        src: Operand,
    },
    /// `dst = -dst`.
    Neg {
        width: Width,
        dst: Reg,
    },
    /// Byte-order conversion of the low `bits` (16, 32 or 64) of `dst`.
    Endian {
        order: Endian,
        bits: u8,
        dst: Reg,
    },
    /// Unconditional jump by a 16-bit offset.
    Ja {
        off: i16,
    },
    /// Unconditional jump by a 32-bit offset (`gotol`, JMP32 class).
    Ja32 {
        off: i32,
    },
    /// Conditional jump.
    Jmp {
        width: Width,
        cond: Cond,
        dst: Reg,
        src: Operand,
        off: i16,
    },
    Call(CallTarget),
    /// Call of the helper whose id is in a register (LLVM's `callx`; not in
    /// RFC 9669 and rejected by the Linux kernel).
    Callx {
        reg: Reg,
    },
    Exit,
    /// 64-bit immediate load: two slots.
    Lddw {
        dst: Reg,
        value: Lddw,
    },
    /// `dst = *(size *)(src + off)`, optionally sign-extending (MEMSX).
    Load {
        size: Size,
        signed: bool,
        dst: Reg,
        src: Reg,
        off: i16,
    },
    /// `*(size *)(dst + off) = src` (ST with an immediate, STX with a register).
    Store {
        size: Size,
        dst: Reg,
        off: i16,
        src: Operand,
    },
    /// Atomic read-modify-write of `*(size *)(dst + off)` with `src`.
    Atomic {
        size: Size,
        op: AtomicOp,
        fetch: bool,
        dst: Reg,
        src: Reg,
        off: i16,
    },
    /// Legacy packet load: `r0 = ntoh(*(size *)(skb->data + imm))`.
    LdAbs {
        size: Size,
        imm: i32,
    },
    /// Legacy packet load: `r0 = ntoh(*(size *)(skb->data + src + imm))`.
    LdInd {
        size: Size,
        src: Reg,
        imm: i32,
    },
}

impl Insn {
    /// Number of 8-byte slots the instruction occupies.
    pub fn slots(&self) -> usize {
        match self {
            Insn::Lddw { .. } => 2,
            _ => 1,
        }
    }

    /// Relative offset of a jump or local call, counted in slots from the
    /// next instruction.
    pub fn branch_offset(&self) -> Option<i64> {
        match *self {
            Insn::Ja { off } | Insn::Jmp { off, .. } => Some(off.into()),
            Insn::Ja32 { off } | Insn::Call(CallTarget::Local(off)) => Some(off.into()),
            Insn::Lddw {
                value: Lddw::Func(off),
                ..
            } => Some(off.into()),
            _ => None,
        }
    }

    /// The same instruction branching `off` slots from the next one, or
    /// `None` if it does not branch or `off` does not fit its field (16 bits
    /// for `ja` and conditional jumps, 32 for `ja32`, local calls and `lddw`
    /// function addresses).
    pub fn with_branch_offset(&self, off: i64) -> Option<Insn> {
        let off16 = i16::try_from(off).ok();
        let off32 = i32::try_from(off).ok();
        Some(match *self {
            Insn::Ja { .. } => Insn::Ja { off: off16? },
            Insn::Jmp {
                width,
                cond,
                dst,
                src,
                ..
            } => Insn::Jmp {
                width,
                cond,
                dst,
                src,
                off: off16?,
            },
            Insn::Ja32 { .. } => Insn::Ja32 { off: off32? },
            Insn::Call(CallTarget::Local(_)) => Insn::Call(CallTarget::Local(off32?)),
            Insn::Lddw {
                dst,
                value: Lddw::Func(_),
            } => Insn::Lddw {
                dst,
                value: Lddw::Func(off32?),
            },
            _ => return None,
        })
    }

    /// Whether execution never continues with the next slot.
    pub fn is_terminator(&self) -> bool {
        matches!(self, Insn::Exit | Insn::Ja { .. } | Insn::Ja32 { .. })
    }
}

/// The raw fields of one 8-byte slot, in the kernel's `struct bpf_insn` order.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct RawInsn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl RawInsn {
    /// Little-endian slot bytes (the byte order of eBPF objects on x86 and
    /// most other hosts).
    pub fn from_bytes(b: [u8; 8]) -> RawInsn {
        RawInsn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    pub fn to_bytes(self) -> [u8; 8] {
        let off = self.off.to_le_bytes();
        let imm = self.imm.to_le_bytes();
        [
            self.code,
            (self.dst & 0x0f) | (self.src << 4),
            off[0],
            off[1],
            imm[0],
            imm[1],
            imm[2],
            imm[3],
        ]
    }
}

/// Pairs each instruction with its slot index (`lddw` takes two slots).
pub fn with_pcs(insns: &[Insn]) -> impl Iterator<Item = (usize, &Insn)> {
    insns.iter().scan(0usize, |pc, insn| {
        let here = *pc;
        *pc += insn.slots();
        Some((here, insn))
    })
}

/// Total number of slots of a program.
pub fn slot_count(insns: &[Insn]) -> usize {
    insns.iter().map(Insn::slots).sum()
}
