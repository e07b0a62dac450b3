//! Coverage: how many times each instruction ran and which way each
//! conditional jump went, over every run of a VM ([`Vm::set_coverage`]).
//!
//! A covering run is interpreted one instruction at a time (the
//! interpreter's single-step mode, the one the JIT falls back to), even
//! when the JIT is enabled: before each step the instruction's counter is
//! bumped; after a conditional jump's step, whether the run went on at the
//! jump's target tells if it jumped. The interpreter's hot loop is not
//! touched, so runs without coverage cost what they did.

use crate::error::VmError;
use crate::memory::Memory;
use crate::{Vm, interp::Machine};

/// Counts of one program of the VM, by slot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgramCoverage {
    /// Times the instruction starting at each slot ran (a run that faulted
    /// on an instruction counts it).
    pub runs: Vec<u64>,
    /// At each conditional jump, how many of its runs jumped (the others
    /// fell through); `None` at every other slot.
    pub taken: Vec<Option<u64>>,
}

/// Counts of every program of a VM (indexed as [`Vm::programs`]), summed
/// over runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub programs: Vec<ProgramCoverage>,
}

impl Coverage {
    /// Zero counts for `vm`'s programs.
    fn zero<E>(vm: &Vm<E>) -> Coverage {
        let programs = vm
            .programs
            .iter()
            .map(|p| {
                let slots = p.slots();
                ProgramCoverage {
                    runs: vec![0; slots.len()],
                    taken: slots
                        .iter()
                        .map(|s| s.op.is_conditional_jump().then_some(0))
                        .collect(),
                }
            })
            .collect();
        Coverage { programs }
    }

    /// Adds the counts of `other`, of the same programs (another worker's
    /// VM); programs or slots only one side has keep their counts.
    pub fn merge(&mut self, other: &Coverage) {
        if self.programs.len() < other.programs.len() {
            self.programs
                .resize_with(other.programs.len(), ProgramCoverage::default);
        }
        for (mine, theirs) in self.programs.iter_mut().zip(&other.programs) {
            if mine.runs.len() < theirs.runs.len() {
                mine.runs.resize(theirs.runs.len(), 0);
                mine.taken.resize(theirs.taken.len(), None);
            }
            for (a, b) in mine.runs.iter_mut().zip(&theirs.runs) {
                *a += b;
            }
            for (a, b) in mine.taken.iter_mut().zip(&theirs.taken) {
                if let Some(b) = b {
                    *a = Some(a.unwrap_or(0) + b);
                }
            }
        }
    }
}

impl<E> Vm<E> {
    /// Counts every instruction run and every conditional jump's way from
    /// now on (`true`, counts from zero), or stops (`false`). Covering
    /// runs are interpreted, step by step, whatever engine is enabled.
    pub fn set_coverage(&mut self, on: bool) {
        self.cover = on.then(|| Box::new(Coverage::zero(self)));
    }

    /// Whether runs count coverage ([`Vm::set_coverage`]).
    pub fn is_covering(&self) -> bool {
        self.cover.is_some()
    }

    /// The counts so far (`None` without [`Vm::set_coverage`]).
    pub fn coverage(&self) -> Option<&Coverage> {
        self.cover.as_deref()
    }

    /// The counts so far; counting goes on from zero.
    pub fn take_coverage(&mut self) -> Option<Coverage> {
        let fresh = self.cover.as_ref().map(|_| Box::new(Coverage::zero(self)));
        std::mem::replace(&mut self.cover, fresh).map(|c| *c)
    }

    /// A run counted into `self.cover` (set), one interpreted step at a time.
    pub(crate) fn execute_covering<const COUNT: bool, const CHECK: bool>(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Result<u64, VmError> {
        let mut cover = self.cover.take().expect("a covering VM");
        let mut m = self.start::<COUNT>(mem, args);
        let result = self.steps::<COUNT, CHECK>(env, mem, &mut m, &mut cover);
        self.machine = Some(m);
        self.cover = Some(cover);
        result
    }

    fn steps<const COUNT: bool, const CHECK: bool>(
        &self,
        env: &mut E,
        mem: &mut Memory<'_>,
        m: &mut Machine,
        cover: &mut Coverage,
    ) -> Result<u64, VmError> {
        loop {
            let (cur, pc) = (m.cur, m.pc);
            let slot = &self.programs[cur].slots()[pc];
            let counts = &mut cover.programs[cur];
            counts.runs[pc] += 1;
            let target = slot.op.is_conditional_jump().then_some(slot.off as usize);
            if let Some(r0) = self.resume::<COUNT, CHECK, true>(env, mem, m)? {
                return Ok(r0);
            }
            // A jump to the next slot goes there either way: not taken.
            if let Some(target) = target
                && target != pc + 1
                && m.cur == cur
                && m.pc == target
                && let Some(taken) = &mut counts.taken[pc]
            {
                *taken += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{HelperTable, Memory, Program, SimEnv, Vm};

    /// r2 == 0 jumps over `mov r0, 1`; a loop counts r3 down to 0.
    const PROGRAM: &str = "mov %r0, 0\n\
                           jeq %r2, 0, +1\n\
                           mov %r0, 1\n\
                           mov %r3, 3\n\
                           sub %r3, 1\n\
                           jne %r3, 0, -2\n\
                           lddw %r4, 0x1234\n\
                           exit";

    fn vm() -> Vm<SimEnv> {
        let insns = isa::assemble(PROGRAM).unwrap();
        Vm::new(Program::new(insns).unwrap(), &HelperTable::new()).unwrap()
    }

    fn run(vm: &mut Vm<SimEnv>, r2: u64) -> u64 {
        let mut mem = Memory::new();
        vm.run(&mut SimEnv::default(), &mut mem, [0, r2, 0, 0, 0])
            .unwrap()
            .r0
    }

    #[test]
    fn counts_instructions_and_the_way_of_each_jump() {
        let mut vm = vm();
        vm.set_coverage(true);
        assert_eq!(run(&mut vm, 0), 0);
        assert_eq!(run(&mut vm, 5), 1);
        assert_eq!(run(&mut vm, 0), 0);
        let c = vm.coverage().unwrap();
        let p = &c.programs[0];
        // Slots: 0 mov, 1 jeq, 2 mov, 3 mov, 4 sub, 5 jne, 6-7 lddw, 8 exit.
        assert_eq!(&p.runs[..9], &[3, 3, 1, 3, 9, 9, 3, 0, 3]);
        assert_eq!(p.taken[1], Some(2));
        assert_eq!(p.taken[5], Some(6));
        assert_eq!(p.taken[0], None);
        assert_eq!(p.taken[4], None);
        // The instruction count is the run's, as without coverage.
        assert_eq!(vm.last_stats().insns, 11);
    }

    #[test]
    fn taking_the_counts_starts_again_and_workers_add_up() {
        let mut vm = vm();
        vm.set_coverage(true);
        run(&mut vm, 0);
        let first = vm.take_coverage().unwrap();
        assert_eq!(first.programs[0].runs[0], 1);
        assert_eq!(vm.coverage().unwrap().programs[0].runs[0], 0);
        run(&mut vm, 1);
        let mut sum = vm.take_coverage().unwrap();
        sum.merge(&first);
        assert_eq!(sum.programs[0].runs[..3], [2, 2, 1]);
        assert_eq!(sum.programs[0].taken[1], Some(1));
        vm.set_coverage(false);
        assert!(vm.take_coverage().is_none());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_covering_run_is_interpreted_under_the_jit_too() {
        let mut vm = vm();
        vm.enable_jit().unwrap();
        vm.set_coverage(true);
        assert_eq!(run(&mut vm, 0), 0);
        let p = &vm.coverage().unwrap().programs[0];
        assert_eq!(&p.runs[..9], &[1, 1, 0, 1, 3, 3, 1, 0, 1]);
        assert_eq!(p.taken[5], Some(2));
    }
}
