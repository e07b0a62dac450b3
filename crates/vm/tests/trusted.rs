//! What trusted runs skip (`Vm::set_stack_depth`, inline array lookups)
//! changes no result: the same r0 and counts as the helper and the full
//! stack zeroing give.

use std::sync::atomic::AtomicU64;

use vm::*;

fn program(text: &str) -> Program {
    Program::new(isa::assemble(text).unwrap()).unwrap()
}

/// An array map's four values, as the test helper and inline code see it.
static VALUES: [AtomicU64; 4] = [
    AtomicU64::new(10),
    AtomicU64::new(11),
    AtomicU64::new(12),
    AtomicU64::new(13),
];

/// `bpf_map_lookup_elem` on `VALUES` whatever r1 is: the value's address,
/// or 0 past the end.
fn lookup(c: &mut HelperCtx<'_, '_, SimEnv>) -> Result<u64, HelperError> {
    let key = u32::from_le_bytes(c.mem.read(c.args[1], 4)?.try_into().unwrap());
    Ok(VALUES
        .get(key as usize)
        .map_or(0, |v| v.as_ptr().expose_provenance() as u64))
}

fn lookup_vm(text: &str) -> Vm<SimEnv> {
    let mut table = HelperTable::new();
    table.register(1, lookup);
    Vm::new(program(text), &table).unwrap()
}

/// Looks up the key in r1 and returns the value read, or 99 for none.
const LOOKUP: &str = "stxw [%r10-4], %r1
lddw %r1, 0x1234
mov %r2, %r10
add %r2, -4
call 1
jeq %r0, 0, +2
ldxdw %r0, [%r0]
exit
mov %r0, 99
exit";

#[test]
fn the_lookup_after_a_constant_r1_is_found() {
    let vm = lookup_vm(LOOKUP);
    // Slots: stxw 0, lddw 1-2, mov 3, add 4, call 5.
    assert_eq!(vm.constant_map_lookups(0), vec![(5, 0x1234)]);
}

#[test]
fn lookups_whose_r1_may_differ_are_not_inlined() {
    for text in [
        // r1 written after the lddw.
        "lddw %r1, 0x1234\nmov %r1, 5\ncall 1\nexit",
        // A jump lands on the call.
        "jeq %r3, 0, +2\nlddw %r1, 0x1234\ncall 1\nexit",
        // A jump lands between the lddw and the call.
        "jeq %r3, 0, +2\nlddw %r1, 0x1234\nmov %r2, 0\ncall 1\nexit",
        // A helper call in between clobbers r1.
        "lddw %r1, 0x1234\ncall 1\ncall 1\nexit",
        // A fetching atomic writes its source register.
        "lddw %r1, 0x1234\nlock fetch add [%r10-8], %r1\ncall 1\nexit",
    ] {
        let vm = lookup_vm(text);
        let sites = vm.constant_map_lookups(0);
        // (the first call of the fourth program is a fine site)
        assert!(
            sites.iter().all(|&(pc, _)| pc != vm.program().len() - 2),
            "{text}: {sites:?}"
        );
    }
    // A conditional jump in between that lands elsewhere is harmless.
    let vm = lookup_vm("lddw %r1, 0x1234\njeq %r3, 0, +2\ncall 1\nexit\nmov %r0, 0\nexit");
    assert_eq!(vm.constant_map_lookups(0), vec![(3, 0x1234)]);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn inline_array_lookups_agree_with_the_helper() {
    let mut vm = lookup_vm(LOOKUP);
    // SAFETY: the program touches only its stack and, through the lookup,
    // `VALUES`, which lives for the whole test.
    unsafe { vm.trust_verified() };
    let run = |vm: &mut Vm<SimEnv>, key: u64| {
        vm.run(
            &mut SimEnv::default(),
            &mut Memory::new(),
            [key, 0, 0, 0, 0],
        )
        .unwrap()
    };
    let by_helper: Vec<RunResult> = (0..8).map(|k| run(&mut vm, k)).collect();
    assert_eq!(by_helper[2].r0, 12);
    assert_eq!(by_helper[6].r0, 99);
    vm.enable_jit().unwrap();
    let base = VALUES[0].as_ptr().expose_provenance() as u64;
    let sites = vm.constant_map_lookups(0);
    let layout = ArrayLookup {
        base,
        stride: 8,
        max_entries: 4,
    };
    // SAFETY: r1 is the constant at the site; `VALUES` outlives the VM.
    unsafe {
        vm.inline_lookups(
            0,
            sites
                .iter()
                .map(|&(pc, _)| (pc, Lookup::Array(layout)))
                .collect(),
        )
    };
    for (k, want) in by_helper.iter().enumerate() {
        assert_eq!(&run(&mut vm, k as u64), want, "key {k}");
    }
    // A stride that is no power of two takes the multiply: keys read the
    // same words at a stride of 16 (every other value).
    let layout = ArrayLookup {
        stride: 24,
        max_entries: 2,
        ..layout
    };
    // SAFETY: keys 0 and 1 at a stride of 24 bytes stay inside `VALUES`.
    unsafe {
        vm.inline_lookups(
            0,
            sites
                .iter()
                .map(|&(pc, _)| (pc, Lookup::Array(layout)))
                .collect(),
        )
    };
    let got: Vec<u64> = (0..3).map(|k| run(&mut vm, k).r0).collect();
    assert_eq!(got, vec![10, 13, 99]);
}

#[test]
fn trusted_runs_zero_the_stack_down_to_the_depth_given() {
    // Returns what the slot held, then leaves 42 there.
    let text = "ldxdw %r0, [%r10-8]\nstdw [%r10-8], 42\nexit";
    let mut vm = Vm::new(program(text), &HelperTable::<SimEnv>::new()).unwrap();
    let run = |vm: &mut Vm<SimEnv>| {
        vm.run(&mut SimEnv::default(), &mut Memory::new(), [0; 5])
            .unwrap()
            .r0
    };
    assert_eq!(
        (run(&mut vm), run(&mut vm)),
        (0, 0),
        "checked runs zero all"
    );
    // SAFETY: the program touches only its stack.
    unsafe { vm.trust_verified() };
    vm.set_stack_depth(8);
    assert_eq!((run(&mut vm), run(&mut vm)), (0, 0), "8 bytes deep: zeroed");
    // The depth is what decides: a wrong (too small) one shows through.
    vm.set_stack_depth(0);
    run(&mut vm);
    assert_eq!(run(&mut vm), 42, "below the depth the stack is left alone");
}
