//! The interpreter's pre-decoded instruction form.
//!
//! Each eBPF slot becomes one [`Slot`] whose [`Op`] names the exact
//! operation (width, operand kind and variant folded in), so the interpreter
//! dispatches once per instruction and never re-reads encoding fields.

/// One pre-decoded slot: 16 bytes.
#[derive(Copy, Clone, Debug)]
pub struct Slot {
    pub op: Op,
    pub dst: u8,
    pub src: u8,
    /// Memory offset, or the absolute target slot of a jump or local call.
    pub off: i32,
    /// Immediate, sign-extended to 64 bits (the full value for `lddw`, the
    /// helper id for calls).
    pub imm: i64,
}

/// Every operation the interpreter knows.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Op {
    // 64-bit arithmetic.
    Add64Imm,
    Add64Reg,
    Sub64Imm,
    Sub64Reg,
    Mul64Imm,
    Mul64Reg,
    Div64Imm,
    Div64Reg,
    SDiv64Imm,
    SDiv64Reg,
    Or64Imm,
    Or64Reg,
    And64Imm,
    And64Reg,
    Lsh64Imm,
    Lsh64Reg,
    Rsh64Imm,
    Rsh64Reg,
    Mod64Imm,
    Mod64Reg,
    SMod64Imm,
    SMod64Reg,
    Xor64Imm,
    Xor64Reg,
    Mov64Imm,
    Mov64Reg,
    Arsh64Imm,
    Arsh64Reg,
    MovSx8To64,
    MovSx16To64,
    MovSx32To64,
    Neg64,
    // 32-bit arithmetic (results zero-extended).
    Add32Imm,
    Add32Reg,
    Sub32Imm,
    Sub32Reg,
    Mul32Imm,
    Mul32Reg,
    Div32Imm,
    Div32Reg,
    SDiv32Imm,
    SDiv32Reg,
    Or32Imm,
    Or32Reg,
    And32Imm,
    And32Reg,
    Lsh32Imm,
    Lsh32Reg,
    Rsh32Imm,
    Rsh32Reg,
    Mod32Imm,
    Mod32Reg,
    SMod32Imm,
    SMod32Reg,
    Xor32Imm,
    Xor32Reg,
    Mov32Imm,
    Mov32Reg,
    Arsh32Imm,
    Arsh32Reg,
    MovSx8To32,
    MovSx16To32,
    Neg32,
    // Byte order.
    Le16,
    Le32,
    Le64,
    Be16,
    Be32,
    Be64,
    Swap16,
    Swap32,
    Swap64,
    // Jumps.
    Ja,
    Jeq64Imm,
    Jeq64Reg,
    Jgt64Imm,
    Jgt64Reg,
    Jge64Imm,
    Jge64Reg,
    Jset64Imm,
    Jset64Reg,
    Jne64Imm,
    Jne64Reg,
    Jsgt64Imm,
    Jsgt64Reg,
    Jsge64Imm,
    Jsge64Reg,
    Jlt64Imm,
    Jlt64Reg,
    Jle64Imm,
    Jle64Reg,
    Jslt64Imm,
    Jslt64Reg,
    Jsle64Imm,
    Jsle64Reg,
    Jeq32Imm,
    Jeq32Reg,
    Jgt32Imm,
    Jgt32Reg,
    Jge32Imm,
    Jge32Reg,
    Jset32Imm,
    Jset32Reg,
    Jne32Imm,
    Jne32Reg,
    Jsgt32Imm,
    Jsgt32Reg,
    Jsge32Imm,
    Jsge32Reg,
    Jlt32Imm,
    Jlt32Reg,
    Jle32Imm,
    Jle32Reg,
    Jslt32Imm,
    Jslt32Reg,
    Jsle32Imm,
    Jsle32Reg,
    // Calls.
    CallHelper,
    /// `bpf_tail_call` (helper 12), handled by the VM as the kernel does.
    TailCall,
    CallLocal,
    Callx,
    Exit,
    // Loads and stores.
    Lddw,
    LdxB,
    LdxH,
    LdxW,
    LdxDW,
    LdxSB,
    LdxSH,
    LdxSW,
    StB,
    StH,
    StW,
    StDW,
    StxB,
    StxH,
    StxW,
    StxDW,
    // Atomics: `imm` carries the operation (see `isa::opcode::atomic`).
    Atomic32,
    Atomic64,
    // Legacy packet loads.
    LdAbsB,
    LdAbsH,
    LdAbsW,
    LdIndB,
    LdIndH,
    LdIndW,
    /// An instruction whose CO-RE relocation failed.
    Poisoned,
    /// Second slot of `lddw`: never executed (no branch may land on it).
    LddwHigh,
    /// Past the last instruction of a program that can run off its end.
    FellOff,
}

impl Op {
    /// Whether the operation is a conditional jump (`Jeq64Imm` to
    /// `Jsle32Reg`: one that may or may not jump).
    pub(crate) fn is_conditional_jump(self) -> bool {
        (Op::Jeq64Imm as u8..=Op::Jsle32Reg as u8).contains(&(self as u8))
    }
}
