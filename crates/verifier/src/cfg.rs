//! Control flow: subprograms, jump and call targets, the end of every
//! subprogram, reachability and the call graph, with the kernel's rules
//! and error texts (`jump out of range`, `unreachable insn`, ...).
//!
//! Positions are slots (an `lddw` takes two), as in the kernel's messages.

use isa::{CallTarget, Insn, Lddw};

/// Frames a call chain may hold, the entry's included (`MAX_CALL_FRAMES`).
pub const MAX_CALL_FRAMES: usize = 8;

/// Why the control flow is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CfgError {
    #[error("the program is empty")]
    Empty,
    #[error("jump out of range from insn {from} to {to}")]
    JumpOutOfRange { from: usize, to: i64 },
    #[error("jump from insn {from} into the middle of the lddw at insn {}", to - 1)]
    JumpIntoLddw { from: usize, to: usize },
    #[error("call to invalid destination (insn {from} calls insn {to})")]
    CallOutOfRange { from: usize, to: i64 },
    #[error(
        "last insn {insn} of the function at insn {start} is not an exit or jmp (it falls off the end)"
    )]
    FallsOffEnd { start: usize, insn: usize },
    #[error("unreachable insn {insn}")]
    Unreachable { insn: usize },
    #[error("recursive call: {}", chain.iter().map(|s| format!("insn {s}")).collect::<Vec<_>>().join(" -> "))]
    Recursion { chain: Vec<usize> },
    #[error("the call stack of {frames} frames is too deep (at most {MAX_CALL_FRAMES}): {}", chain.iter().map(|s| format!("insn {s}")).collect::<Vec<_>>().join(" -> "))]
    TooDeep { frames: usize, chain: Vec<usize> },
    #[error("indirect call (callx) at insn {insn}: the kernel has no such instruction")]
    Callx { insn: usize },
}

/// One function of the program: `start..end` in slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subprog {
    pub start: usize,
    pub end: usize,
    /// Indexes (into [`Cfg::subprogs`]) of the functions it calls.
    pub calls: Vec<usize>,
}

/// The checked control flow of a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cfg {
    /// Slot of each instruction.
    pub slot_of: Vec<usize>,
    pub slots: usize,
    /// Functions by start slot; the entry first.
    pub subprogs: Vec<Subprog>,
    /// Slots that are the target of a backward jump (loop heads).
    pub loop_heads: Vec<usize>,
    /// The deepest call chain, in frames.
    pub max_frames: usize,
}

/// The slot a relative offset from the instruction at `slot` reaches.
fn target(slot: usize, off: i64) -> i64 {
    slot as i64 + 1 + off
}

impl Cfg {
    /// Checks `insns` (one program with its subprograms, as loaded).
    pub fn build(insns: &[Insn]) -> Result<Cfg, CfgError> {
        if insns.is_empty() {
            return Err(CfgError::Empty);
        }
        let mut slot_of = Vec::with_capacity(insns.len());
        let mut slots = 0;
        for i in insns {
            slot_of.push(slots);
            slots += i.slots();
        }
        // Which slots start an instruction (the second half of an lddw
        // does not), and which instruction starts at a slot.
        let mut insn_at = vec![None; slots];
        for (i, &s) in slot_of.iter().enumerate() {
            insn_at[s] = Some(i);
        }
        let valid = |t: i64| t >= 0 && (t as usize) < slots && insn_at[t as usize].is_some();

        // Functions: the entry, every local call's target and every
        // function whose address is taken (a callback: `lddw rN, func`).
        let mut starts = vec![0usize];
        for (i, insn) in insns.iter().enumerate() {
            let s = slot_of[i];
            match insn {
                Insn::Call(CallTarget::Local(off))
                | Insn::Lddw {
                    value: Lddw::Func(off),
                    ..
                } => {
                    let t = target(s, i64::from(*off));
                    if !valid(t) {
                        return Err(CfgError::CallOutOfRange { from: s, to: t });
                    }
                    starts.push(t as usize);
                }
                Insn::Callx { .. } => return Err(CfgError::Callx { insn: s }),
                _ => {}
            }
        }
        starts.sort_unstable();
        starts.dedup();
        let end_of = |k: usize| starts.get(k + 1).copied().unwrap_or(slots);
        let func_of = |slot: usize| starts.partition_point(|&st| st <= slot) - 1;

        // Jumps stay inside their function and land on an instruction; the
        // last instruction of a function cannot fall through.
        let mut loop_heads = Vec::new();
        for (i, insn) in insns.iter().enumerate() {
            let s = slot_of[i];
            let off = match insn {
                Insn::Ja { off } | Insn::Jmp { off, .. } => i64::from(*off),
                Insn::Ja32 { off } => i64::from(*off),
                _ => continue,
            };
            let t = target(s, off);
            let f = func_of(s);
            if t < starts[f] as i64 || t >= end_of(f) as i64 {
                return Err(CfgError::JumpOutOfRange { from: s, to: t });
            }
            if !valid(t) {
                return Err(CfgError::JumpIntoLddw {
                    from: s,
                    to: t as usize,
                });
            }
            if t as usize <= s {
                loop_heads.push(t as usize);
            }
        }
        loop_heads.sort_unstable();
        loop_heads.dedup();
        for (k, &start) in starts.iter().enumerate() {
            let last_slot = end_of(k) - 1;
            let last = insn_at[last_slot]
                .or_else(|| last_slot.checked_sub(1).and_then(|s| insn_at[s]))
                .expect("every slot belongs to an instruction");
            if !matches!(
                insns[last],
                Insn::Exit | Insn::Ja { .. } | Insn::Ja32 { .. }
            ) {
                return Err(CfgError::FallsOffEnd {
                    start,
                    insn: slot_of[last],
                });
            }
        }

        // Reachability, function by function from its start.
        let mut seen = vec![false; insns.len()];
        for &start in &starts {
            let mut stack = vec![insn_at[start].expect("checked above")];
            while let Some(i) = stack.pop() {
                if std::mem::replace(&mut seen[i], true) {
                    continue;
                }
                let s = slot_of[i];
                let next = || insn_at.get(s + insns[i].slots()).copied().flatten();
                match insns[i] {
                    Insn::Exit => {}
                    Insn::Ja { off } => stack.extend(insn_at[target(s, i64::from(off)) as usize]),
                    Insn::Ja32 { off } => stack.extend(insn_at[target(s, i64::from(off)) as usize]),
                    Insn::Jmp { off, .. } => {
                        stack.extend(insn_at[target(s, i64::from(off)) as usize]);
                        stack.extend(next());
                    }
                    _ => stack.extend(next()),
                }
            }
        }
        if let Some(i) = seen.iter().position(|&v| !v) {
            return Err(CfgError::Unreachable { insn: slot_of[i] });
        }

        // The call graph: no recursion, no chain deeper than the limit.
        let mut subprogs: Vec<Subprog> = starts
            .iter()
            .enumerate()
            .map(|(k, &start)| Subprog {
                start,
                end: end_of(k),
                calls: Vec::new(),
            })
            .collect();
        for (i, insn) in insns.iter().enumerate() {
            // A callback runs in a frame of its own above the function
            // that passes it, like a call.
            if let Insn::Call(CallTarget::Local(off))
            | Insn::Lddw {
                value: Lddw::Func(off),
                ..
            } = insn
            {
                let s = slot_of[i];
                let callee = func_of(target(s, i64::from(*off)) as usize);
                let caller = func_of(s);
                if !subprogs[caller].calls.contains(&callee) {
                    subprogs[caller].calls.push(callee);
                }
            }
        }
        let max_frames = deepest(&subprogs, 0, &mut vec![0])?;
        Ok(Cfg {
            slot_of,
            slots,
            subprogs,
            loop_heads,
            max_frames,
        })
    }
}

/// The most frames a chain from `chain`'s last function reaches.
fn deepest(subprogs: &[Subprog], f: usize, chain: &mut Vec<usize>) -> Result<usize, CfgError> {
    if chain.len() > MAX_CALL_FRAMES {
        return Err(CfgError::TooDeep {
            frames: chain.len(),
            chain: chain.iter().map(|&k| subprogs[k].start).collect(),
        });
    }
    let mut most = chain.len();
    for &callee in &subprogs[f].calls {
        if chain.contains(&callee) {
            let mut c: Vec<usize> = chain.iter().map(|&k| subprogs[k].start).collect();
            c.push(subprogs[callee].start);
            return Err(CfgError::Recursion { chain: c });
        }
        chain.push(callee);
        most = most.max(deepest(subprogs, callee, chain)?);
        chain.pop();
    }
    Ok(most)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Result<Cfg, CfgError> {
        Cfg::build(&isa::assemble(text).unwrap())
    }

    #[test]
    fn a_straight_program_and_a_loop_pass() {
        let c = cfg("mov %r0, 0\nexit").unwrap();
        assert_eq!((c.slots, c.subprogs.len(), c.max_frames), (2, 1, 1));
        let c = cfg("mov %r0, 10\nloop:\nsub %r0, 1\njne %r0, 0, loop\nexit").unwrap();
        assert_eq!(c.loop_heads, vec![1]);
    }

    #[test]
    fn slots_count_lddw_twice() {
        let c = cfg("lddw %r0, 0x100000000\njeq %r0, 0, +0\nexit").unwrap();
        assert_eq!(c.slot_of, vec![0, 2, 3]);
        assert_eq!(c.slots, 4);
    }

    #[test]
    fn jumps_outside_the_program_or_into_lddw_are_refused() {
        assert_eq!(
            cfg("ja +5\nexit"),
            Err(CfgError::JumpOutOfRange { from: 0, to: 6 })
        );
        assert_eq!(
            cfg("ja -2\nexit"),
            Err(CfgError::JumpOutOfRange { from: 0, to: -1 })
        );
        assert_eq!(
            cfg("jeq %r1, 0, +1\nlddw %r0, 0x100000000\nexit"),
            Err(CfgError::JumpIntoLddw { from: 0, to: 2 })
        );
    }

    #[test]
    fn falling_off_the_end_is_refused() {
        assert_eq!(
            cfg("mov %r0, 0"),
            Err(CfgError::FallsOffEnd { start: 0, insn: 0 })
        );
        // A function that ends in a conditional jump falls through too.
        let e = cfg("call local f\nexit\nf:\nmov %r0, 1\njeq %r0, 0, -2").unwrap_err();
        assert_eq!(e, CfgError::FallsOffEnd { start: 2, insn: 3 });
    }

    #[test]
    fn unreachable_code_is_refused() {
        assert_eq!(
            cfg("mov %r0, 0\nexit\nmov %r0, 1\nexit"),
            Err(CfgError::Unreachable { insn: 2 })
        );
        assert!(cfg("mov %r0, 0\nja +1\nmov %r0, 1\nexit").is_err());
    }

    #[test]
    fn functions_are_found_and_jumps_stay_inside_them() {
        let c = cfg("call local f\nexit\nf:\nmov %r0, 1\nexit").unwrap();
        assert_eq!(c.subprogs.len(), 2);
        assert_eq!(c.subprogs[0].calls, vec![1]);
        assert_eq!(c.max_frames, 2);
        // Jumping from the entry into f's body crosses a function boundary.
        assert!(matches!(
            cfg("ja +2\ncall local f\nexit\nf:\nmov %r0, 1\nexit"),
            Err(CfgError::JumpOutOfRange { from: 0, to: 3 })
        ));
        assert_eq!(
            cfg("call local +9\nexit"),
            Err(CfgError::CallOutOfRange { from: 0, to: 10 })
        );
    }

    #[test]
    fn recursion_and_deep_chains_are_refused() {
        let e = cfg("call local f\nexit\nf:\ncall local f\nexit").unwrap_err();
        assert_eq!(
            e,
            CfgError::Recursion {
                chain: vec![0, 2, 2]
            }
        );
        // A chain of nine frames: the entry and f1..f8.
        let mut text = String::from("call local f1\nexit\n");
        for k in 1..=8 {
            if k < 8 {
                text.push_str(&format!("f{k}:\ncall local f{}\nexit\n", k + 1));
            } else {
                text.push_str(&format!("f{k}:\nmov %r0, 0\nexit\n"));
            }
        }
        let e = cfg(&text).unwrap_err();
        assert!(matches!(e, CfgError::TooDeep { frames: 9, .. }), "{e}");
        // Eight frames are fine.
        let eight = text.replace("f7:\ncall local f8\nexit\n", "f7:\nmov %r0, 0\nexit\n");
        let eight = eight.replace("f8:\nmov %r0, 0\nexit\n", "");
        assert_eq!(cfg(&eight).unwrap().max_frames, 8);
    }

    #[test]
    fn callx_is_refused() {
        assert_eq!(cfg("callx %r1\nexit"), Err(CfgError::Callx { insn: 0 }));
    }

    #[test]
    fn calls_loops_and_lddw_together() {
        let c = cfg("lddw %r6, 0x1\ncall local f\nexit\nf:\nmov %r0, 3\nl:\nsub %r0, 1\njne %r0, 0, l\nexit")
            .unwrap();
        assert_eq!(
            c.subprogs.iter().map(|s| s.start).collect::<Vec<_>>(),
            vec![0, 4]
        );
        assert_eq!(c.loop_heads, vec![5]);
    }
}
