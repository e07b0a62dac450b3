//! Field values of the 8-bit opcode (RFC 9669, section 3).
//!
//! The low three bits are the instruction class. Arithmetic and jump classes
//! put the source flag in bit 3 and the operation in the high four bits;
//! load and store classes put the access size in bits 3-4 and the mode in
//! the high three bits.

/// Instruction classes (low three bits).
pub mod class {
    pub const LD: u8 = 0x00;
    pub const LDX: u8 = 0x01;
    pub const ST: u8 = 0x02;
    pub const STX: u8 = 0x03;
    pub const ALU: u8 = 0x04;
    pub const JMP: u8 = 0x05;
    pub const JMP32: u8 = 0x06;
    pub const ALU64: u8 = 0x07;
    pub const MASK: u8 = 0x07;
}

/// Source flag of arithmetic and jump instructions (bit 3).
pub mod source {
    /// Use the 32-bit immediate as the source operand.
    pub const K: u8 = 0x00;
    /// Use the source register as the source operand.
    pub const X: u8 = 0x08;
    pub const MASK: u8 = 0x08;
}

/// Arithmetic operations (high four bits of ALU and ALU64 opcodes).
pub mod alu {
    pub const ADD: u8 = 0x00;
    pub const SUB: u8 = 0x10;
    pub const MUL: u8 = 0x20;
    pub const DIV: u8 = 0x30;
    pub const OR: u8 = 0x40;
    pub const AND: u8 = 0x50;
    pub const LSH: u8 = 0x60;
    pub const RSH: u8 = 0x70;
    pub const NEG: u8 = 0x80;
    pub const MOD: u8 = 0x90;
    pub const XOR: u8 = 0xa0;
    pub const MOV: u8 = 0xb0;
    pub const ARSH: u8 = 0xc0;
    pub const END: u8 = 0xd0;
    pub const MASK: u8 = 0xf0;
}

/// Jump operations (high four bits of JMP and JMP32 opcodes).
pub mod jmp {
    pub const JA: u8 = 0x00;
    pub const JEQ: u8 = 0x10;
    pub const JGT: u8 = 0x20;
    pub const JGE: u8 = 0x30;
    pub const JSET: u8 = 0x40;
    pub const JNE: u8 = 0x50;
    pub const JSGT: u8 = 0x60;
    pub const JSGE: u8 = 0x70;
    pub const CALL: u8 = 0x80;
    pub const EXIT: u8 = 0x90;
    pub const JLT: u8 = 0xa0;
    pub const JLE: u8 = 0xb0;
    pub const JSLT: u8 = 0xc0;
    pub const JSLE: u8 = 0xd0;
    pub const MASK: u8 = 0xf0;
}

/// Access sizes of load and store instructions (bits 3-4).
pub mod size {
    pub const W: u8 = 0x00;
    pub const H: u8 = 0x08;
    pub const B: u8 = 0x10;
    pub const DW: u8 = 0x18;
    pub const MASK: u8 = 0x18;
}

/// Modes of load and store instructions (high three bits).
pub mod mode {
    pub const IMM: u8 = 0x00;
    pub const ABS: u8 = 0x20;
    pub const IND: u8 = 0x40;
    pub const MEM: u8 = 0x60;
    pub const MEMSX: u8 = 0x80;
    pub const ATOMIC: u8 = 0xc0;
    pub const MASK: u8 = 0xe0;
}

/// Operations of atomic instructions, carried in the immediate.
pub mod atomic {
    pub const ADD: i32 = 0x00;
    pub const OR: i32 = 0x40;
    pub const AND: i32 = 0x50;
    pub const XOR: i32 = 0xa0;
    /// Set on an operation that returns the old value in the source register.
    pub const FETCH: i32 = 0x01;
    pub const XCHG: i32 = 0xe0 | FETCH;
    pub const CMPXCHG: i32 = 0xf0 | FETCH;
}

/// Source-register values that give an instruction a second meaning.
pub mod pseudo {
    /// `lddw`: the immediate is a map file descriptor.
    pub const MAP_FD: u8 = 1;
    /// `lddw`: address of a map value (fd in imm, offset in the second imm).
    pub const MAP_VALUE: u8 = 2;
    /// `lddw`: address of a kernel variable by BTF id.
    pub const BTF_ID: u8 = 3;
    /// `lddw`: address of a BPF function (relative instruction offset).
    pub const FUNC: u8 = 4;
    /// `lddw`: the immediate indexes the map array given at load time.
    pub const MAP_IDX: u8 = 5;
    /// `lddw`: address of a value of an indexed map.
    pub const MAP_IDX_VALUE: u8 = 6;
    /// `call`: a local (bpf-to-bpf) call, the immediate is a relative offset.
    pub const CALL_LOCAL: u8 = 1;
    /// `call`: a kernel function by BTF id.
    pub const CALL_KFUNC: u8 = 2;
}

/// Width of one instruction slot in bytes.
pub const INSN_SIZE: usize = 8;

/// Full opcodes that are worth naming on their own.
pub const LDDW: u8 = class::LD | mode::IMM | size::DW;
pub const CALL: u8 = class::JMP | jmp::CALL | source::K;
/// Call through a register (an LLVM extension, not in RFC 9669; the kernel rejects it).
pub const CALLX: u8 = class::JMP | jmp::CALL | source::X;
pub const EXIT: u8 = class::JMP | jmp::EXIT;
pub const JA: u8 = class::JMP | jmp::JA;
pub const JA32: u8 = class::JMP32 | jmp::JA;
