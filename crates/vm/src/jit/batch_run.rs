//! The driver of batch runs (`vm::batch`): enters the batch code's packet
//! loop, and finishes in Rust a packet that left native code (as
//! `drive_from` finishes any run), then stops after it.

use super::{Host, codegen, natives};
use crate::batch::{BatchHooks, BatchPacket, BatchResult, BatchState, BatchStop, NotBatchable};
use crate::{Memory, STACK_SIZE, Vm};

impl<E> Vm<E> {
    /// Compiles the batch variant for the stack bytes runs zero now, if
    /// it is not there.
    fn compile_batch(&mut self) -> Result<(), NotBatchable> {
        let zeroed = self.zeroed_stack();
        let jit = self.jit.as_ref().ok_or(NotBatchable::NoJit)?;
        if jit.batch.as_ref().is_some_and(|(z, _)| *z == zeroed) {
            return Ok(());
        }
        let codes = (self.programs.iter().enumerate())
            .map(|(i, p)| {
                let lookups = self.lookups_of(i);
                codegen::compile(p.slots(), false, natives::<E>(), lookups, Some(zeroed))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| NotBatchable::NoCode)?;
        self.jit.as_mut().expect("checked above").batch = Some((zeroed, codes));
        Ok(())
    }

    pub(crate) fn drive_batch(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        hooks: &BatchHooks<E>,
        packets: &[BatchPacket],
        results: &mut [BatchResult],
    ) -> Result<BatchStop, NotBatchable> {
        if packets.is_empty() {
            return Ok(BatchStop::Done);
        }
        self.compile_fast();
        self.compile_batch()?;
        let mut m = self.start::<false>(mem, [hooks.ctx, 0, 0, 0, 0]);
        let stack_top = m.r[10];
        let jit = self.jit.as_ref().expect("compiled above");
        let (Some(fast), Some((_, batch))) = (&jit.fast, &jit.batch) else {
            self.machine = Some(m);
            return Err(NotBatchable::NoCode);
        };
        let Some((enter, at)) = batch[self.entry].entry(0) else {
            // The first instruction is the interpreter's.
            self.machine = Some(m);
            return Err(NotBatchable::NoCode);
        };
        let mut state = BatchState {
            next: 0,
            len: packets.len() as u64,
            packets: packets.as_ptr(),
            results: results.as_mut_ptr(),
            ctx: hooks.ctx,
            entry: at as u64,
            entry_prog: self.entry as u64,
            budget: self.budget,
            stack_top,
            loud: 0,
            status: 0,
            synced: 0,
            sync: hooks.sync as *const (),
            quiet: hooks.quiet,
        };
        m.batch = &mut state;
        let stop = 'stop: {
            state.status = 0;
            m.depth = 0;
            mem.stack.start = stack_top - STACK_SIZE as u64;
            mem.stack.len = STACK_SIZE as u64;
            let mut host = Host {
                helpers: &self.helpers,
                env: &mut *env,
                mem: (mem as *mut Memory<'_>).cast::<Memory<'static>>(),
                codes: batch.as_slice(),
                tail_calls: self.tail_calls,
            };
            m.host = (&mut host as *mut Host<E>).cast::<()>();
            m.mem = (mem as *const Memory<'_>).cast::<Memory<'static>>();
            // SAFETY: `at` is the entry program's first block in the batch
            // variant, compiled without checks for this trusted VM
            // (`batch_ready`); `state` outlives the call, its `packets` and
            // `results` point at `len` elements the caller lent us.
            unsafe { enter(&mut *m, at) };
            m.host = std::ptr::null_mut();
            match state.status {
                2 => break 'stop BatchStop::Done,
                1 => {
                    // The packet's counts, for `Vm::last_stats`.
                    m.stats.insns = state.budget - m.left;
                    break 'stop BatchStop::After(state.next as usize - 1);
                }
                _ => {}
            }
            // The packet left native code: the interpreter's instruction,
            // the budget, or a helper's error. Finish it as any run.
            let i = state.next as usize;
            // SAFETY: `sync` is `hooks.sync`, for this `E`.
            unsafe { state.sync_now(env, mem) };
            if let Some(kind) = m.error.take() {
                break 'stop BatchStop::Failed(i, self.fail(m.cur, m.pc, kind));
            }
            let finished = if m.done != 0 {
                // Ended where it left (a legacy load outside the packet).
                m.stats.insns = self.budget - m.left;
                Ok(m.r[0])
            } else {
                self.drive_from::<false, false>(fast, env, mem, &mut m)
            };
            match finished {
                Ok(r0) => {
                    results[i] = BatchResult {
                        r0,
                        insns: m.stats.insns,
                        helper_calls: m.stats.helper_calls,
                        tail_calls: m.stats.tail_calls,
                    };
                    // Whatever the interpreter's instruction did is the
                    // embedder's to read.
                    BatchStop::After(i)
                }
                Err(e) => BatchStop::Failed(i, e),
            }
        };
        m.batch = std::ptr::null_mut();
        self.machine = Some(m);
        Ok(stop)
    }
}
