//! Any bytes as a program over a small context and packet: loading and
//! running never panic, and the fast and counting modes agree.
use vm::{HelperTable, Memory, Program, RegionKind, SimEnv, Vm, register_basic};

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
    let mut results = Vec::new();
    let mut ctx = [0u8; 32];
    let mut pkt = packet.to_vec();
    for counting in [false, true] {
        ctx.fill(0x5a);
        pkt.copy_from_slice(packet);
        let mut mem = Memory::new();
        let addr = mem.add(RegionKind::Context, &mut ctx);
        mem.add(RegionKind::Packet, &mut pkt);
        let args = [addr, 32, 0, 0, 0];
        let out = if counting {
            machine.run_counting(&mut SimEnv::default(), &mut mem, args)
        } else {
            machine.run(&mut SimEnv::default(), &mut mem, args)
        };
        drop(mem);
        results.push((out.map(|o| (o.r0, o.stats.insns)), ctx, pkt.clone()));
    }
    assert_eq!(results[0], results[1]);
}
