//! Random programs: loading and running never panics, and the fast and
//! counting modes of the interpreter and of the JIT (checked, and
//! unchecked where the checked run succeeded, and its batch entry) agree
//! exactly (r0, instruction, helper and memory-access counts, error,
//! memory).

use isa::{CallTarget, Insn, Lddw, Operand, Reg};
use proptest::prelude::*;
use vm::*;

const CTX_LEN: usize = 32;

/// Nudges a random instruction towards something that loads and runs far:
/// branches land inside the program, memory operands mostly hit the stack
/// or the context, references become constants, calls name known helpers
/// or functions of the program.
fn shape(insns: Vec<Insn>, knobs: &[u16]) -> Vec<Insn> {
    let len = isa::slot_count(&insns) as i64;
    let mut pc = 0i64;
    insns
        .into_iter()
        .zip(knobs.iter().cycle())
        .map(|(insn, &k)| {
            let here = pc;
            pc += insn.slots() as i64;
            let target = i64::from(k) % len - here - 1;
            let (base, off) = if k % 2 == 0 {
                (Reg::R10, -8 * (1 + i16::try_from(k % 8).unwrap()))
            } else {
                (Reg::R1, i16::try_from(k % 16).unwrap())
            };
            let biased = k % 5 != 0;
            let is_lddw = matches!(insn, Insn::Lddw { .. });
            if let Some(branch) = insn.with_branch_offset(target).filter(|_| !is_lddw) {
                return branch;
            }
            match insn {
                // A quarter of the calls are bpf-to-bpf calls (recursion
                // included, which runs out of frames).
                Insn::Call(_) if k % 4 == 0 => Insn::Call(CallTarget::Local(target as i32)),
                Insn::Call(_) => Insn::Call(CallTarget::Helper([5, 7, 8][usize::from(k % 3)])),
                // Legacy packet loads mostly inside the (up to 64-byte) packet.
                Insn::LdAbs { size, .. } if biased => Insn::LdAbs {
                    size,
                    imm: i32::from(k % 64),
                },
                Insn::LdInd { size, src, .. } if biased => Insn::LdInd {
                    size,
                    src,
                    imm: i32::from(k % 16),
                },
                Insn::Lddw {
                    dst,
                    value: Lddw::Imm(v),
                } => Insn::Lddw {
                    dst,
                    value: Lddw::Imm(v),
                },
                Insn::Lddw { dst, .. } => Insn::Lddw {
                    dst,
                    value: Lddw::Imm(u64::from(k)),
                },
                Insn::Load {
                    size, signed, dst, ..
                } if biased => Insn::Load {
                    size,
                    signed,
                    dst,
                    src: base,
                    off,
                },
                Insn::Store { size, src, .. } if biased => Insn::Store {
                    size,
                    dst: base,
                    off,
                    src,
                },
                Insn::Atomic {
                    size,
                    op,
                    fetch,
                    src,
                    ..
                } if biased => Insn::Atomic {
                    size,
                    op,
                    fetch,
                    dst: base,
                    src,
                    off,
                },
                Insn::Alu {
                    width,
                    op,
                    dst,
                    src: Operand::Reg(_),
                } if dst == Reg::R10 => Insn::Alu {
                    width,
                    op,
                    dst: Reg::R0,
                    src: Operand::Reg(Reg::R10),
                },
                other => other,
            }
        })
        .collect()
}

/// The run's memory with fresh contents at the same addresses each time
/// (so pointer values agree): the context (0xa5 bytes) and the packet;
/// the context's address.
fn fresh<'m>(ctx: &'m mut [u8], pkt: &'m mut [u8], packet: &[u8]) -> (Memory<'m>, u64) {
    ctx.fill(0xa5);
    pkt.copy_from_slice(packet);
    let mut mem = Memory::new();
    let addr = mem.add(RegionKind::Context, ctx);
    mem.add(RegionKind::Packet, pkt);
    (mem, addr)
}

/// Runs the program in one mode on `machine`, with fresh buffer contents
/// at the same addresses each time (so pointer values agree too).
fn run(
    machine: &mut Vm<SimEnv>,
    counting: bool,
    ctx: &mut [u8],
    pkt: &mut [u8],
    packet: &[u8],
) -> (Result<RunResult, VmError>, Vec<u8>, Vec<u8>) {
    let (mut mem, addr) = fresh(ctx, pkt, packet);
    let mut env = SimEnv::default();
    let args = [addr, CTX_LEN as u64, 0, 0, 0];
    let out = if counting {
        machine.run_counting(&mut env, &mut mem, args)
    } else {
        machine.run(&mut env, &mut mem, args)
    };
    drop(mem);
    (out, ctx.to_vec(), pkt.to_vec())
}

/// Three runs one after the other on one memory (the context's first 16
/// bytes rewritten before each, r2-r5 zero) in the checked JIT; if they
/// all succeed, the same three as one batch (`Vm::run_batch`, trusted)
/// on the same starting memory must give the same results and memory.
#[cfg(target_arch = "x86_64")]
fn batch_as_runs(
    machine: &mut Vm<SimEnv>,
    ctx: &mut [u8],
    pkt: &mut [u8],
    packet: &[u8],
    all_quiet: bool,
) -> Result<(), TestCaseError> {
    const RUNS: usize = 3;
    let (mut mem, addr) = fresh(ctx, pkt, packet);
    let mut env = SimEnv::default();
    let mut want = Vec::new();
    for _ in 0..RUNS {
        mem.write(addr, 16).unwrap().fill(0xa5);
        match machine.run(&mut env, &mut mem, [addr, 0, 0, 0, 0]) {
            Ok(r) => want.push(BatchResult {
                r0: r.r0,
                insns: r.stats.insns,
                helper_calls: r.stats.helper_calls,
                tail_calls: r.stats.tail_calls,
            }),
            Err(_) => return Ok(()),
        }
    }
    drop(mem);
    let (want_ctx, want_pkt) = (ctx.to_vec(), pkt.to_vec());
    let (mut mem, addr) = fresh(ctx, pkt, packet);
    let mut env = SimEnv::default();
    // SAFETY: the checked runs of these very inputs, in this order,
    // succeeded: the unchecked ones take the same paths and accesses.
    unsafe { machine.trust_verified() };
    let hooks = BatchHooks {
        ctx: addr,
        sync: |_, _, _| {},
        quiet: HelperSet::new(&if all_quiet {
            (0..256).collect()
        } else {
            vec![]
        }),
    };
    let packets = [BatchPacket {
        ctx_head: [0xa5a5_a5a5; 4],
        extra: 0,
    }; RUNS];
    let mut got = [BatchResult::default(); RUNS];
    let mut from = 0;
    while from < RUNS {
        match machine.run_batch(
            &mut env,
            &mut mem,
            &hooks,
            &packets[from..],
            &mut got[from..],
        ) {
            Ok(BatchStop::Done) => break,
            Ok(BatchStop::After(k)) => from += k + 1,
            other => prop_assert!(false, "batch stopped: {:?}", other),
        }
    }
    machine.distrust();
    drop(mem);
    prop_assert_eq!(&got[..], &want[..], "batch vs runs");
    prop_assert_eq!(&ctx[..], &want_ctx[..]);
    prop_assert_eq!(&pkt[..], &want_pkt[..]);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn fast_and_counting_modes_agree(
        insns in prop::collection::vec(isa::arbitrary::insn(), 1..24),
        knobs in prop::collection::vec(any::<u16>(), 1..24),
        packet in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let program = match Program::new(shape(insns, &knobs)) {
            Ok(p) => p,
            Err(_) => return Ok(()),
        };
        let mut helpers = HelperTable::new();
        register_basic(&mut helpers);
        let mut machine = Vm::new(program, &helpers).unwrap();
        machine.set_budget(5_000);
        let mut ctx = vec![0u8; CTX_LEN];
        let mut pkt = packet.clone();
        let (fast, fast_ctx, fast_pkt) = run(&mut machine, false, &mut ctx, &mut pkt, &packet);
        let (counted, counted_ctx, counted_pkt) = run(&mut machine, true, &mut ctx, &mut pkt, &packet);
        prop_assert_eq!(&fast_ctx, &counted_ctx);
        prop_assert_eq!(&fast_pkt, &counted_pkt);
        match (&fast, &counted) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(a.r0, b.r0);
                prop_assert_eq!(a.stats.insns, b.stats.insns);
                prop_assert_eq!(a.stats.helper_calls, b.stats.helper_calls);
                prop_assert!(a.stats.insns <= 5_000);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "modes disagree: {:?} vs {:?}", a, b),
        }
        #[cfg(target_arch = "x86_64")]
        {
            machine.enable_jit().unwrap();
            let (jit, jit_ctx, jit_pkt) = run(&mut machine, false, &mut ctx, &mut pkt, &packet);
            prop_assert_eq!(&jit, &fast, "checked JIT vs interpreter");
            prop_assert_eq!(&jit_ctx, &fast_ctx);
            prop_assert_eq!(&jit_pkt, &fast_pkt);
            let (jit_counted, jc_ctx, jc_pkt) = run(&mut machine, true, &mut ctx, &mut pkt, &packet);
            prop_assert_eq!(&jit_counted, &counted, "counting JIT vs counting interpreter");
            prop_assert_eq!(&jc_ctx, &fast_ctx);
            prop_assert_eq!(&jc_pkt, &fast_pkt);
            if jit.is_ok() {
                // SAFETY: the checked run on these same inputs succeeded, so
                // the unchecked one takes the same path and accesses.
                unsafe { machine.trust_verified() };
                let (unchecked, u_ctx, u_pkt) = run(&mut machine, false, &mut ctx, &mut pkt, &packet);
                prop_assert_eq!(&unchecked, &fast, "unchecked JIT vs interpreter");
                prop_assert_eq!(&u_ctx, &fast_ctx);
                prop_assert_eq!(&u_pkt, &fast_pkt);
                machine.distrust();
                let all_quiet = knobs[0] % 2 == 1;
                batch_as_runs(&mut machine, &mut ctx, &mut pkt, &packet, all_quiet)?;
            }
        }
    }
}
