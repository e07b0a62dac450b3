//! Any bytes as a program over a small context and packet: the interpreter
//! and the JIT (checked, counting, and unchecked where the checked run
//! succeeded) give the same r0, error, counts and memory.
use vm::{
    HelperTable, Memory, Program, RegionKind, RunResult, SimEnv, Vm, VmError, register_basic,
};

type Outcome = (Result<RunResult, VmError>, [u8; 32], Vec<u8>);

fn run(
    machine: &mut Vm<SimEnv>,
    counting: bool,
    packet: &[u8],
    ctx: &mut [u8; 32],
    pkt: &mut Vec<u8>,
) -> Outcome {
    ctx.fill(0x5a);
    pkt.copy_from_slice(packet);
    let mut mem = Memory::new();
    let addr = mem.add(RegionKind::Context, &mut ctx[..]);
    mem.add(RegionKind::Packet, &mut pkt[..]);
    let args = [addr, 32, 0, 0, 0];
    let out = if counting {
        machine.run_counting(&mut SimEnv::default(), &mut mem, args)
    } else {
        machine.run(&mut SimEnv::default(), &mut mem, args)
    };
    drop(mem);
    (out, *ctx, pkt.clone())
}

pub fn check(data: &[u8]) {
    let (packet, code) = data.split_at(
        data.len()
            .min(data.first().copied().unwrap_or(0) as usize % 65),
    );
    let Ok(program) = Program::from_bytes(code) else {
        return;
    };
    let mut helpers = HelperTable::new();
    register_basic(&mut helpers);
    let Ok(mut machine) = Vm::new(program, &helpers) else {
        return;
    };
    machine.set_budget(10_000);
    // The same buffers (same addresses) for every run.
    let mut ctx = [0u8; 32];
    let mut pkt = packet.to_vec();
    let interp = run(&mut machine, false, packet, &mut ctx, &mut pkt);
    let interp_counted = run(&mut machine, true, packet, &mut ctx, &mut pkt);
    machine.enable_jit().expect("JIT code memory");
    let jit = run(&mut machine, false, packet, &mut ctx, &mut pkt);
    assert_eq!(jit, interp, "checked JIT vs interpreter");
    let jit_counted = run(&mut machine, true, packet, &mut ctx, &mut pkt);
    assert_eq!(
        jit_counted, interp_counted,
        "counting JIT vs counting interpreter"
    );
    if jit.0.is_ok() {
        // SAFETY: the checked run on these same inputs succeeded, so the
        // unchecked one takes the same path and makes the same accesses.
        unsafe { machine.trust_verified() };
        let fast = run(&mut machine, false, packet, &mut ctx, &mut pkt);
        assert_eq!(fast, interp, "unchecked JIT vs interpreter");
    }
}
