//! Every ALU operation the verifier tracks, on whole 4-bit scalars (tnum,
//! unsigned and signed ranges of the value and of its 2-bit low half), at
//! both widths (`W64`: the 4 bits; `W32`: the low half, zero-extended), on
//! every pair of input scalars.

use isa::{AluOp, Width};

use super::{members, scalars};
use crate::alu::scalar_alu;
use crate::width::{ones, sext};

/// What the interpreter computes on `n`-bit values: wrapping arithmetic
/// at `n` bits (`W64`) or at the low `n / 2` (`W32`, zero-extended),
/// division by zero giving 0 and modulo by zero keeping the dividend, shift
/// amounts taken modulo the width.
pub(super) fn concrete(op: AluOp, x: u64, y: u64, n: u32, width: Width) -> u64 {
    let w = match width {
        Width::W64 => n,
        Width::W32 => n / 2,
    };
    let m = ones(w);
    let (x, y) = (x & m, y & m);
    let (sx, sy) = (sext(x, w), sext(y, w));
    let r = match op {
        AluOp::Add => x + y,
        AluOp::Sub => x.wrapping_sub(y),
        AluOp::Mul => x * y,
        AluOp::Div => x.checked_div(y).unwrap_or(0),
        AluOp::Mod => x.checked_rem(y).unwrap_or(x),
        AluOp::SDiv => sx.checked_div(sy).map_or(0, |q| q as u64),
        AluOp::SMod => sx.checked_rem(sy).map_or(x, |r| r as u64),
        AluOp::And => x & y,
        AluOp::Or => x | y,
        AluOp::Xor => x ^ y,
        AluOp::Lsh => x << (y % w as u64),
        AluOp::Rsh => x >> (y % w as u64),
        AluOp::Arsh => (sx >> (y % w as u64)) as u64,
        _ => unreachable!("not an arithmetic operation: {op:?}"),
    };
    r & m
}

pub(super) const OPS: [AluOp; 13] = [
    AluOp::Add,
    AluOp::Sub,
    AluOp::Mul,
    AluOp::Div,
    AluOp::SDiv,
    AluOp::Mod,
    AluOp::SMod,
    AluOp::And,
    AluOp::Or,
    AluOp::Xor,
    AluOp::Lsh,
    AluOp::Rsh,
    AluOp::Arsh,
];

fn check(op: AluOp, width: Width) {
    let inputs = scalars();
    let sets: Vec<u16> = inputs.iter().map(members).collect();
    for (a, &ma) in inputs.iter().zip(&sets) {
        // row[y]: the results of every x of `a` with `y`.
        let mut row = [0u16; 16];
        for (y, r) in row.iter_mut().enumerate() {
            for x in (0..16).filter(|x| ma & 1 << x != 0) {
                *r |= 1 << concrete(op, x, y as u64, 4, width);
            }
        }
        for (b, &mb) in inputs.iter().zip(&sets) {
            let results = (0..16)
                .filter(|y| mb & 1 << y != 0)
                .fold(0, |acc, y| acc | row[y]);
            let got = scalar_alu(op, a, b, width);
            let lost = results & !members(&got);
            assert!(
                lost == 0,
                "{op:?} {width:?}: {a} op {b} = {got} loses the results {lost:#018b}"
            );
        }
    }
}

#[test]
fn additive_operations_are_sound_on_every_pair() {
    for op in [AluOp::Add, AluOp::Sub, AluOp::Mul] {
        check(op, Width::W64);
        check(op, Width::W32);
    }
}

#[test]
fn division_and_modulo_are_sound_on_every_pair() {
    for op in [AluOp::Div, AluOp::SDiv, AluOp::Mod, AluOp::SMod] {
        check(op, Width::W64);
        check(op, Width::W32);
    }
}

#[test]
fn bitwise_operations_and_shifts_are_sound_on_every_pair() {
    for op in &OPS[7..] {
        check(*op, Width::W64);
        check(*op, Width::W32);
    }
}
