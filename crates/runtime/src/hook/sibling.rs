//! Hooks for other threads on the same program and maps.

use std::sync::Arc;

use vm::Vm;

use super::{CTX_SIZE, Hook, HookError, helper_table, resolve_tail_call};
use crate::env::Env;
use crate::lowmem::LowBuf;

impl Hook {
    /// A new hook running the same program of the same object over the
    /// same maps, on (simulated) CPU `cpu`, for another thread: as the
    /// kernel runs one program on every CPU. It has its own VM state,
    /// packet buffer and run state ([`Env`]), its own pseudo-random
    /// numbers ([`vm::SimEnv::for_cpu`]), and this hook's settings: the
    /// instruction budget, access counting, coverage counting (its own
    /// counts, from zero), the routing table, the JIT if
    /// enabled here, and trust if this hook is trusted.
    ///
    /// `cpu` picks the per-CPU maps' slot, so it must be below the CPU
    /// count the image was loaded with ([`crate::LoadOptions::ncpus`]) when
    /// the object has per-CPU maps.
    pub fn sibling(&self, cpu: u32) -> Result<Hook, HookError> {
        if let Some(m) = self
            .env
            .maps
            .iter()
            .find(|m| m.map_type().is_percpu() && cpu >= m.ncpus())
        {
            return Err(HookError::Cpu {
                cpu,
                map: m.name().to_string(),
                ncpus: m.ncpus(),
            });
        }
        let table = helper_table(&self.kind)?;
        let mut vm = Vm::with_programs(
            self.vm.programs().to_vec(),
            &table,
            Some(resolve_tail_call as vm::TailCallFn<Env>),
        )?;
        vm.set_entry(self.env.vm_program_of[self.program].expect("the entry is loaded"));
        vm.set_budget(self.vm.budget());
        vm.set_coverage(self.vm.is_covering());
        if self.vm.is_trusted() {
            // SAFETY: trust transfers. The verifier accepted every program
            // of this hook's VM (the caller of `trust_verified` promised)
            // against these maps; the sibling runs the very same programs
            // (the same resolved instructions, map addresses included) over
            // the very same maps (shared, so their sizes and frozen
            // contents are those the verifier saw), with the same program
            // type, so the same context layout and packet frame. Only the
            // CPU differs, which the verifier treats as an unknown scalar
            // (`bpf_get_smp_processor_id`) or hides behind a per-CPU
            // lookup whose value has the same size on every CPU, within
            // the map's slots (`cpu < ncpus`, checked above). Concurrency
            // adds nothing a verified program can observe beyond what the
            // kernel allows: values change under it as on the kernel's CPUs.
            unsafe { vm.trust_verified() };
            vm.set_stack_depth(self.vm.stack_depth());
        }
        let mut env = Env::new(Arc::clone(&self.env.maps), cpu);
        env.vm_program_of = self.env.vm_program_of.clone();
        env.fib = self.env.fib.clone();
        let mut hook = Hook {
            vm,
            env,
            object: Arc::clone(&self.object),
            program: self.program,
            kind: self.kind.clone(),
            buf: LowBuf::new(super::BUF_LEN).map_err(|e| HookError::Memory(e.to_string()))?,
            ctx: Box::new([0; CTX_SIZE]),
            counting: self.counting,
            // Its own regions (its own packet buffer and context), mapped
            // on its first run.
            mem: vm::Memory::new(),
            mapped: false,
            places: Vec::new(),
            ctx_kind: self.ctx_kind,
            devmap: self.devmap,
            both: vm::Stats::default(),
            skb: super::SkbFields::default(),
            followup: None,
            batch: super::batch::Slots::default(),
        };
        if self.jit_enabled() {
            hook.enable_jit()?;
        }
        Ok(hook)
    }
}
