//! bpf_tail_call as the kernel implements it, in the interpreter and the JIT.

use vm::*;

/// Tail-call targets: r2 is ignored, r3 is the program index, 99 misses.
fn resolve(_: &mut SimEnv, _map: u64, index: u64) -> Option<usize> {
    (index != 99).then_some(index as usize)
}

fn vm(texts: &[&str], with_resolver: bool) -> Result<Vm<SimEnv>, LoadError> {
    let programs = texts
        .iter()
        .map(|t| Program::new(isa::assemble(t).unwrap()).unwrap())
        .collect();
    Vm::with_programs(
        programs,
        &HelperTable::new(),
        with_resolver.then_some(resolve as TailCallFn<SimEnv>),
    )
}

/// Runs in the interpreter and, on x86-64, in the JIT (where tail calls,
/// calls and exits are native code): both must agree.
fn run(vm: &mut Vm<SimEnv>) -> RunResult {
    let go = |vm: &mut Vm<SimEnv>| {
        vm.run(&mut SimEnv::default(), &mut Memory::new(), [7, 0, 0, 0, 0])
            .unwrap()
    };
    let interpreted = go(vm);
    #[cfg(target_arch = "x86_64")]
    {
        vm.enable_jit().unwrap();
        assert_eq!(go(vm), interpreted, "JIT vs interpreter");
        vm.disable_jit();
    }
    interpreted
}

#[test]
fn tail_calls_continue_in_the_target_with_r1() {
    let mut m = vm(
        &[
            "mov %r3, 1\ncall 12\nmov %r0, 111\nexit",
            "mov %r0, %r1\nadd %r0, 1000\nexit",
        ],
        true,
    )
    .unwrap();
    let out = run(&mut m);
    assert_eq!(
        out.r0, 1007,
        "the target ran with the caller's r1 and did not return"
    );
    assert_eq!(out.stats.tail_calls, 1);
}

#[test]
fn a_missing_target_falls_through_with_r0_unchanged() {
    let mut m = vm(
        &["mov %r0, 5\nmov %r3, 99\ncall 12\nadd %r0, 1\nexit"],
        true,
    )
    .unwrap();
    let out = run(&mut m);
    assert_eq!(out.r0, 6);
    assert_eq!(out.stats.tail_calls, 0);
}

#[test]
fn at_most_33_tail_calls_per_run() {
    // The program tail-calls itself, counting in r6 (registers survive).
    let mut m = vm(
        &["add %r6, 1\nmov %r0, %r6\nmov %r3, 0\ncall 12\nexit"],
        true,
    )
    .unwrap();
    let out = run(&mut m);
    assert_eq!(out.r0, 34, "the first run plus 33 tail calls");
    assert_eq!(out.stats.tail_calls, 33);
}

#[test]
fn a_tail_call_in_a_subprogram_returns_to_its_caller() {
    let main = "mov %r6, 40\ncall local f\nadd %r0, %r6\nexit\nf: mov %r6, 0\nmov %r3, 1\ncall 12\nmov %r0, 1\nexit";
    let mut m = vm(&[main, "mov %r0, 2\nexit"], true).unwrap();
    // The target's exit returns from f: r6 restored, then +40.
    assert_eq!(run(&mut m).r0, 42);
}

#[test]
fn tail_calls_need_a_resolver() {
    let e = vm(&["mov %r3, 1\ncall 12\nexit"], false)
        .map(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("bpf_tail_call"), "{e}");
}
