//! Behaviour beyond the conformance suite: checked memory, frames, budget,
//! counters, legacy packet loads and load-time rejection.

use vm::*;

fn load(text: &str) -> Vm<SimEnv> {
    let mut helpers = HelperTable::new();
    register_basic(&mut helpers);
    Vm::new(
        Program::new(isa::assemble(text).unwrap()).unwrap(),
        &helpers,
    )
    .unwrap()
}

fn run_with(text: &str, ctx: &mut [u8]) -> Result<RunResult, VmError> {
    let mut vm = load(text);
    let mut mem = Memory::new();
    let len = ctx.len() as u64;
    let addr = mem.add(RegionKind::Context, ctx);
    vm.run_counting(&mut SimEnv::default(), &mut mem, [addr, len, 0, 0, 0])
}

fn run(text: &str) -> Result<RunResult, VmError> {
    run_with(text, &mut [])
}

#[test]
fn out_of_bounds_read_names_instruction_address_and_region() {
    let mut ctx = [0u8; 16];
    let e = run_with("mov %r0, 0\nldxw %r0, [%r1+14]\nexit", &mut ctx).unwrap_err();
    assert_eq!(e.pc, 1);
    assert_eq!(e.text, "ldxw %r0, [%r1+14]");
    let VmErrorKind::Memory(fault) = &e.kind else {
        panic!("{e}")
    };
    assert_eq!(fault.access, Access::Read);
    assert_eq!(fault.size, 4);
    assert_eq!(fault.region.unwrap().kind, RegionKind::Context);
    let msg = e.to_string();
    assert!(msg.contains("instruction 1 (ldxw %r0, [%r1+14])"), "{msg}");
    assert!(msg.contains("read of 4 bytes"), "{msg}");
    assert!(msg.contains("context (16 bytes"), "{msg}");
}

#[test]
fn stack_is_512_bytes_per_frame_and_bounded() {
    // The bottom of the frame is fine, one byte below is not.
    assert_eq!(
        run("stb [%r10-512], 7\nldxb %r0, [%r10-512]\nexit")
            .unwrap()
            .r0,
        7
    );
    let e = run("stb [%r10-513], 7\nexit").unwrap_err();
    assert!(
        matches!(
            e.kind,
            VmErrorKind::Memory(MemFault {
                access: Access::Write,
                ..
            })
        ),
        "{e}"
    );
    // Above the frame pointer of the main frame is outside the stack.
    let e = run("ldxb %r0, [%r10]\nexit").unwrap_err();
    assert!(e.to_string().contains("stack"), "{e}");
}

#[test]
fn wild_pointers_are_errors_not_crashes() {
    for addr in ["0", "0x1000", "0xffffffffffffffff", "0x7fffffffffff"] {
        let e = run(&format!("lddw %r1, {addr}\nldxdw %r0, [%r1]\nexit")).unwrap_err();
        assert!(matches!(e.kind, VmErrorKind::Memory(_)), "{addr}: {e}");
        let e = run(&format!("lddw %r1, {addr}\nstdw [%r1], 1\nexit")).unwrap_err();
        assert!(matches!(e.kind, VmErrorKind::Memory(_)), "{addr}: {e}");
    }
    // A region's end plus one straddles it.
    let mut ctx = [0u8; 8];
    assert!(run_with("ldxdw %r0, [%r1+1]\nexit", &mut ctx).is_err());
    assert!(run_with("ldxdw %r0, [%r1-1]\nexit", &mut ctx).is_err());
    assert!(run_with("ldxdw %r0, [%r1]\nexit", &mut ctx).is_ok());
}

#[test]
fn read_only_regions_reject_writes() {
    let data = [1u8, 2, 3, 4];
    let mut vm = load("ldxb %r0, [%r1+3]\nstb [%r1], 9\nexit");
    let mut mem = Memory::new();
    let addr = mem.add_readonly(RegionKind::Map, &data);
    let e = vm
        .run(&mut SimEnv::default(), &mut mem, [addr, 0, 0, 0, 0])
        .unwrap_err();
    assert_eq!(e.pc, 1);
    assert!(e.to_string().contains("read-only map"), "{e}");
    assert_eq!(data, [1, 2, 3, 4]);
}

#[test]
fn local_calls_get_fresh_frames_and_keep_callee_saved_registers() {
    let text = "
        mov %r6, 6
        stdw [%r10-8], 11
        call local f
        ldxdw %r1, [%r10-8]   # the caller's slot is untouched
        add %r0, %r1
        add %r0, %r6          # r6 restored
        exit
    f:
        mov %r6, 100
        stdw [%r10-8], 22     # the callee's own frame
        ldxdw %r0, [%r10-8]
        exit
    ";
    assert_eq!(run(text).unwrap().r0, 22 + 11 + 6);
}

#[test]
fn call_depth_is_limited_to_eight_frames() {
    // Each function calls the next; with 8 frames in total the main program
    // may nest 7 calls.
    let chain = |n: usize| {
        let mut t = String::from("call local f1\nexit\n");
        for i in 1..=n {
            if i < n {
                t.push_str(&format!("f{i}: call local f{}\nexit\n", i + 1));
            } else {
                t.push_str(&format!("f{i}: mov %r0, 42\nexit\n"));
            }
        }
        t
    };
    assert_eq!(run(&chain(7)).unwrap().r0, 42);
    let e = run(&chain(8)).unwrap_err();
    assert_eq!(e.kind, VmErrorKind::CallDepth);
    // Unbounded recursion stops at the limit too.
    let e = run("f: call local f\nexit").unwrap_err();
    assert_eq!(e.kind, VmErrorKind::CallDepth);
}

#[test]
fn the_budget_stops_infinite_loops() {
    let mut vm = load("l: ja l");
    vm.set_budget(1000);
    let e = vm
        .run(&mut SimEnv::default(), &mut Memory::new(), [0; 5])
        .unwrap_err();
    assert_eq!(e.kind, VmErrorKind::Budget(1000));
    assert_eq!(e.pc, 0);
}

#[test]
fn falling_off_the_end_is_an_error() {
    let e = run("mov %r0, 1\njeq %r0, 0, -2").unwrap_err();
    assert_eq!(e.kind, VmErrorKind::FellOff);
    assert_eq!(e.pc, 2);
}

#[test]
fn counters_are_exact() {
    let mut ctx = [0u8; 8];
    let text = "
        ldxw %r2, [%r1]
        stxw [%r10-4], %r2
        ldxw %r0, [%r10-4]
        lddw %r3, 5
        stdw [%r10-16], 0
        lock add [%r10-16], %r3
        exit
    ";
    let out = run_with(text, &mut ctx).unwrap();
    assert_eq!(out.stats.insns, 7);
    assert_eq!(out.stats.loads_of(RegionKind::Context), 1);
    assert_eq!(out.stats.stores_of(RegionKind::Context), 0);
    assert_eq!(out.stats.loads_of(RegionKind::Stack), 2);
    assert_eq!(out.stats.stores_of(RegionKind::Stack), 3);
    assert_eq!(out.stats.accesses(), 6);

    // The fast mode counts instructions exactly but not accesses.
    let mut vm = load(text);
    let mut mem = Memory::new();
    let addr = mem.add(RegionKind::Context, &mut ctx);
    let fast = vm
        .run(&mut SimEnv::default(), &mut mem, [addr, 8, 0, 0, 0])
        .unwrap();
    assert_eq!(fast.r0, out.r0);
    assert_eq!(fast.stats.insns, 7);
    assert_eq!(fast.stats.accesses(), 0);
}

#[test]
fn atomics_must_be_aligned() {
    let e = run("stdw [%r10-16], 0\nmov %r1, 1\nlock add [%r10-12], %r1\nexit").unwrap_err();
    assert!(
        matches!(e.kind, VmErrorKind::MisalignedAtomic { size: 8, .. }),
        "{e}"
    );
    assert_eq!(e.pc, 2);
    let e = run("mov %r1, 1\nlock add32 [%r10-6], %r1\nexit").unwrap_err();
    assert!(
        matches!(e.kind, VmErrorKind::MisalignedAtomic { size: 4, .. }),
        "{e}"
    );
}

#[test]
fn legacy_packet_loads_are_big_endian_and_end_the_program_when_out_of_bounds() {
    let mut packet = [0x12u8, 0x34, 0x56, 0x78, 0x9a];
    let mut vm = load("ldabsh 1\nmov %r6, %r0\nmov %r7, 2\nldindw %r7, -1\nadd %r0, %r6\nexit");
    let mut mem = Memory::new();
    mem.add(RegionKind::Packet, &mut packet);
    let out = vm.run(&mut SimEnv::default(), &mut mem, [0; 5]).unwrap();
    assert_eq!(out.r0, 0x3456 + 0x3456789a);

    let mut vm = load("mov %r0, 7\nldabsw 2\nmov %r0, 9\nexit");
    let mut packet = [0u8; 5];
    let mut mem = Memory::new();
    mem.add(RegionKind::Packet, &mut packet);
    let out = vm.run(&mut SimEnv::default(), &mut mem, [0; 5]).unwrap();
    assert_eq!(out.r0, 0, "reading past the packet ends the program with 0");

    let e = run("ldabsb 0\nexit").unwrap_err();
    assert_eq!(e.kind, VmErrorKind::NoPacket);
}

#[test]
fn helpers_are_checked_at_load_and_callx_at_run_time() {
    let helpers: HelperTable<SimEnv> = HelperTable::new();
    let program = Program::new(isa::assemble("call 9\nexit").unwrap()).unwrap();
    let e = Vm::new(program, &helpers).map(|_| ()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("instruction 0") && msg.contains("bpf_skb_store_bytes"),
        "{msg}"
    );

    let e = run("mov %r2, 9\ncallx %r2\nexit").unwrap_err();
    assert_eq!(e.kind, VmErrorKind::UnknownHelper(9));
    // Helper 5 is bpf_ktime_get_ns: deterministic simulated time.
    assert_eq!(run("call 5\ncall 5\nexit").unwrap().r0, 1);
}

#[test]
fn helpers_read_and_write_program_memory_through_checks() {
    fn sum_bytes(c: &mut HelperCtx<'_, '_, SimEnv>) -> Result<u64, HelperError> {
        let bytes = c.mem.read(c.args[0], c.args[1] as usize)?;
        let sum = bytes.iter().map(|&b| u64::from(b)).sum();
        c.mem.write(c.args[0], 1)?[0] = 0xee;
        Ok(sum)
    }
    let mut helpers = HelperTable::new();
    helpers.register_named(1000, "sum_bytes", sum_bytes);
    let text = "stdw [%r10-8], 0x0403\nmov %r1, %r10\nadd %r1, -8\nmov %r2, 8\ncall 1000\nldxb %r1, [%r10-8]\nlsh %r1, 32\nor %r0, %r1\nexit";
    let mut vm = Vm::new(
        Program::new(isa::assemble(text).unwrap()).unwrap(),
        &helpers,
    )
    .unwrap();
    let out = vm
        .run(&mut SimEnv::default(), &mut Memory::new(), [0; 5])
        .unwrap();
    assert_eq!(out.r0, (0xee << 32) | 7);
    assert_eq!(out.stats.helper_calls, 1);

    // A helper handed a bad pointer fails the run with the helper's name.
    let text = "mov %r1, 16\nmov %r2, 8\ncall 1000\nexit";
    let mut vm = Vm::new(
        Program::new(isa::assemble(text).unwrap()).unwrap(),
        &helpers,
    )
    .unwrap();
    let e = vm
        .run(&mut SimEnv::default(), &mut Memory::new(), [0; 5])
        .unwrap_err();
    assert!(
        matches!(&e.kind, VmErrorKind::Helper { name, .. } if name == "sum_bytes"),
        "{e}"
    );
}

#[test]
fn load_rejects_bad_branches_and_unresolved_references() {
    let load_err = |text: &str| Program::new(isa::assemble(text).unwrap()).unwrap_err();
    assert!(matches!(
        load_err("ja +5\nexit"),
        LoadError::JumpOutOfRange {
            pc: 0,
            target: 6,
            ..
        }
    ));
    assert!(matches!(
        load_err("exit\njeq %r0, 0, -3"),
        LoadError::JumpOutOfRange {
            pc: 1,
            target: -1,
            ..
        }
    ));
    assert!(matches!(
        load_err("ja +1\nlddw %r0, 1\nexit"),
        LoadError::JumpIntoLddw {
            pc: 0,
            target: 2,
            ..
        }
    ));
    assert!(matches!(
        load_err("call local +4\nexit"),
        LoadError::JumpOutOfRange { .. }
    ));
    assert!(matches!(
        load_err("lddw %r1, map_fd(3)\nexit"),
        LoadError::Unresolved { .. }
    ));
    assert!(matches!(
        load_err("call kfunc 1234\nexit"),
        LoadError::Unresolved { .. }
    ));
    assert_eq!(Program::new(vec![]).unwrap_err(), LoadError::Empty);
    for text in [
        "mov %r10, 0",
        "add %r10, 8",
        "ldxdw %r10, [%r1]",
        "lddw %r10, 1",
        "neg %r10",
        "be16 %r10",
        "lock fetch add [%r1], %r10",
    ] {
        let e = load_err(&format!("{text}\nexit"));
        assert!(
            matches!(e, LoadError::WritesFramePointer { pc: 0, .. }),
            "{text}: {e}"
        );
        assert!(e.to_string().contains("read-only frame pointer"), "{e}");
    }
    // Reading r10 and storing through it is what programs do.
    assert!(
        Program::new(
            isa::assemble("mov %r1, %r10\nstxdw [%r10-8], %r10\nlock add [%r10-8], %r10\nexit")
                .unwrap()
        )
        .is_ok()
    );
    let msg = load_err("ja +5\nexit").to_string();
    assert!(
        msg.contains("instruction 0 (ja +5)") && msg.contains("outside the program"),
        "{msg}"
    );
}
