//! Proptest strategies that produce every valid instruction form (feature
//! `proptest`), for property tests here and in the crates built on this one.

use crate::*;
use proptest::prelude::*;

pub fn reg() -> impl Strategy<Value = Reg> {
    (0u8..=10).prop_map(|n| Reg::new(n).unwrap())
}

fn width() -> impl Strategy<Value = Width> {
    prop_oneof![Just(Width::W32), Just(Width::W64)]
}

fn operand() -> impl Strategy<Value = Operand> {
    prop_oneof![
        reg().prop_map(Operand::Reg),
        any::<i32>().prop_map(Operand::Imm)
    ]
}

fn size() -> impl Strategy<Value = Size> {
    prop::sample::select(Size::ALL.to_vec())
}

fn alu() -> impl Strategy<Value = Insn> {
    (
        width(),
        prop::sample::select(AluOp::ALL.to_vec()),
        reg(),
        operand(),
        reg(),
    )
        .prop_map(|(width, op, dst, src, src_reg)| {
            let (width, src) = match op {
                AluOp::MovSx32 => (Width::W64, Operand::Reg(src_reg)),
                AluOp::MovSx8 | AluOp::MovSx16 => (width, Operand::Reg(src_reg)),
                _ => (width, src),
            };
            Insn::Alu {
                width,
                op,
                dst,
                src,
            }
        })
}

fn lddw() -> impl Strategy<Value = Lddw> {
    prop_oneof![
        any::<u64>().prop_map(Lddw::Imm),
        any::<i32>().prop_map(Lddw::MapFd),
        (any::<i32>(), any::<i32>()).prop_map(|(fd, off)| Lddw::MapValue { fd, off }),
        (any::<i32>(), any::<i32>()).prop_map(|(id, btf_fd)| Lddw::BtfId { id, btf_fd }),
        any::<i32>().prop_map(Lddw::Func),
        any::<i32>().prop_map(Lddw::MapIdx),
        (any::<i32>(), any::<i32>()).prop_map(|(idx, off)| Lddw::MapIdxValue { idx, off }),
    ]
}

fn call() -> impl Strategy<Value = Insn> {
    prop_oneof![
        any::<i32>().prop_map(|id| Insn::Call(CallTarget::Helper(id))),
        any::<i32>().prop_map(|off| Insn::Call(CallTarget::Local(off))),
        (any::<i32>(), any::<i16>())
            .prop_map(|(btf_id, btf_fd_idx)| Insn::Call(CallTarget::Kfunc { btf_id, btf_fd_idx })),
        reg().prop_map(|reg| Insn::Callx { reg }),
        Just(Insn::Exit),
    ]
}

fn memory() -> impl Strategy<Value = Insn> {
    prop_oneof![
        (size(), any::<bool>(), reg(), reg(), any::<i16>()).prop_map(
            |(size, signed, dst, src, off)| {
                Insn::Load {
                    size,
                    signed: signed && size != Size::DW,
                    dst,
                    src,
                    off,
                }
            }
        ),
        (size(), reg(), any::<i16>(), operand()).prop_map(|(size, dst, off, src)| Insn::Store {
            size,
            dst,
            off,
            src
        }),
        (
            any::<bool>(),
            prop::sample::select(AtomicOp::ALL.to_vec()),
            any::<bool>(),
            reg(),
            reg(),
            any::<i16>()
        )
            .prop_map(|(wide, op, fetch, dst, src, off)| Insn::Atomic {
                size: if wide { Size::DW } else { Size::W },
                op,
                fetch: fetch || op.always_fetches(),
                dst,
                src,
                off,
            }),
        (
            prop::sample::select(vec![Size::B, Size::H, Size::W]),
            any::<i32>()
        )
            .prop_map(|(size, imm)| Insn::LdAbs { size, imm }),
        (
            prop::sample::select(vec![Size::B, Size::H, Size::W]),
            reg(),
            any::<i32>()
        )
            .prop_map(|(size, src, imm)| Insn::LdInd { size, src, imm }),
        (reg(), lddw()).prop_map(|(dst, value)| Insn::Lddw { dst, value }),
    ]
}

fn jump() -> impl Strategy<Value = Insn> {
    prop_oneof![
        any::<i16>().prop_map(|off| Insn::Ja { off }),
        any::<i32>().prop_map(|off| Insn::Ja32 { off }),
        (
            width(),
            prop::sample::select(Cond::ALL.to_vec()),
            reg(),
            operand(),
            any::<i16>()
        )
            .prop_map(|(width, cond, dst, src, off)| Insn::Jmp {
                width,
                cond,
                dst,
                src,
                off
            }),
    ]
}

/// Any valid instruction.
pub fn insn() -> impl Strategy<Value = Insn> {
    prop_oneof![
        alu(),
        (width(), reg()).prop_map(|(width, dst)| Insn::Neg { width, dst }),
        (
            prop::sample::select(vec![Endian::Le, Endian::Be, Endian::Swap]),
            prop::sample::select(vec![16u8, 32, 64]),
            reg()
        )
            .prop_map(|(order, bits, dst)| Insn::Endian { order, bits, dst }),
        jump(),
        call(),
        memory(),
    ]
}
