//! The sluice eBPF virtual machine.
//!
//! A [`Program`] is validated and pre-decoded once; a [`Vm`] runs it with a
//! [`HelperTable`] against the [`Memory`] regions the embedder maps (context,
//! packet, map values), with its own 512-byte stack per call frame. Every
//! memory access is checked; errors name the instruction, address and
//! region. Two modes: [`Vm::run`] counts executed instructions only,
//! [`Vm::run_counting`] also counts memory accesses per region;
//! [`Vm::set_coverage`] makes runs count each instruction and each
//! conditional jump's way ([`Coverage`]). Programs
//! the verifier accepted may skip the per-access checks
//! ([`Vm::trust_verified`]).
//!
//! ```
//! use vm::{Memory, Program, SimEnv, Vm, HelperTable};
//! let insns = isa::assemble("mov %r0, %r2\nexit").unwrap();
//! let mut vm = Vm::new(Program::new(insns).unwrap(), &HelperTable::<SimEnv>::new()).unwrap();
//! let mut mem = Memory::new();
//! let out = vm.run(&mut SimEnv::default(), &mut mem, [0, 7, 0, 0, 0]).unwrap();
//! assert_eq!(out.r0, 7);
//! assert_eq!(out.stats.insns, 2);
//! ```

mod batch;
mod cover;
mod error;
pub mod helpers;
mod interp;
#[cfg(target_arch = "x86_64")]
mod jit;
mod memops;
pub mod memory;
mod op;
mod program;
mod trusted;

pub use batch::{BatchHooks, BatchPacket, BatchResult, BatchStop, HelperSet, NotBatchable};
pub use cover::{Coverage, ProgramCoverage};
pub use error::{VmError, VmErrorKind};
pub use helpers::{
    BasicEnv, Callback, Helper, HelperCtx, HelperError, HelperFn, HelperTable, Resume, SimEnv,
    register_basic,
};
pub use memory::{Access, HelperTally, MemFault, Memory, Region, RegionKind};
pub use program::{CORE_POISON, LoadError, Program};
pub use trusted::{ArrayLookup, DirectLookup, Lookup};

#[cfg(target_arch = "x86_64")]
pub use jit::JitError;

/// Function handles (`lddw func(...)`): `FUNC_BASE + slot`, never a
/// mapped address.
const FUNC_BASE: u64 = 0xffff_b000_0000_0000;

/// The handle of the function starting at `slot`.
pub fn func_handle(slot: usize) -> u64 {
    FUNC_BASE + slot as u64
}

/// The slot a function handle designates.
pub fn func_slot(handle: u64) -> Option<usize> {
    handle
        .checked_sub(FUNC_BASE)
        .filter(|&s| s < 1 << 32)
        .map(|s| s as usize)
}

/// Bytes of stack per call frame, as in the kernel.
pub const STACK_SIZE: usize = 512;
/// Frames the main program and its bpf-to-bpf calls may use together.
pub const MAX_FRAMES: usize = 8;
/// Instructions a run may execute unless [`Vm::set_budget`] says otherwise.
pub const DEFAULT_BUDGET: u64 = 100_000_000;

/// What one run cost.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Stats {
    /// Instructions executed (an `lddw` counts once).
    pub insns: u64,
    /// Helper calls made.
    pub helper_calls: u64,
    /// Tail calls taken.
    pub tail_calls: u64,
    /// Loads per region kind (indexed by `RegionKind as usize`); counted by
    /// [`Vm::run_counting`] only.
    pub loads: [u64; RegionKind::COUNT],
    /// Stores per region kind; atomics count as a load and a store.
    pub stores: [u64; RegionKind::COUNT],
    /// Conditional jumps executed, and how many of them jumped; counted by
    /// [`Vm::run_counting`] only.
    pub branches: u64,
    pub taken: u64,
    /// What helpers read and wrote in program memory (keys, values,
    /// packet bytes); counted by [`Vm::run_counting`] only.
    pub helper_mem: HelperTally,
}

impl Stats {
    pub fn loads_of(&self, kind: RegionKind) -> u64 {
        self.loads[kind as usize]
    }
    pub fn stores_of(&self, kind: RegionKind) -> u64 {
        self.stores[kind as usize]
    }
    /// All memory accesses the program made.
    pub fn accesses(&self) -> u64 {
        self.loads.iter().sum::<u64>() + self.stores.iter().sum::<u64>()
    }

    /// Adds the cost of another run (a program the packet went on to).
    pub fn accumulate(&mut self, other: &Stats) {
        self.insns += other.insns;
        self.helper_calls += other.helper_calls;
        self.tail_calls += other.tail_calls;
        for k in 0..RegionKind::COUNT {
            self.loads[k] += other.loads[k];
            self.stores[k] += other.stores[k];
        }
        self.branches += other.branches;
        self.taken += other.taken;
        let (h, o) = (&mut self.helper_mem, &other.helper_mem);
        h.reads += o.reads;
        h.read_bytes += o.read_bytes;
        h.writes += o.writes;
        h.write_bytes += o.write_bytes;
    }
}

/// The result of a run that reached `exit`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RunResult {
    pub r0: u64,
    pub stats: Stats,
}

/// The register file of a run: r0 to r10 in an array of 16 (a register
/// field is 4 bits). The interpreter and its memory operations share it.
pub(crate) type Regs = [u64; 16];

/// The VM's stack: `MAX_FRAMES` frames of `STACK_SIZE` bytes, frame 0 at
/// the top. Words rather than bytes so a frame is zeroed with wide stores.
#[repr(C, align(64))]
pub(crate) struct StackMem(pub(crate) [[u64; STACK_SIZE / 8]; MAX_FRAMES]);

/// Resolves `bpf_tail_call(ctx, map, index)`: the index of the program to
/// continue with, or `None` (the call then falls through, as in the kernel).
pub type TailCallFn<E> = fn(env: &mut E, map: u64, index: u64) -> Option<usize>;

/// Tail calls one run may make (the kernel's `MAX_TAIL_CALL_CNT`).
pub const MAX_TAIL_CALLS: u32 = 33;

/// Loaded programs with their helpers, ready to run any number of times.
/// A run starts in the entry program; tail calls may move to the others.
pub struct Vm<E> {
    programs: Vec<Program>,
    entry: usize,
    helpers: HelperTable<E>,
    tail_calls: Option<TailCallFn<E>>,
    stack: Box<StackMem>,
    budget: u64,
    /// Plain loads and stores skip the region check (see `trust_verified`).
    trusted: bool,
    /// The run state, kept between runs (`interp::Machine`).
    machine: Option<Box<interp::Machine>>,
    /// Bytes of the entry frame a trusted run zeroes (`trusted.rs`).
    stack_depth: usize,
    /// Per program, the array lookups trusted native code does inline.
    array_lookups: Vec<Vec<(usize, Lookup)>>,
    /// Coverage counts, when runs count them (`Vm::set_coverage`).
    cover: Option<Box<Coverage>>,
    /// Machine code for the programs, when the JIT is enabled.
    #[cfg(target_arch = "x86_64")]
    jit: Option<jit::Jit>,
}

impl<E> Vm<E> {
    /// Binds a program to helpers; fails if the program calls a helper the
    /// table lacks (never at run time).
    pub fn new(program: Program, helpers: &HelperTable<E>) -> Result<Vm<E>, LoadError> {
        Vm::with_programs(vec![program], helpers, None)
    }

    /// Binds several programs (tail-call targets of one another) to
    /// helpers and a tail-call resolver. Program 0 is the entry.
    pub fn with_programs(
        programs: Vec<Program>,
        helpers: &HelperTable<E>,
        tail_calls: Option<TailCallFn<E>>,
    ) -> Result<Vm<E>, LoadError> {
        if programs.is_empty() {
            return Err(LoadError::Empty);
        }
        for program in &programs {
            let missing = program
                .helper_calls()
                .find(|&(_, id)| id < 0 || helpers.get(id as u64).is_none())
                .or_else(|| {
                    let pc = program.tail_call_pc()?;
                    tail_calls
                        .is_none()
                        .then_some((pc, i64::from(program::TAIL_CALL)))
                });
            if let Some((pc, id)) = missing {
                return Err(LoadError::UnknownHelper {
                    pc,
                    text: program
                        .insn_at(pc)
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    id,
                    name: isa::helper_name(id),
                });
            }
        }
        Ok(Vm {
            programs,
            entry: 0,
            helpers: helpers.clone(),
            tail_calls,
            stack: Box::new(StackMem([[0; STACK_SIZE / 8]; MAX_FRAMES])),
            budget: DEFAULT_BUDGET,
            trusted: false,
            machine: None,
            stack_depth: STACK_SIZE,
            array_lookups: Vec::new(),
            cover: None,
            #[cfg(target_arch = "x86_64")]
            jit: None,
        })
    }

    /// Chooses the program runs start in.
    #[inline]
    pub fn set_entry(&mut self, index: usize) {
        assert!(index < self.programs.len(), "no program {index}");
        self.entry = index;
    }

    pub fn programs(&self) -> &[Program] {
        &self.programs
    }

    /// The entry program.
    pub fn program(&self) -> &Program {
        &self.programs[self.entry]
    }

    /// Limits the instructions of one run.
    pub fn set_budget(&mut self, insns: u64) {
        self.budget = insns;
    }

    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Runs plain loads and stores without the per-access region check,
    /// the fast mode for verified programs. Helpers, atomics and legacy
    /// packet loads keep their checks; [`Vm::run_counting`] still
    /// classifies (and so checks) every access.
    ///
    /// # Safety
    /// Every program of this VM must have been accepted by the verifier
    /// for the context, packet layout and maps (sizes, frozen contents) it
    /// will run with: an access the verifier did not prove touches
    /// arbitrary memory of this process.
    pub unsafe fn trust_verified(&mut self) {
        self.trusted = true;
    }

    /// Back to checking every access.
    pub fn distrust(&mut self) {
        self.trusted = false;
    }

    /// Whether loads and stores run unchecked.
    pub fn is_trusted(&self) -> bool {
        self.trusted
    }

    /// Runs the program with `args` in r1-r5, counting instructions.
    pub fn run(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Result<RunResult, VmError> {
        let r0 = self.run_mode::<false>(env, mem, args)?;
        Ok(RunResult {
            r0,
            stats: *self.last_stats(),
        })
    }

    /// Runs the program and also counts memory accesses per region.
    pub fn run_counting(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Result<RunResult, VmError> {
        let r0 = self.run_mode::<true>(env, mem, args)?;
        Ok(RunResult {
            r0,
            stats: *self.last_stats(),
        })
    }

    /// [`Vm::run`] (or [`Vm::run_counting`] when `counting`) returning r0
    /// only: the run's [`Stats`] stay in the VM, for [`Vm::last_stats`]
    /// (the per-packet path, which need not copy them).
    #[inline]
    pub fn run_r0(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
        counting: bool,
    ) -> Result<u64, VmError> {
        if counting {
            self.run_mode::<true>(env, mem, args)
        } else {
            self.run_mode::<false>(env, mem, args)
        }
    }

    /// What the last run that reached `exit` cost (all zeros before the
    /// first run; unspecified after a run that failed).
    #[inline]
    pub fn last_stats(&self) -> &Stats {
        static NONE: Stats = Stats {
            insns: 0,
            helper_calls: 0,
            tail_calls: 0,
            loads: [0; RegionKind::COUNT],
            stores: [0; RegionKind::COUNT],
            branches: 0,
            taken: 0,
            helper_mem: HelperTally {
                reads: 0,
                read_bytes: 0,
                writes: 0,
                write_bytes: 0,
            },
        };
        self.machine.as_ref().map_or(&NONE, |m| &m.stats)
    }

    /// The loads and stores of the last counting run per place: `[0]` the
    /// stack, `[i + 1]` the embedder's region `i` (in the order they were
    /// added to the [`Memory`]), each `[loads, stores]`. Empty before the
    /// first counting run.
    pub fn last_region_accesses(&self) -> &[[u64; 2]] {
        self.machine.as_ref().map_or(&[], |m| &m.regions)
    }

    fn run_mode<const COUNT: bool>(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Result<u64, VmError> {
        if COUNT {
            mem.reset_helper_tally();
        }
        let result = self.run_engine::<COUNT>(env, mem, args);
        mem.stack.len = 0;
        if COUNT && let Some(m) = self.machine.as_mut() {
            m.stats.helper_mem = mem.helper_tally();
        }
        result
    }

    #[inline(always)]
    fn run_engine<const COUNT: bool>(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Result<u64, VmError> {
        if self.cover.is_some() {
            return if self.trusted {
                self.execute_covering::<COUNT, false>(env, mem, args)
            } else {
                self.execute_covering::<COUNT, true>(env, mem, args)
            };
        }
        #[cfg(target_arch = "x86_64")]
        if self.jit.is_some() {
            return if self.trusted {
                self.execute_jit::<COUNT, false>(env, mem, args)
            } else {
                self.execute_jit::<COUNT, true>(env, mem, args)
            };
        }
        if self.trusted {
            self.execute::<COUNT, false>(env, mem, args)
        } else {
            self.execute::<COUNT, true>(env, mem, args)
        }
    }
}
