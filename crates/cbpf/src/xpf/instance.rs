//! An xPF program and its persistent memory, run in the interpreter: one
//! packet at a time, with user space's memory operations between packets.

use super::XpfOptions;
use super::check::{Shape, shape};
use super::memory::{Memory, VecBlocks};
use crate::check::CheckError;
use crate::insn::Insn;
use crate::interp::{Filter, Meta, RunError};

/// A packet's result under xPF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XpfVerdict {
    /// What `ret` returned.
    pub ret: u32,
    /// Instructions run, the handler's included.
    pub insns: u64,
    /// Whether the budget ran out (the handler ran, or the filter ended
    /// with 0 where there is none).
    pub exceeded: bool,
}

/// A checked xPF program with its memory.
#[derive(Clone, Debug)]
pub struct Instance {
    filter: Filter,
    shape: Shape,
    opts: XpfOptions,
    memory: Memory<VecBlocks>,
    packets: u64,
    exceptions: u64,
}

impl Instance {
    /// Checks `prog` for an instance of `opts` and gives it block 0.
    pub fn new(prog: &[Insn], opts: XpfOptions) -> Result<Instance, CheckError> {
        let shape = shape(prog, &opts)?;
        let memory = Memory::new(
            VecBlocks::new(opts.words, opts.blocks),
            opts.words,
            opts.blocks,
        )
        .expect("vectors take any write");
        Ok(Instance {
            filter: Filter::new_xpf(prog, &shape),
            shape,
            opts,
            memory,
            packets: 0,
            exceptions: 0,
        })
    }

    pub fn options(&self) -> &XpfOptions {
        &self.opts
    }

    /// The persistent memory, for `mread`.
    pub fn memory(&self) -> &Memory<VecBlocks> {
        &self.memory
    }

    /// The persistent memory, for `malloc`, `mwrite` and `mswitch`
    /// (between packets: a packet holds the instance while it runs).
    pub fn memory_mut(&mut self) -> &mut Memory<VecBlocks> {
        &mut self.memory
    }

    /// Packets run.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Packets whose budget ran out.
    pub fn exceptions(&self) -> u64 {
        self.exceptions
    }

    /// Whether the program loops (so the budget is counted).
    pub fn loops(&self) -> bool {
        self.shape.loops
    }

    /// Runs the filter over one packet.
    pub fn run(&mut self, packet: &[u8], meta: &Meta) -> Result<XpfVerdict, RunError> {
        let r = self.filter.run_xpf(
            packet,
            meta,
            self.memory.store_mut().active_mut(),
            self.opts.budget,
            self.shape.handler,
        )?;
        self.packets += 1;
        self.exceptions += u64::from(r.exceeded);
        Ok(XpfVerdict {
            ret: r.verdict.ret,
            insns: r.verdict.insns,
            exceeded: r.exceeded,
        })
    }
}
