//! The path walk: every path from the entry is followed instruction by
//! instruction with its abstract [`State`]; a conditional jump whose both
//! outcomes are possible forks the path. At jump targets the state is
//! compared with states already explored there: a path whose state one of
//! them covers stops (pruning), one equal to a state still being explored
//! on the same path is an infinite loop.

use std::collections::HashMap;
use std::time::Instant;

use isa::{CallTarget, Insn, Lddw};
use obj::{Program, ProgramKind};

use crate::cfg::{Cfg, CfgError};
use crate::live::Liveness;
// One of the workspace's few module loops, on purpose: `precise.rs`
// (precision) and `spin.rs` (bpf_spin_lock) are more of the walker's own
// methods (`impl Verifier`), split off by subject to keep this file within
// bounds; they use its `Verifier` and it calls them.
use crate::precise::{Demand, Entry};
use crate::state::{Frame, Kind, Reg, State, covers};
use crate::{MapView, Rejection, SafetyRule, VerifyOptions, VerifyReport, kfmt};

/// Why a path fails: the rule, the kernel's words, plain words.
#[derive(Clone, Debug)]
pub struct Fail {
    pub rule: SafetyRule,
    pub kernel: String,
    pub reason: String,
    pub origin: Option<usize>,
}

impl Fail {
    pub fn with_origin(mut self, origin: Option<usize>) -> Fail {
        self.origin = origin;
        self
    }
}

pub fn fail(rule: SafetyRule, kernel: impl Into<String>, reason: impl Into<String>) -> Fail {
    Fail {
        rule,
        kernel: kernel.into(),
        reason: reason.into(),
        origin: None,
    }
}

pub type Res<T> = Result<T, Fail>;

/// What follows an instruction on the current path.
pub enum Flow {
    Next(usize),
    /// Continue at `next`; also explore `other` from `at`.
    Fork {
        next: usize,
        at: usize,
        other: State,
    },
    /// The path ends (program exit).
    Done,
}

/// A state stored at a prune point.
pub struct Node {
    pub pc: usize,
    pub state: State,
    pub parent: Option<usize>,
    /// Paths still being explored from here; 0 once all ended safely.
    branches: u32,
    /// The instructions from the parent's state to this one.
    pub history: Vec<Entry>,
}

struct Pending {
    pc: usize,
    state: State,
    parent: Option<usize>,
    history: Vec<Entry>,
}

pub struct Verifier<'a> {
    /// Slots poisoned by CO-RE, and why.
    pub poisoned: &'a [(usize, String)],
    pub kind: &'a ProgramKind,
    /// The instruction starting at each slot.
    pub code: Vec<Option<Insn>>,
    pub cfg: Cfg,
    pub maps: &'a [MapView],
    pub opts: &'a VerifyOptions,
    live: Liveness,
    prune_at: Vec<bool>,
    explored: HashMap<usize, Vec<usize>>,
    pub nodes: Vec<Node>,
    pending: Vec<Pending>,
    /// The current path: its last stored state and the instructions since.
    pub parent: Option<usize>,
    pub hist: Vec<Entry>,
    /// What the instruction being checked touched, for its history entry.
    pub last_stack: Option<(u8, u8)>,
    pub last_linked: (u16, u64, bool),
    pub processed: usize,
    next_id: u32,
    pub log: Vec<String>,
    pruned: usize,
    last_stored: usize,
    /// The instruction that made each nullable pointer id.
    pub origins: HashMap<u32, usize>,
    /// Deepest stack use per function start.
    pub depth: HashMap<usize, usize>,
    /// A callback the helper call just checked runs: its start and the
    /// state it starts in.
    pub callback: Option<(usize, State)>,
}

/// States kept per instruction for pruning.
const MAX_STATES_PER_INSN: usize = 64;

/// Instructions processed between two stored states.
const STORE_EVERY: usize = 8;

pub fn run(prog: &Program, maps: &[MapView], opts: &VerifyOptions) -> VerifyReport {
    let start = Instant::now();
    let mut report = VerifyReport {
        result: Ok(()),
        insns_processed: 0,
        states: 0,
        pruned: 0,
        stack_depth: 0,
        micros: 0,
        log: Vec::new(),
    };
    let reject = |rule, insn, kernel: String, reason: String| Rejection {
        rule,
        insn,
        kernel,
        reason,
        state: String::new(),
        origin: None,
    };
    if let ProgramKind::Unsupported(why) = &prog.kind {
        report.result = Err(reject(SafetyRule::Unsupported, 0, why.clone(), why.clone()));
        return report;
    }
    if let Some((pc, name)) = prog.kfuncs.first() {
        report.result = Err(reject(
            SafetyRule::Unsupported,
            *pc,
            format!("kernel function {name} is not modelled"),
            format!(
                "the program calls the kernel function {name}, which sluice's verifier and VM do not provide"
            ),
        ));
        return report;
    }
    let cfg = match Cfg::build(&prog.insns) {
        Ok(c) => c,
        Err(e) => {
            let insn = cfg_insn(&e);
            report.result = Err(reject(
                SafetyRule::ControlFlow,
                insn,
                e.to_string(),
                cfg_reason(&e),
            ));
            return report;
        }
    };
    let mut code = vec![None; cfg.slots];
    for (i, insn) in prog.insns.iter().enumerate() {
        code[cfg.slot_of[i]] = Some(*insn);
    }
    let live = Liveness::compute(&code);
    let prune_at = prune_points(&code);
    let mut v = Verifier {
        poisoned: &prog.core_poisoned,
        kind: &prog.kind,
        code,
        cfg,
        maps,
        opts,
        live,
        prune_at,
        explored: HashMap::new(),
        nodes: Vec::new(),
        pending: Vec::new(),
        parent: None,
        hist: Vec::new(),
        last_stack: None,
        last_linked: (0, 0, false),
        processed: 0,
        next_id: 0,
        log: Vec::new(),
        pruned: 0,
        last_stored: 0,
        origins: HashMap::new(),
        depth: HashMap::new(),
        callback: None,
    };
    report.result = v.walk().and_then(|()| v.check_stack_depth());
    report.insns_processed = v.processed;
    report.states = v.nodes.len();
    report.pruned = v.pruned;
    report.stack_depth = v.depth.get(&0).copied().unwrap_or(0);
    report.log = std::mem::take(&mut v.log);
    report.micros = start.elapsed().as_micros();
    report
}

fn cfg_insn(e: &CfgError) -> usize {
    match *e {
        CfgError::Empty => 0,
        CfgError::JumpOutOfRange { from, .. }
        | CfgError::JumpIntoLddw { from, .. }
        | CfgError::CallOutOfRange { from, .. } => from,
        CfgError::FallsOffEnd { insn, .. }
        | CfgError::Unreachable { insn }
        | CfgError::Callx { insn } => insn,
        CfgError::Recursion { ref chain } | CfgError::TooDeep { ref chain, .. } => {
            chain.last().copied().unwrap_or(0)
        }
    }
}

fn cfg_reason(e: &CfgError) -> String {
    match e {
        CfgError::Empty => "the program has no instructions".into(),
        CfgError::JumpOutOfRange { from, to } => format!(
            "the jump at insn {from} goes to insn {to}, outside its function: jumps must stay inside the function"
        ),
        CfgError::JumpIntoLddw { from, to } => format!(
            "the jump at insn {from} lands in the middle of the 16-byte lddw at insn {}",
            to - 1
        ),
        CfgError::CallOutOfRange { from, to } => {
            format!(
                "the call at insn {from} targets insn {to}, which is not an instruction of the program"
            )
        }
        CfgError::FallsOffEnd { insn, .. } => format!(
            "execution can run past the last instruction (insn {insn}): every function must end with exit or a jump"
        ),
        CfgError::Unreachable { insn } => format!(
            "insn {insn} can never execute; the kernel refuses dead code (remove it or build with optimisation)"
        ),
        CfgError::Recursion { .. } => {
            "a function calls itself (directly or through others): BPF has no recursion".into()
        }
        CfgError::TooDeep { frames, .. } => format!(
            "calls nest {frames} deep; the kernel allows at most 8 frames (inline some functions)"
        ),
        CfgError::Callx { .. } => {
            "indirect calls (callx) do not exist in the kernel: call helpers by their id".into()
        }
    }
}

/// Jump targets, fall-throughs of conditional jumps and returns from calls.
fn prune_points(code: &[Option<Insn>]) -> Vec<bool> {
    let mut at = vec![false; code.len()];
    for (s, insn) in code.iter().enumerate() {
        let Some(insn) = insn else { continue };
        let next = s + insn.slots();
        match insn {
            Insn::Jmp { off, .. } => {
                mark(&mut at, s as i64 + 1 + *off as i64);
                mark(&mut at, next as i64);
            }
            Insn::Ja { off } => mark(&mut at, s as i64 + 1 + *off as i64),
            Insn::Ja32 { off } => mark(&mut at, s as i64 + 1 + *off as i64),
            Insn::Call(CallTarget::Local(_)) => mark(&mut at, next as i64),
            // A callback returns to the helper call that runs it.
            Insn::Call(CallTarget::Helper(id)) if isa::calls_back((*id).into()) => at[s] = true,
            _ => {}
        }
    }
    at
}

fn mark(at: &mut [bool], t: i64) {
    if t >= 0 && (t as usize) < at.len() {
        at[t as usize] = true;
    }
}

enum Visit {
    Pruned,
    Continue,
}

impl<'a> Verifier<'a> {
    pub fn fresh_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    fn entry_state(&self) -> State {
        let mut frame = Frame::new(0, 0, 0);
        frame.regs[1] = Reg::pointer(Kind::Ctx);
        State {
            frames: vec![frame],
            refs: Vec::new(),
            lock: None,
            callback_calls: 0,
        }
    }

    fn walk(&mut self) -> Result<(), Rejection> {
        let entry = self.entry_state();
        self.pending.push(Pending {
            pc: 0,
            state: entry,
            parent: None,
            history: Vec::new(),
        });
        while let Some(Pending {
            mut pc,
            mut state,
            parent,
            history,
        }) = self.pending.pop()
        {
            self.parent = parent;
            self.hist = history;
            if self.opts.log && self.processed > 0 {
                self.log.push(format!("from {pc}: {}", state.describe()));
            }
            loop {
                match self.advance(pc, &mut state) {
                    Ok(Some(next)) => pc = next,
                    Ok(None) => break,
                    Err(f) => {
                        if self.opts.log {
                            self.log.push(f.kernel.clone());
                        }
                        return Err(Rejection {
                            rule: f.rule,
                            insn: pc,
                            kernel: f.kernel,
                            reason: f.reason,
                            state: state.describe(),
                            origin: f.origin,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// One instruction of the current path: the next pc, or `None` when the
    /// path ends.
    fn advance(&mut self, pc: usize, state: &mut State) -> Res<Option<usize>> {
        self.processed += 1;
        if self.processed > self.opts.insn_limit {
            return Err(fail(
                SafetyRule::Complexity,
                format!(
                    "BPF program is too large. Processed {} insn",
                    self.processed
                ),
                format!(
                    "the verifier walked {} instructions without proving every path safe: simplify the program, bound loops more tightly or split it with tail calls",
                    self.opts.insn_limit
                ),
            ));
        }
        if self.prune_at[pc] && matches!(self.visit(pc, state)?, Visit::Pruned) {
            self.pruned += 1;
            if self.opts.log {
                self.log.push(format!("{pc}: safe"));
            }
            self.path_done(self.parent);
            return Ok(None);
        }
        let insn = self.code[pc].expect("the walk stays on instruction starts");
        let frame = state.frames.len() - 1;
        self.last_stack = None;
        self.last_linked = (0, 0, false);
        let flow = self.step(pc, &insn, state)?;
        let mut entry = Entry::new(pc, frame);
        entry.stack = self.last_stack;
        (entry.linked, entry.linked_slots, entry.linked_far) = self.last_linked;
        self.hist.push(entry);
        if self.opts.log {
            self.log_insn(pc, &insn, state);
        }
        match flow {
            Flow::Next(n) => Ok(Some(n)),
            Flow::Fork { next, at, other } => {
                if let Some(p) = self.parent {
                    self.nodes[p].branches += 1;
                }
                self.pending.push(Pending {
                    pc: at,
                    state: other,
                    parent: self.parent,
                    history: self.hist.clone(),
                });
                Ok(Some(next))
            }
            Flow::Done => {
                self.path_done(self.parent);
                Ok(None)
            }
        }
    }

    fn log_insn(&mut self, pc: usize, insn: &Insn, state: &State) {
        let mut line = format!("{pc}: ({:02x}) {}", kfmt::opcode(insn), kfmt::insn(insn));
        let written = match *insn {
            Insn::Alu { dst, .. }
            | Insn::Neg { dst, .. }
            | Insn::Endian { dst, .. }
            | Insn::Lddw { dst, .. }
            | Insn::Load { dst, .. } => Some(dst.number()),
            Insn::Call(_) => Some(0),
            _ => None,
        };
        if let Some(r) = written {
            line.push_str(&format!("\t; R{r}={}", state.reg(r)));
        }
        self.log.push(line);
    }

    /// Whether register `r` of frame `fi` may be read later on this path.
    fn live_fn(&self, pc: usize, state: &State) -> impl Fn(usize, usize) -> bool + '_ {
        let top = state.frames.len() - 1;
        let returns: Vec<(usize, bool)> = state
            .frames
            .iter()
            .map(|f| (f.callsite, f.callback))
            .collect();
        move |fi, r| {
            if r == 10 {
                return true;
            }
            if fi == top {
                self.live.is_live(pc, r)
            } else {
                match returns[fi + 1] {
                    // Back from a callback, the caller runs the helper call
                    // again with its registers as they were.
                    (at, true) => self.live.is_live(at, r),
                    // A caller resumes after the call with r0 set and r1-r5
                    // scratched.
                    (at, false) => r >= 6 && self.live.is_live(at, r),
                }
            }
        }
    }

    fn visit(&mut self, pc: usize, state: &State) -> Res<Visit> {
        let callsite = matches!(self.code[pc], Some(Insn::Call(CallTarget::Helper(id))) if isa::calls_back(id.into()));
        let live = self.live_fn(pc, state);
        let mut pruned_by = None;
        if let Some(list) = self.explored.get(&pc) {
            for &n in list {
                let node = &self.nodes[n];
                if node.branches == 0 {
                    if covers(&node.state, state, &live, false) {
                        pruned_by = Some(n);
                        break;
                    }
                } else if callsite {
                    // Back from a callback at the call that runs it, in a
                    // state this path had here before (numbers alike, as
                    // imprecise ones were widened on the way back): more
                    // calls add nothing new. Not a loop: the helper bounds
                    // the calls.
                    if covers(&node.state, state, &live, true) {
                        pruned_by = Some(n);
                        break;
                    }
                } else if node.state.callback_calls == state.callback_calls
                    && covers(&node.state, state, &live, true)
                    && covers(state, &node.state, &live, true)
                {
                    return Err(fail(
                        SafetyRule::Complexity,
                        format!("infinite loop detected at insn {pc}"),
                        format!(
                            "the loop through insn {pc} comes back to it in the same state, so it never ends: make sure the loop variable changes and is bounded"
                        ),
                    ));
                }
            }
        }
        drop(live);
        if let Some(n) = pruned_by {
            // This path's future is the stored state's: what that future
            // depended on, this path's past must provide precisely too.
            let d = Demand::of_precise(&self.nodes[n].state);
            self.backtrack(d);
            let reads = Demand::of_live(&self.nodes[n].state);
            self.backtrack_reads(reads);
            return Ok(Visit::Pruned);
        }
        // Storing every visit would cost memory and comparisons in tight
        // loops: like the kernel, store only after some progress.
        if !callsite && self.processed - self.last_stored < STORE_EVERY {
            return Ok(Visit::Continue);
        }
        self.last_stored = self.processed;
        let idx = self.nodes.len();
        let mut stored = state.clone();
        stored.for_each_reg(|r| r.precise = false);
        for f in stored.frames.iter_mut() {
            for s in f.stack.iter_mut() {
                s.live = false;
            }
        }
        self.nodes.push(Node {
            pc,
            state: stored,
            parent: self.parent,
            branches: 1,
            history: std::mem::take(&mut self.hist),
        });
        self.parent = Some(idx);
        let list = self.explored.entry(pc).or_default();
        list.push(idx);
        if list.len() > MAX_STATES_PER_INSN {
            // Forget the oldest state: pruning and loop detection are
            // optimisations (the instruction limit still ends every walk).
            list.remove(0);
        }
        Ok(Visit::Continue)
    }

    fn path_done(&mut self, mut parent: Option<usize>) {
        while let Some(p) = parent {
            let node = &mut self.nodes[p];
            node.branches -= 1;
            if node.branches > 0 {
                break;
            }
            parent = node.parent;
        }
    }

    /// Reads register `r`, which must be initialised.
    pub fn read(&self, state: &State, r: u8) -> Res<Reg> {
        let reg = *state.reg(r);
        if !reg.is_init() {
            return Err(fail(
                SafetyRule::UninitRegister,
                format!("R{r} !read_ok"),
                format!("r{r} is read here but no value was ever written to it on this path"),
            ));
        }
        Ok(reg)
    }

    /// Checks that `r` may be written (r10 may not).
    pub fn writable(&self, r: u8) -> Res<()> {
        if r == 10 {
            return Err(fail(
                SafetyRule::FramePointer,
                "frame pointer is read only",
                "r10 is the frame pointer and cannot be changed: copy it to another register first",
            ));
        }
        Ok(())
    }

    fn step(&mut self, pc: usize, insn: &Insn, st: &mut State) -> Res<Flow> {
        let next = pc + insn.slots();
        match *insn {
            Insn::Alu {
                width,
                op,
                dst,
                src,
            } => self.alu(st, width, op, dst.number(), src)?,
            Insn::Neg { width, dst } => self.neg(st, width, dst.number())?,
            Insn::Endian { order, bits, dst } => self.endian(st, order, bits, dst.number())?,
            Insn::Ja { off } => return Ok(Flow::Next((pc as i64 + 1 + off as i64) as usize)),
            Insn::Ja32 { off } => return Ok(Flow::Next((pc as i64 + 1 + off as i64) as usize)),
            Insn::Jmp {
                width,
                cond,
                dst,
                src,
                off,
            } => {
                let target = (pc as i64 + 1 + off as i64) as usize;
                return self.cond_jump(st, width, cond, dst.number(), src, next, target);
            }
            Insn::Call(CallTarget::Helper(id)) => {
                if let Some((_, why)) = self.poisoned.iter().find(|(at, _)| *at == pc) {
                    return Err(fail(
                        SafetyRule::InvalidInstruction,
                        format!("invalid func unknown#{id}"),
                        format!(
                            "insn {pc} was poisoned by a CO-RE relocation that failed: {why} (guard it with bpf_core_field_exists(), or build against the target's types)"
                        ),
                    ));
                }
                crate::spin::call_allowed(st, id as u32)?;
                self.call_helper(pc, st, id)?;
                if let Some((start, other)) = self.callback.take() {
                    // Go on as if the helper has called the callback for
                    // the last time; explore one more call later.
                    return Ok(Flow::Fork {
                        next,
                        at: start,
                        other,
                    });
                }
            }
            Insn::Call(CallTarget::Local(off)) => {
                let target = (pc as i64 + 1 + off as i64) as usize;
                self.call_local(st, next, target)?;
                return Ok(Flow::Next(target));
            }
            Insn::Call(CallTarget::Kfunc { btf_id, .. }) => {
                return Err(fail(
                    SafetyRule::Unsupported,
                    format!("kernel function call #{btf_id} is not modelled"),
                    "kernel functions (kfuncs) are not modelled by sluice's verifier",
                ));
            }
            Insn::Callx { .. } => unreachable!("the control-flow checks refuse callx"),
            Insn::Exit => return self.exit(st),
            Insn::Lddw { dst, value } => self.lddw(st, dst.number(), value, next)?,
            Insn::Load {
                size,
                signed,
                dst,
                src,
                off,
            } => self.load(st, size, signed, dst.number(), src.number(), off)?,
            Insn::Store {
                size,
                dst,
                off,
                src,
            } => self.store(st, size, dst.number(), off, src)?,
            Insn::Atomic {
                size,
                op,
                fetch,
                dst,
                src,
                off,
            } => self.atomic(st, size, op, fetch, dst.number(), src.number(), off)?,
            Insn::LdAbs { size, .. } => self.ld_abs(st, size, None)?,
            Insn::LdInd { size, src, .. } => self.ld_abs(st, size, Some(src.number()))?,
        }
        Ok(Flow::Next(next))
    }

    fn lddw(&mut self, st: &mut State, dst: u8, value: Lddw, next: usize) -> Res<()> {
        self.writable(dst)?;
        let reg = match value {
            Lddw::Imm(v) => Reg::konst(v),
            Lddw::MapIdx(i) if (i as usize) < self.maps.len() => {
                Reg::pointer(Kind::MapPtr(i as usize))
            }
            Lddw::MapIdxValue { idx, off } if (idx as usize) < self.maps.len() => {
                let m = &self.maps[idx as usize];
                if m.value_size == 0 || off < 0 || off as u32 >= m.value_size {
                    return Err(fail(
                        SafetyRule::MapBounds,
                        format!(
                            "invalid access to map value pointer, value_size={} off={off}",
                            m.value_size
                        ),
                        format!(
                            "the address of map {}'s value at offset {off} is outside its {} bytes",
                            m.name, m.value_size
                        ),
                    ));
                }
                Reg {
                    off,
                    ..Reg::pointer(Kind::MapValue(idx as usize))
                }
            }
            // Relative to the slot after the lddw's first half, like jumps.
            Lddw::Func(off) => Reg::pointer(Kind::Func((next as i64 - 1 + off as i64) as usize)),
            other => {
                return Err(fail(
                    SafetyRule::InvalidInstruction,
                    format!("lddw of {other:?} cannot be resolved"),
                    "this lddw refers to a map or kernel object the program was not loaded with",
                ));
            }
        };
        *st.reg_mut(dst) = reg;
        Ok(())
    }

    /// A call (or callback) may add a frame: at most 8 in all.
    pub fn frame_room(st: &State) -> Res<()> {
        if st.frames.len() >= crate::MAX_CALL_FRAMES {
            return Err(fail(
                SafetyRule::ControlFlow,
                format!(
                    "the call stack of {} frames is too deep",
                    st.frames.len() + 1
                ),
                "calls and callbacks nest more than 8 frames deep",
            ));
        }
        Ok(())
    }

    fn call_local(&mut self, st: &mut State, ret: usize, target: usize) -> Res<()> {
        Self::frame_room(st)?;
        let frameno = st.frames.len() as u8;
        let mut callee = Frame::new(target, ret, frameno);
        for r in 1..=5 {
            callee.regs[r] = st.cur().regs[r];
        }
        st.frames.push(callee);
        Ok(())
    }

    fn exit(&mut self, st: &mut State) -> Res<Flow> {
        // Like the kernel, only the program's own exit reads r0 here
        // (`check_return_code`); a function hands back whatever r0 holds,
        // written or not (`prepare_func_exit`), and its caller may only
        // read it if it was; a callback's r0 must be a number. A lock
        // still held is the first thing the program's exit checks.
        if st.frames.len() == 1 {
            crate::spin::not_held(st, "BPF_EXIT instruction in main prog")?;
        }
        let r0 = if st.frames.len() > 1 {
            *st.reg(0)
        } else {
            self.read(st, 0).map_err(|mut f| {
                f.reason =
                    "the program returns without setting r0: return a value on every path".into();
                f
            })?
        };
        self.record_depth(st);
        if st.frames.len() > 1 {
            let frameno = (st.frames.len() - 1) as u8;
            if let Kind::Stack(f) = r0.kind {
                // Even a caller's stack, which would still be valid: the
                // kernel is conservative here.
                let whose = if f == frameno {
                    "its own stack, which is gone once it returns"
                } else {
                    "a stack, which the kernel never lets a function return (pass results through memory the caller gave instead)"
                };
                return Err(fail(
                    SafetyRule::ReturnValue,
                    "cannot return stack pointer to the caller",
                    format!("the function returns a pointer into {whose}"),
                ));
            }
            if st.cur().callback {
                return self.callback_exit(st, r0);
            }
            let callee = st.frames.pop().expect("callee frame");
            let caller = st.cur_mut();
            caller.regs[0] = r0;
            for r in 1..=5 {
                caller.regs[r] = Reg::NOT_INIT;
            }
            return Ok(Flow::Next(callee.callsite));
        }
        if let Some(held) = st.refs.first() {
            return Err(fail(
                SafetyRule::ReferenceLeak,
                format!(
                    "Unreleased reference id={} alloc_insn={}",
                    held.id, held.insn
                ),
                format!(
                    "the reference taken at insn {} (a socket or ring buffer record) is still held when the program exits on this path: release, submit or discard it on every path",
                    held.insn
                ),
            ));
        }
        if !self.opts.privileged && r0.kind.is_pointer() {
            return Err(fail(
                SafetyRule::ReturnValue,
                "R0 leaks addr as return value",
                "the program returns a pointer; unprivileged programs may only return numbers",
            ));
        }
        Ok(Flow::Done)
    }

    /// A callback returns 0 (go on) or 1 (stop); its caller then is back
    /// at the helper call, which may run the callback again.
    fn callback_exit(&mut self, st: &mut State, r0: Reg) -> Res<Flow> {
        if !r0.is_scalar() {
            return Err(fail(
                SafetyRule::ReturnValue,
                "R0 not a scalar value",
                if r0.is_init() {
                    "a callback must return a number (0 to go on, 1 to stop), not a pointer"
                } else {
                    "the callback returns without setting r0: return 0 (go on) or 1 (stop) on every path"
                },
            ));
        }
        self.demand(st, 1, &[]);
        if r0.s.umax > 1 {
            let mut has = String::new();
            if r0.s.smin > i64::MIN {
                has.push_str(&format!(" smin={}", r0.s.smin));
            }
            if r0.s.smax < i64::MAX {
                has.push_str(&format!(" smax={}", r0.s.smax));
            }
            return Err(fail(
                SafetyRule::ReturnValue,
                format!("At callback return the register R0 has{has} should have been in [0, 1]"),
                format!(
                    "the callback may return {}; callbacks return 0 (go on) or 1 (stop)",
                    r0.s
                ),
            ));
        }
        let callee = st.frames.pop().expect("a callback frame");
        self.widen(callee.callsite, st);
        Ok(Flow::Next(callee.callsite))
    }

    /// Numbers that changed since this path was last at the helper call
    /// and that nothing depended on yet become unknown, so that the
    /// callback's calls converge (the kernel's `widen_imprecise_scalars`).
    fn widen(&self, callsite: usize, st: &mut State) {
        let mut n = self.parent;
        while let Some(i) = n {
            let node = &self.nodes[i];
            if node.pc == callsite && node.state.frames.len() == st.frames.len() {
                break;
            }
            n = node.parent;
        }
        let Some(i) = n else { return };
        let old = &self.nodes[i].state;
        let differs = |o: &Reg, r: &Reg| {
            o.is_scalar() && r.is_scalar() && !o.precise && (o.s != r.s || o.id != r.id)
        };
        for (fo, f) in old.frames.iter().zip(st.frames.iter_mut()) {
            for (o, r) in fo.regs.iter().zip(f.regs.iter_mut()) {
                if differs(o, r) {
                    *r = Reg::unknown();
                }
            }
            for (i, s) in f.stack.iter_mut().enumerate() {
                let o = fo.slot(i);
                if o.full_spill().is_some()
                    && s.full_spill().is_some()
                    && differs(&o.spill, &s.spill)
                {
                    s.spill = Reg::unknown();
                }
            }
        }
    }

    /// A stack access reaches `bytes` below frame `fno`'s pointer: its
    /// function's depth grows here, at the access, as the kernel's
    /// `update_stack_depth` does (a state pruned later still counts).
    pub fn grow_depth(&mut self, st: &mut State, fno: usize, bytes: usize) {
        let f = &mut st.frames[fno];
        f.depth = f.depth.max(bytes);
        let d = self.depth.entry(f.func).or_default();
        *d = (*d).max(bytes);
    }

    pub fn record_depth(&mut self, st: &State) {
        let f = st.cur();
        let d = self.depth.entry(f.func).or_default();
        *d = (*d).max(f.depth);
    }

    /// The kernel's limit over call chains: the stacks of a chain's
    /// functions (each rounded up to 16 bytes) fit in 512.
    fn check_stack_depth(&self) -> Result<(), Rejection> {
        let depth_of = |k: usize| -> usize {
            let d = self
                .depth
                .get(&self.cfg.subprogs[k].start)
                .copied()
                .unwrap_or(0);
            d.div_ceil(16) * 16
        };
        fn deepest(cfg: &Cfg, k: usize, depth_of: &dyn Fn(usize) -> usize) -> (usize, usize) {
            let mut best = (0, 0);
            for &c in &cfg.subprogs[k].calls {
                let (d, n) = deepest(cfg, c, depth_of);
                if d > best.0 {
                    best = (d, n);
                }
            }
            (depth_of(k) + best.0, best.1 + 1)
        }
        let (total, frames) = deepest(&self.cfg, 0, &depth_of);
        if total > crate::state::STACK_SIZE {
            return Err(Rejection {
                rule: SafetyRule::StackDepth,
                insn: 0,
                kernel: format!("combined stack size of {frames} calls is {total}. Too large"),
                reason: format!(
                    "the deepest call chain ({frames} functions) uses {total} bytes of stack; the kernel allows 512 in all: move large buffers into a per-CPU array map"
                ),
                state: String::new(),
                origin: None,
            });
        }
        Ok(())
    }
}
