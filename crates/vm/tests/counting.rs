//! Counting runs report exact costs, the same in the interpreter and the
//! JIT: instructions, branches (executed and taken), loads and stores per
//! region and per place, and what helpers read and wrote.

use vm::*;

/// Reads a 4-byte key from program memory and writes 8 bytes back to the
/// same place's neighbour: one helper read, one helper write.
fn touch(c: &mut HelperCtx<'_, '_, SimEnv>) -> Result<u64, HelperError> {
    let key = u32::from_le_bytes(c.mem.read(c.args[0], 4)?.try_into().unwrap());
    c.mem
        .write(c.args[1], 8)?
        .copy_from_slice(&u64::from(key).to_le_bytes());
    Ok(u64::from(key))
}

/// Sums the packet's bytes (r1 = packet, r2 = its length) one load per
/// byte, keeps the sum on the stack, and calls the helper once.
const SUM: &str = "mov %r0, 0
mov %r3, 0
jge %r3, %r2, +5
ldxb %r4, [%r1+0]
add %r0, %r4
add %r1, 1
add %r3, 1
ja -6
stxw [%r10-4], %r0
mov %r6, %r0
mov %r1, %r10
add %r1, -4
mov %r2, %r10
add %r2, -16
call 1
ldxdw %r0, [%r10-16]
exit";

fn vm(jit: bool) -> Vm<SimEnv> {
    let mut table = HelperTable::new();
    table.register(1, touch);
    let program = Program::new(isa::assemble(SUM).unwrap()).unwrap();
    let mut vm = Vm::new(program, &table).unwrap();
    if jit {
        vm.enable_jit().unwrap();
    }
    vm
}

#[test]
fn a_loop_over_the_packet_costs_what_it_should_in_both_engines() {
    for jit in [false, true] {
        let mut vm = vm(jit);
        for n in [0u64, 1, 7, 64] {
            let mut packet: Vec<u8> = (0..n as u8).collect();
            let mut ctx = [0u8; 8];
            let mut mem = Memory::new();
            mem.add(RegionKind::Context, &mut ctx);
            let p = mem.add(RegionKind::Packet, &mut packet);
            let out = vm
                .run_counting(&mut SimEnv::default(), &mut mem, [p, n, 0, 0, 0])
                .unwrap();
            let want: u64 = (0..n).sum();
            assert_eq!(out.r0, want, "jit {jit}, {n} bytes");
            let s = out.stats;
            // 2 set-up, n iterations of 6 (the check and five), the last
            // check, then 9 after the loop.
            assert_eq!(s.insns, 2 + 6 * n + 1 + 9, "jit {jit}, {n} bytes");
            assert_eq!((s.branches, s.taken), (n + 1, 1), "jit {jit}, {n} bytes");
            assert_eq!(s.loads_of(RegionKind::Packet), n);
            assert_eq!(s.loads_of(RegionKind::Stack), 1);
            assert_eq!(s.stores_of(RegionKind::Stack), 1);
            assert_eq!(s.helper_calls, 1);
            assert_eq!(
                s.helper_mem,
                HelperTally {
                    reads: 1,
                    read_bytes: 4,
                    writes: 1,
                    write_bytes: 8
                }
            );
            // Places: the stack, then the regions in the order added.
            assert_eq!(vm.last_region_accesses(), &[[1, 1], [0, 0], [n, 0]]);
        }
    }
}

#[test]
fn plain_runs_leave_the_counters_at_zero() {
    for jit in [false, true] {
        let mut vm = vm(jit);
        let mut packet = [1u8; 5];
        let mut mem = Memory::new();
        let p = mem.add(RegionKind::Packet, &mut packet);
        let s = vm
            .run(&mut SimEnv::default(), &mut mem, [p, 5, 0, 0, 0])
            .unwrap()
            .stats;
        assert_eq!(s.insns, 2 + 30 + 1 + 9);
        assert_eq!((s.branches, s.taken, s.accesses()), (0, 0, 0), "jit {jit}");
        assert_eq!(s.helper_mem, HelperTally::default());
    }
}
