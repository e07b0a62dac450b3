//! Helper calls: arguments checked against the prototype, maps against
//! the helper, memory arguments against their regions; the result typed;
//! references taken and released; packet pointers dropped after helpers
//! that move packet data.

use maps::MapType;

use crate::alu::MAX_VAR_OFF;
use crate::check::{Res, Verifier, fail};
use crate::mem::{packet_check, region_check};
use crate::protos::{self, Arg, Ret};
use crate::state::{Byte, Frame, Held, Kind, Reg, State};
use crate::{MapView, SafetyRule};

/// What the arguments seen so far tell about the call.
#[derive(Default)]
struct Meta {
    map: Option<usize>,
    /// The memory argument waiting for its size: register and value.
    mem: Option<(u8, Reg, Arg)>,
    alloc: Option<u64>,
    release: Option<u32>,
    /// The key, when it is a constant on the stack, and its stack slots.
    const_key: Option<u64>,
    key_slots: Vec<(u8, u8)>,
    /// The callback's start slot and the context handed to it.
    callback: Option<usize>,
    callback_ctx: Option<Reg>,
}

const MEM_EXPECTED: &str =
    "fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_";

fn type_error(r: u8, got: Kind, expected: &str) -> crate::check::Fail {
    fail(
        SafetyRule::HelperArgument,
        format!("R{r} type={} expected={expected}", got.name()),
        format!(
            "argument r{r} is a {} but the helper expects {expected}",
            got.name()
        ),
    )
}

/// Whether map type `t` may be passed to helper `id` (both directions of
/// the kernel's `check_map_func_compatibility`).
fn map_fits(t: MapType, id: u32) -> bool {
    use MapType::*;
    let by_map = match t {
        ProgArray => id == 12,
        PerfEventArray => matches!(id, 22 | 25 | 55),
        Ringbuf => matches!(id, 130..=134),
        Devmap | DevmapHash | Xskmap => matches!(id, 1 | 51),
        Cpumap => id == 51,
        ArrayOfMaps | HashOfMaps => id == 1,
        Queue | Stack => matches!(id, 87..=89),
        StackTrace => id == 27,
        CgroupArray => matches!(id, 33 | 37),
        SkStorage => matches!(id, 107 | 108),
        Hash | Array | PercpuHash | PercpuArray | LruHash | LruPercpuHash | LpmTrie => !matches!(
            id,
            12 | 22 | 25 | 27 | 33 | 37 | 51 | 55 | 87..=89 | 107 | 108 | 130..=134
        ),
    };
    let by_helper = match id {
        12 => t == ProgArray,
        25 => t == PerfEventArray,
        51 => matches!(t, Devmap | DevmapHash | Cpumap | Xskmap),
        130..=134 => t == Ringbuf,
        87..=89 => matches!(t, Queue | Stack),
        27 => t == StackTrace,
        33 | 37 => t == CgroupArray,
        107 | 108 => t == SkStorage,
        164 => matches!(
            t,
            Hash | Array | PercpuHash | PercpuArray | LruHash | LruPercpuHash
        ),
        _ => true,
    };
    by_map && by_helper
}

/// The value of `size` stack bytes at `at`, when known: all zero, or a
/// spilled constant read from its start.
fn stack_const(f: &Frame, at: i64, size: u32) -> Option<u64> {
    if !(1..=8).contains(&size) || at < -(crate::state::STACK_SIZE as i64) || at + size as i64 > 0 {
        return None;
    }
    let (slot, byte) = Frame::locate(at);
    let s = f.slot(slot);
    if byte == 0 && s.spill_len() >= size as usize && s.spill.is_scalar() {
        return s.spill.s.as_const().map(|v| {
            if size == 8 {
                v
            } else {
                v & ((1u64 << (size * 8)) - 1)
            }
        });
    }
    let zero = (0..size as i64).all(|i| {
        let (sl, b) = Frame::locate(at + i);
        f.slot(sl).bytes[b] == Byte::Zero
    });
    zero.then_some(0)
}

impl Verifier<'_> {
    pub fn call_helper(&mut self, pc: usize, st: &mut State, id: i32) -> Res<()> {
        let uid = id as u32;
        let Some(proto) = protos::proto(uid) else {
            return Err(match isa::helper_name(id as i64) {
                // The kernel has it, sluice does not (tracing and other
                // helpers outside packet processing).
                Some(n) => fail(
                    SafetyRule::Unsupported,
                    format!("helper {n}#{id} is not modelled"),
                    format!(
                        "{n} is a kernel helper sluice does not provide, so it can neither check nor run this program"
                    ),
                ),
                None if id == 0 => fail(
                    SafetyRule::UnknownHelper,
                    "program of this type cannot use helper bpf_unspec#0",
                    "helper id 0 (bpf_unspec) is no helper",
                ),
                None => fail(
                    SafetyRule::UnknownHelper,
                    format!("invalid func unknown#{id}"),
                    format!("there is no kernel helper with id {id}"),
                ),
            });
        };
        if let Some(allowed) = &self.opts.helpers
            && !allowed.contains(&uid)
        {
            return Err(fail(
                SafetyRule::UnknownHelper,
                format!(
                    "program of this type cannot use helper bpf_{}#{id}",
                    proto.name
                ),
                format!(
                    "bpf_{} cannot be called from {} programs",
                    proto.name,
                    self.kind.type_name()
                ),
            ));
        }
        let mut meta = Meta::default();
        for (i, &arg) in proto.args.iter().enumerate() {
            let r = i as u8 + 1;
            let reg = self.read(st, r)?;
            // The kernel's check_func_arg: after ARG_ANYTHING, before the type
            // checks, a packet pointer is refused unless the helper's proto has
            // `pkt_access` (and the program type direct packet access, which
            // every type with packet pointers here has).
            if arg != Arg::Anything
                && matches!(reg.kind, Kind::Packet | Kind::PacketMeta)
                && !proto.pkt_access
            {
                return Err(fail(
                    SafetyRule::HelperArgument,
                    "helper access to the packet is not allowed",
                    format!(
                        "r{r} points into the packet, and bpf_{} does not take packet memory: copy the bytes to the stack (or a map value) first",
                        proto.name
                    ),
                ));
            }
            self.check_arg(st, pc, proto.name, uid, r, reg, arg, &mut meta)?;
        }
        if let Some(start) = meta.callback {
            // bpf_loop calls its callback at most `nr_loops` times: explore
            // no more calls than that on one path (r1 decides it).
            let more = if uid == 181 {
                self.demand(st, 1 << 1, &[]);
                st.cur().callback_depth < st.cur().regs[1].s.umax
            } else {
                true
            };
            if more {
                let mut cb = self.callback_entry(pc, st, uid, start, &meta)?;
                let caller = cb.frames.len() - 2;
                cb.frames[caller].callback_depth += 1;
                cb.callback_calls += 1;
                self.callback = Some((start, cb));
            }
            st.cur_mut().callback_depth = 0;
        }
        if uid == 12
            && let Some(h) = st.refs.first()
        {
            return Err(fail(
                SafetyRule::ReferenceLeak,
                "tail_call would lead to reference leak",
                format!(
                    "a tail call ends this program while the reference taken at insn {} is held: release it first",
                    h.insn
                ),
            ));
        }
        if let Some(ref_id) = meta.release {
            st.refs.retain(|h| h.id != ref_id);
            let privileged = self.opts.privileged;
            st.for_each_reg(|r| {
                if r.ref_id == ref_id {
                    *r = if privileged {
                        Reg::unknown()
                    } else {
                        Reg::NOT_INIT
                    };
                }
            });
        }
        for r in 1..=5 {
            *st.reg_mut(r) = Reg::NOT_INIT;
        }
        let r0 = match proto.ret {
            Ret::Integer => Reg::unknown(),
            Ret::Void => Reg::NOT_INIT,
            Ret::MapValueOrNull => {
                let m = meta.map.expect("the prototype has a map argument");
                let id = self.fresh_id();
                let kind = match (self.maps[m].map_type, self.maps[m].inner) {
                    (MapType::ArrayOfMaps | MapType::HashOfMaps, Some(inner)) => {
                        Kind::MapPtrOrNull(inner)
                    }
                    (MapType::ArrayOfMaps | MapType::HashOfMaps, None) => {
                        return Err(fail(
                            SafetyRule::Unsupported,
                            "map of maps without an inner map template",
                            "the map of maps has no inner map definition",
                        ));
                    }
                    (MapType::Array | MapType::PercpuArray, _)
                        if meta
                            .const_key
                            .is_some_and(|k| k < self.maps[m].max_entries as u64) =>
                    {
                        // A constant key inside an array: never NULL (as
                        // in the kernel since 6.14). The key's value decided it.
                        let slots = std::mem::take(&mut meta.key_slots);
                        self.demand(st, 0, &slots);
                        Kind::MapValue(m)
                    }
                    _ => Kind::MapValueOrNull(m),
                };
                self.origins.insert(id, pc);
                Reg {
                    id,
                    ..Reg::pointer(kind)
                }
            }
            Ret::RingbufOrNull => {
                let id = self.fresh_id();
                self.origins.insert(id, pc);
                st.refs.push(Held { id, insn: pc });
                Reg {
                    id,
                    ref_id: id,
                    ..Reg::pointer(Kind::Mem {
                        size: meta.alloc.unwrap_or(0) as u32,
                        ringbuf: true,
                        null: true,
                    })
                }
            }
            Ret::SockOrNull { common } => {
                let id = self.fresh_id();
                self.origins.insert(id, pc);
                st.refs.push(Held { id, insn: pc });
                Reg {
                    id,
                    ref_id: id,
                    ..Reg::pointer(Kind::Sock { null: true, common })
                }
            }
        };
        *st.reg_mut(0) = r0;
        if proto.changes_packet {
            let privileged = self.opts.privileged;
            st.for_each_reg(|r| {
                if matches!(r.kind, Kind::Packet | Kind::PacketMeta | Kind::PacketEnd) {
                    *r = if privileged {
                        Reg::unknown()
                    } else {
                        Reg::NOT_INIT
                    };
                }
            });
        }
        Ok(())
    }

    /// The state a callback starts in: the caller as it is at the call
    /// (so that the call can run again when the callback returns) with the
    /// callback's frame on top, its arguments set as the helper passes
    /// them (the kernel's `set_loop_callback_state` and
    /// `set_map_elem_callback_state`).
    fn callback_entry(
        &mut self,
        pc: usize,
        st: &State,
        id: u32,
        start: usize,
        meta: &Meta,
    ) -> Res<State> {
        Self::frame_room(st)?;
        let mut cb = st.clone();
        let caller = cb.cur();
        let ctx = meta.callback_ctx.unwrap_or(Reg::konst(0));
        let mut frame = Frame::new(start, pc, st.frames.len() as u8);
        frame.callback = true;
        match id {
            // bpf_loop: callback(u64 index, void *ctx)
            181 => {
                frame.regs[1] = Reg::unknown();
                frame.regs[2] = ctx;
            }
            // bpf_for_each_map_elem: callback(map, key, value, ctx)
            164 => {
                let m = meta.map.expect("a map argument comes first");
                frame.regs[1] = caller.regs[1];
                frame.regs[2] = Reg::pointer(Kind::MapKey(m));
                frame.regs[3] = Reg::pointer(Kind::MapValue(m));
                frame.regs[4] = ctx;
            }
            _ => {
                return Err(fail(
                    SafetyRule::Unsupported,
                    format!("callbacks of helper #{id} are not modelled"),
                    "sluice's verifier models the callbacks of bpf_loop and bpf_for_each_map_elem only",
                ));
            }
        }
        cb.frames.push(frame);
        Ok(cb)
    }

    #[allow(clippy::too_many_arguments)]
    fn check_arg(
        &mut self,
        st: &mut State,
        _pc: usize,
        name: &str,
        id: u32,
        r: u8,
        reg: Reg,
        arg: Arg,
        meta: &mut Meta,
    ) -> Res<()> {
        match arg {
            Arg::Anything => {
                if reg.kind.is_pointer() && !self.opts.privileged {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        format!("R{r} leaks addr into helper function"),
                        format!("r{r} passes a pointer where a number is expected"),
                    ));
                }
            }
            Arg::Ctx => {
                if reg.kind != Kind::Ctx {
                    return Err(type_error(r, reg.kind, "ctx"));
                }
                if reg.off != 0 || !reg.s.is_const() || reg.s.var.value != 0 {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        format!(
                            "dereference of modified ctx ptr R{r} off={} disallowed",
                            reg.off
                        ),
                        format!("r{r} must be the unmodified context pointer"),
                    ));
                }
            }
            Arg::Map => {
                let Kind::MapPtr(m) = reg.kind else {
                    return Err(type_error(r, reg.kind, "map_ptr"));
                };
                let t = self.maps[m].map_type;
                if id == 12 && t != MapType::ProgArray {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        "expected prog array map for tail call",
                        format!(
                            "bpf_tail_call needs a program array, and map {} is a {t:?} map",
                            self.maps[m].name
                        ),
                    ));
                }
                if id == 164
                    && !matches!(
                        t,
                        MapType::Hash
                            | MapType::Array
                            | MapType::PercpuHash
                            | MapType::PercpuArray
                            | MapType::LruHash
                            | MapType::LruPercpuHash
                    )
                {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        "callback function not allowed for map",
                        format!(
                            "bpf_for_each_map_elem cannot walk map {}, a {t:?} map: hash and array maps only",
                            self.maps[m].name
                        ),
                    ));
                }
                if !map_fits(t, id) {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        format!(
                            "cannot pass map_type {} into func bpf_{name}#{id}",
                            t as u32
                        ),
                        format!(
                            "map {} is a {t:?} map, which bpf_{name} does not take",
                            self.maps[m].name
                        ),
                    ));
                }
                meta.map = Some(m);
            }
            Arg::ValueOrNull if reg.is_null_const() => {}
            Arg::Key | Arg::Value | Arg::UninitValue | Arg::ValueOrNull => {
                let m = meta.map.expect("a map argument comes first");
                let info: &MapView = &self.maps[m];
                let (size, what) = if arg == Arg::Key {
                    (info.key_size, "key")
                } else {
                    (info.value_size, "value")
                };
                if !matches!(
                    reg.kind,
                    Kind::Stack(_)
                        | Kind::Packet
                        | Kind::PacketMeta
                        | Kind::MapValue(_)
                        | Kind::MapKey(_)
                ) {
                    let mut e = type_error(r, reg.kind, "fp, pkt, pkt_meta, map_key, map_value");
                    if reg.kind.maybe_null() {
                        e.rule = SafetyRule::NullPointer;
                        e.reason =
                            format!("r{r} may be NULL: check it before passing it to the helper");
                    }
                    return Err(e);
                }
                if arg == Arg::Key
                    && let Kind::Stack(f) = reg.kind
                    && reg.s.is_const()
                {
                    let at = reg.off as i64 + reg.s.var.value as i64;
                    meta.const_key = stack_const(&st.frames[f as usize], at, size);
                    if meta.const_key.is_some() {
                        let (first, _) = Frame::locate(at);
                        let (last, _) = Frame::locate(at + size as i64 - 1);
                        meta.key_slots = (last..=first).map(|s| (f, s as u8)).collect();
                    }
                }
                let write = arg == Arg::UninitValue;
                self.helper_mem(st, r, &reg, size as u64, write, !write)
                    .map_err(|mut f| {
                        f.reason = format!(
                            "the map {what} passed in r{r} must be {size} readable bytes: {}",
                            f.reason
                        );
                        f
                    })?;
            }
            Arg::ReadMem { nullable } => {
                if nullable && reg.is_null_const() {
                    meta.mem = Some((r, reg, arg));
                    return Ok(());
                }
                self.mem_kind(r, &reg)?;
                meta.mem = Some((r, reg, arg));
            }
            Arg::WriteMem | Arg::UninitMem => {
                self.mem_kind(r, &reg)?;
                meta.mem = Some((r, reg, arg));
            }
            Arg::FixedMem(n) => {
                self.mem_kind(r, &reg)?;
                self.helper_mem(st, r, &reg, n as u64, false, true)?;
            }
            Arg::FixedMemRw(n) => {
                self.mem_kind(r, &reg)?;
                self.helper_mem(st, r, &reg, n as u64, true, true)?;
            }
            Arg::Size | Arg::SizeOrZero => {
                self.demand(st, 1 << r, &[]);
                let (mr, mreg, marg) = meta
                    .mem
                    .take()
                    .expect("a memory argument precedes its size");
                if !reg.is_scalar() {
                    return Err(type_error(r, reg.kind, "scalar"));
                }
                if reg.s.smin < 0 {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        format!(
                            "R{r} min value is negative, either use unsigned or 'var &= const'"
                        ),
                        format!("the size in r{r} may be negative: make it unsigned or mask it"),
                    ));
                }
                let zero_ok = arg == Arg::SizeOrZero;
                if reg.s.umin == 0 && !zero_ok {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        format!(
                            "R{r} invalid zero-sized read: u64=[{},{}]",
                            reg.s.umin, reg.s.umax
                        ),
                        format!(
                            "the size in r{r} may be 0, which bpf_{name} does not accept: check `if (len == 0)` first"
                        ),
                    ));
                }
                if reg.s.umax >= MAX_VAR_OFF as u64 {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        format!(
                            "R{r} unbounded memory access, use 'var &= const' or 'if (var < const)'"
                        ),
                        format!(
                            "the size in r{r} has no upper bound: bound it (`if (len > N) ...`)"
                        ),
                    ));
                }
                if mreg.is_null_const() && matches!(marg, Arg::ReadMem { nullable: true }) {
                    if reg.s.umax != 0 {
                        return Err(type_error(mr, mreg.kind, MEM_EXPECTED));
                    }
                    return Ok(());
                }
                if reg.s.umax > 0 {
                    let write = matches!(marg, Arg::WriteMem | Arg::UninitMem);
                    let reads = !matches!(marg, Arg::UninitMem);
                    self.helper_mem(st, mr, &mreg, reg.s.umax, write, reads)?;
                }
            }
            Arg::AllocSize => {
                self.demand(st, 1 << r, &[]);
                let Some(v) = reg.as_const() else {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        format!("R{r} is not a known constant'"),
                        format!(
                            "the size in r{r} must be a constant known when the program is loaded"
                        ),
                    ));
                };
                meta.alloc = Some(v);
            }
            Arg::RingbufRelease | Arg::Sock { release: true } => {
                let ok = match arg {
                    Arg::RingbufRelease => matches!(
                        reg.kind,
                        Kind::Mem {
                            ringbuf: true,
                            null: false,
                            ..
                        }
                    ),
                    _ => matches!(reg.kind, Kind::Sock { null: false, .. }),
                };
                if !ok {
                    let expected = if arg == Arg::RingbufRelease {
                        "ringbuf_mem"
                    } else {
                        "sock_common, sock, tcp_sock, xdp_sock, ptr_"
                    };
                    return Err(type_error(r, reg.kind, expected));
                }
                if reg.off != 0 || !reg.s.is_const() || reg.s.var.value != 0 {
                    return Err(fail(
                        SafetyRule::HelperArgument,
                        format!("R{r} must have zero offset when passed to release func"),
                        format!(
                            "r{r} must be the pointer the acquiring helper returned, not moved"
                        ),
                    ));
                }
                if reg.ref_id == 0 || !st.refs.iter().any(|h| h.id == reg.ref_id) {
                    return Err(fail(
                        SafetyRule::ReferenceLeak,
                        format!("R{r} must be referenced when passed to release func"),
                        format!("r{r} was already released (or never acquired)"),
                    ));
                }
                meta.release = Some(reg.ref_id);
            }
            Arg::Sock { release: false } => {
                if !matches!(reg.kind, Kind::Sock { null: false, .. }) {
                    return Err(type_error(
                        r,
                        reg.kind,
                        "sock_common, sock, tcp_sock, xdp_sock, ptr_",
                    ));
                }
            }
            Arg::Func => {
                let Kind::Func(start) = reg.kind else {
                    return Err(type_error(r, reg.kind, "func"));
                };
                meta.callback = Some(start);
            }
            Arg::StackOrNull => {
                if !matches!(reg.kind, Kind::Stack(_)) && !reg.is_null_const() {
                    return Err(type_error(r, reg.kind, "fp"));
                }
                meta.callback_ctx = Some(reg);
            }
            Arg::SpinLock => {
                if !matches!(reg.kind, Kind::MapValue(_)) {
                    return Err(type_error(r, reg.kind, "map_value"));
                }
                self.spin_lock_arg(st, r, &reg, id)?;
            }
        }
        Ok(())
    }

    fn mem_kind(&self, r: u8, reg: &Reg) -> Res<()> {
        match reg.kind {
            Kind::Stack(_)
            | Kind::Packet
            | Kind::PacketMeta
            | Kind::MapValue(_)
            | Kind::MapKey(_)
            | Kind::Mem { null: false, .. } => Ok(()),
            k if k.maybe_null() => Err(fail(
                SafetyRule::NullPointer,
                format!("R{r} type={} expected={MEM_EXPECTED}", k.name()),
                format!("r{r} may be NULL: check it before passing it to the helper"),
            )),
            k => Err(type_error(r, k, MEM_EXPECTED)),
        }
    }

    /// A helper reads (or writes) `size` bytes at `reg`.
    fn helper_mem(
        &mut self,
        st: &mut State,
        r: u8,
        reg: &Reg,
        size: u64,
        write: bool,
        reads: bool,
    ) -> Res<()> {
        let size32 = size.min(u32::MAX as u64) as u32;
        match reg.kind {
            Kind::Stack(frame) => {
                let extra = if write { " write to" } else { " read from" };
                let (min, max) = self.stack_bounds(r, reg, reg.off as i64, size32, extra)?;
                if reads {
                    self.read_stack(frame, min, max);
                }
                let privileged = self.opts.privileged;
                self.grow_depth(st, frame as usize, (-min) as usize);
                let f = &mut st.frames[frame as usize];
                for a in min..max {
                    let (slot, byte) = Frame::locate(a);
                    let s = f.slot_mut(slot);
                    if write {
                        if s.bytes.contains(&Byte::Spill) {
                            for b in s.bytes.iter_mut() {
                                if *b == Byte::Spill {
                                    *b = Byte::Misc;
                                }
                            }
                            s.spill = Reg::NOT_INIT;
                        }
                        s.bytes[byte] = Byte::Misc;
                    } else if s.bytes[byte] == Byte::Invalid && !privileged {
                        return Err(fail(
                            SafetyRule::StackBounds,
                            format!(
                                "invalid indirect read from stack R{r} off {}+{} size {size}",
                                reg.off,
                                a - min
                            ),
                            format!(
                                "the helper reads stack bytes that were never written (at {a})"
                            ),
                        ));
                    }
                }
                Ok(())
            }
            Kind::Packet | Kind::PacketMeta => packet_check(r, reg, 0, size32),
            Kind::MapValue(m) => {
                let info = &self.maps[m];
                if write && info.readonly {
                    return Err(fail(
                        SafetyRule::ReadOnly,
                        format!(
                            "write into map forbidden, value_size={} off={} size={size}",
                            info.value_size, reg.off
                        ),
                        format!(
                            "the helper would write into the read-only map {}",
                            info.name
                        ),
                    ));
                }
                region_check(r, reg, 0, size32, info.value_size, "map value")?;
                crate::spin::untouched(info, reg, 0, size32)
            }
            Kind::Mem {
                size: mem,
                null: false,
                ..
            } => region_check(r, reg, 0, size32, mem, "memory"),
            Kind::MapKey(m) if !write => {
                region_check(r, reg, 0, size32, self.maps[m].key_size, "map key")
            }
            k => Err(type_error(r, k, MEM_EXPECTED)),
        }
    }
}
