//! Loads, stores and atomics: every access proven inside its region
//! (context field, stack, packet range, map value, helper memory), and
//! what a load gives back.

use isa::{AtomicOp, Operand, Size};

use crate::SafetyRule;
use crate::alu::MAX_VAR_OFF;
use crate::bounds::Scalar;
use crate::check::{Res, Verifier, fail};
use crate::ctx::{self, Field};
use crate::state::{Byte, Frame, Kind, Reg, STACK_SIZE, State};

/// What an access does.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Access {
    Read,
    Write,
}

impl Verifier<'_> {
    /// What a program of this type returns to drop a packet, for advice.
    pub fn drop_action(&self) -> &'static str {
        match self.kind {
            obj::ProgramKind::Xdp { .. } => "XDP_DROP",
            obj::ProgramKind::SchedCls | obj::ProgramKind::SchedAct => "TC_ACT_SHOT",
            _ => "0",
        }
    }

    pub fn load(
        &mut self,
        st: &mut State,
        size: Size,
        signed: bool,
        dst: u8,
        src: u8,
        off: i16,
    ) -> Res<()> {
        let base = self.read(st, src)?;
        self.writable(dst)?;
        let n = size.bytes() as u32;
        let mut value = self.access(st, src, &base, off as i64, n, Access::Read, None)?;
        if value.is_scalar() && n < 8 {
            value.s = if signed {
                value.s.sign_extend(n)
            } else {
                value.s.truncate(n)
            };
            value.id = 0;
        }
        *st.reg_mut(dst) = value;
        Ok(())
    }

    pub fn store(
        &mut self,
        st: &mut State,
        size: Size,
        dst: u8,
        off: i16,
        src: Operand,
    ) -> Res<()> {
        let value = match src {
            Operand::Reg(r) => Some(self.read(st, r.number())?),
            Operand::Imm(i) => Some(Reg::konst(i as i64 as u64)),
        };
        let base = self.read(st, dst)?;
        let is_imm = matches!(src, Operand::Imm(_));
        let value = value.map(|mut v| {
            if is_imm && size != Size::DW {
                v.s = v.s.truncate(size.bytes() as u32);
            }
            v
        });
        self.access(
            st,
            dst,
            &base,
            off as i64,
            size.bytes() as u32,
            Access::Write,
            value,
        )?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub fn atomic(
        &mut self,
        st: &mut State,
        size: Size,
        op: AtomicOp,
        fetch: bool,
        dst: u8,
        src: u8,
        off: i16,
    ) -> Res<()> {
        let v = self.read(st, src)?;
        let base = self.read(st, dst)?;
        if op == AtomicOp::CmpXchg {
            self.read(st, 0)?;
        }
        if !matches!(size, Size::W | Size::DW) {
            return Err(fail(
                SafetyRule::InvalidInstruction,
                "invalid atomic operand size",
                "atomic operations work on 32- or 64-bit values only",
            ));
        }
        if !matches!(
            base.kind,
            Kind::Stack(_) | Kind::MapValue(_) | Kind::Mem { null: false, .. }
        ) && base.kind.is_pointer()
        {
            return Err(fail(
                SafetyRule::InvalidDeref,
                format!(
                    "BPF_ATOMIC stores into R{dst} {} is not allowed",
                    base.kind.name()
                ),
                format!(
                    "atomic operations are allowed on the stack and map values, not on {}",
                    base.kind.name()
                ),
            ));
        }
        if v.kind.is_pointer() && !self.opts.privileged {
            return Err(fail(
                SafetyRule::PointerArithmetic,
                format!("R{src} leaks addr into mem"),
                "an atomic operation would store a pointer",
            ));
        }
        let n = size.bytes() as u32;
        // Atomics are always strictly aligned (the kernel's
        // `strict_alignment_once`); the stack is checked in `access`.
        let desc = match base.kind {
            Kind::MapValue(_) => Some("value "),
            Kind::Mem { .. } => Some(""),
            _ => None,
        };
        if let Some(desc) = desc {
            let fixed = off as i64 + base.off as i64;
            let at = base.s.var.add(crate::tnum::Tnum::konst(fixed as u64));
            if !at.is_aligned(u64::from(n)) {
                return Err(fail(
                    SafetyRule::InvalidDeref,
                    format!(
                        "misaligned {desc}access off {}+{}+{off} size {n}",
                        base.s.var, base.off
                    ),
                    format!("a {n}-byte atomic operation must be aligned to {n} bytes"),
                ));
            }
        }
        let old = self.access(st, dst, &base, off as i64, n, Access::Read, None)?;
        if old.kind.is_pointer() && fetch {
            return Err(fail(
                SafetyRule::InvalidDeref,
                format!("R{dst} atomic on a spilled pointer"),
                "an atomic operation on a stored pointer",
            ));
        }
        self.access(
            st,
            dst,
            &base,
            off as i64,
            n,
            Access::Write,
            Some(Reg::unknown()),
        )?;
        let mut result = Scalar::unknown();
        if n == 4 {
            result.zext32();
        }
        if op == AtomicOp::CmpXchg {
            *st.reg_mut(0) = Reg::scalar(result);
        } else if fetch || op.always_fetches() {
            self.writable(src)?;
            *st.reg_mut(src) = Reg::scalar(result);
        }
        Ok(())
    }

    /// Legacy packet loads (`ld_abs`, `ld_ind`): socket filters and tc only,
    /// with the context in r6.
    pub fn ld_abs(&mut self, st: &mut State, size: Size, src: Option<u8>) -> Res<()> {
        if self.kind.is_xdp() {
            return Err(fail(
                SafetyRule::InvalidInstruction,
                "BPF_LD_[ABS|IND] instructions not allowed for this program type",
                "XDP programs cannot use the legacy ld_abs/ld_ind packet loads: read through ctx->data instead",
            ));
        }
        if self.cfg.subprogs.len() > 1 {
            return Err(fail(
                SafetyRule::InvalidInstruction,
                "BPF_LD_[ABS|IND] instructions cannot be mixed with bpf-to-bpf calls",
                "legacy packet loads cannot be used in a program with BPF function calls",
            ));
        }
        if size == Size::DW {
            return Err(fail(
                SafetyRule::InvalidInstruction,
                "invalid BPF_LD_[ABS|IND] size",
                "legacy packet loads read 1, 2 or 4 bytes",
            ));
        }
        crate::spin::not_held(st, "BPF_LD_[ABS|IND]")?;
        let r6 = self.read(st, 6)?;
        if r6.kind != Kind::Ctx {
            return Err(fail(
                SafetyRule::InvalidInstruction,
                "at the time of BPF_LD_ABS|IND R6 != pointer to skb",
                "legacy packet loads need the context pointer in r6",
            ));
        }
        if let Some(r) = src {
            let v = self.read(st, r)?;
            if v.kind.is_pointer() {
                return Err(fail(
                    SafetyRule::InvalidInstruction,
                    format!("R{r} leaks addr into packet load"),
                    "ld_ind takes a number, not a pointer",
                ));
            }
        }
        if let Some(h) = st.refs.first() {
            return Err(fail(
                SafetyRule::ReferenceLeak,
                "BPF_LD_[ABS|IND] would lead to reference leak",
                format!(
                    "a legacy packet load may end the program while the reference from insn {} is held",
                    h.insn
                ),
            ));
        }
        for r in 1..=5 {
            *st.reg_mut(r) = Reg::NOT_INIT;
        }
        *st.reg_mut(0) = Reg::scalar(Scalar::unknown().truncate(size.bytes() as u32));
        Ok(())
    }

    /// Checks a `size`-byte access at `base + off` and performs it on the
    /// abstract state: a load's value, or `Reg::NOT_INIT` for a store.
    #[allow(clippy::too_many_arguments)]
    pub fn access(
        &mut self,
        st: &mut State,
        regno: u8,
        base: &Reg,
        off: i64,
        size: u32,
        access: Access,
        value: Option<Reg>,
    ) -> Res<Reg> {
        let write = access == Access::Write;
        match base.kind {
            Kind::Ctx => self.ctx_access(st, regno, base, off, size, write),
            Kind::Stack(frame) => {
                self.stack_access(st, regno, frame, base, off, size, access, value)
            }
            Kind::Packet | Kind::PacketMeta => {
                if write
                    && !self.kind.is_xdp()
                    && !matches!(
                        self.kind,
                        obj::ProgramKind::SchedCls | obj::ProgramKind::SchedAct
                    )
                {
                    return Err(fail(
                        SafetyRule::ReadOnly,
                        "cannot write into packet",
                        "this program type cannot write packet data",
                    ));
                }
                packet_check(regno, base, off, size)?;
                Ok(Reg::unknown())
            }
            Kind::MapValue(m) => {
                let info = &self.maps[m];
                if write && info.readonly {
                    return Err(fail(
                        SafetyRule::ReadOnly,
                        format!(
                            "write into map forbidden, value_size={} off={} size={size}",
                            info.value_size,
                            off + base.off as i64
                        ),
                        format!(
                            "map {} is read-only for programs (a const global or BPF_F_RDONLY_PROG)",
                            info.name
                        ),
                    ));
                }
                region_check(regno, base, off, size, info.value_size, "map value")?;
                crate::spin::untouched(info, base, off, size)?;
                let at = off + base.off as i64;
                if !write
                    && let (Some(data), Some(0)) = (&info.frozen, base.s.as_const())
                    && size <= 8
                    && at >= 0
                    && (at as usize + size as usize) <= data.len()
                {
                    let mut b = [0u8; 8];
                    b[..size as usize]
                        .copy_from_slice(&data[at as usize..at as usize + size as usize]);
                    return Ok(Reg::konst(u64::from_le_bytes(b)));
                }
                Ok(Reg::unknown())
            }
            Kind::Mem {
                size: mem,
                null: false,
                ..
            } => {
                region_check(regno, base, off, size, mem, "memory")?;
                Ok(Reg::unknown())
            }
            Kind::MapKey(m) => {
                if write {
                    return Err(fail(
                        SafetyRule::ReadOnly,
                        format!("write to change key R{regno} not allowed"),
                        "the key bpf_for_each_map_elem hands its callback is read-only",
                    ));
                }
                region_check(regno, base, off, size, self.maps[m].key_size, "map key")?;
                Ok(Reg::unknown())
            }
            Kind::NotInit => Err(fail(
                SafetyRule::UninitRegister,
                format!("R{regno} !read_ok"),
                format!("r{regno} is used as a pointer but holds nothing"),
            )),
            kind if kind.maybe_null() => Err(fail(
                SafetyRule::NullPointer,
                format!("R{regno} invalid mem access '{}'", kind.name()),
                format!(
                    "r{regno} may be NULL here ({}): add a check like `if (!value) return {};` after the call that returned it, before this use",
                    kind.name(),
                    self.drop_action()
                ),
            ).with_origin(self.origins.get(&base.id).copied())),
            Kind::MapPtr(_) => Err(fail(
                SafetyRule::Unsupported,
                format!("R{regno} reading struct bpf_map fields is not modelled"),
                "the program reads the kernel's struct bpf_map through a map pointer, which sluice does not model",
            )),
            Kind::Sock { common, .. } => {
                // `check_sock_access`: reads of `struct bpf_sock` fields.
                let name = base.kind.name();
                if write {
                    return Err(fail(
                        SafetyRule::ReadOnly,
                        format!("R{regno} cannot write into {name}"),
                        format!("r{regno} points to a socket ({name}), which programs may only read"),
                    ));
                }
                let at = off + base.off as i64;
                if !crate::ctx::sock_access(common, at, size) {
                    return Err(fail(
                        SafetyRule::CtxAccess,
                        format!("R{regno} invalid {name} access off={at} size={size}"),
                        format!(
                            "struct bpf_sock has no {size}-byte field at offset {at} that a program may read through r{regno} ({name}){}",
                            if common {
                                "; a sock_common has no type, protocol, mark or priority"
                            } else {
                                ""
                            }
                        ),
                    ));
                }
                Ok(Reg::unknown())
            }
            Kind::Scalar if base.is_null_const() => Err(fail(
                SafetyRule::NullPointer,
                format!("R{regno} invalid mem access 'scalar'"),
                format!(
                    "r{regno} is NULL on this path (a pointer check said so): do not dereference it here"
                ),
            )),
            kind => Err(fail(
                SafetyRule::InvalidDeref,
                format!("R{regno} invalid mem access '{}'", kind.name()),
                match kind {
                    Kind::Scalar => {
                        format!("r{regno} holds a number, not a pointer: it cannot be dereferenced")
                    }
                    Kind::PacketEnd => format!(
                        "r{regno} is data_end, the end of the packet: it marks a bound and cannot be read"
                    ),
                    _ => format!(
                        "r{regno} is a {} pointer, which cannot be dereferenced",
                        kind.name()
                    ),
                },
            )),
        }
    }

    fn ctx_access(
        &mut self,
        st: &mut State,
        regno: u8,
        base: &Reg,
        off: i64,
        size: u32,
        write: bool,
    ) -> Res<Reg> {
        if base.off != 0 {
            return Err(fail(
                SafetyRule::CtxAccess,
                format!(
                    "dereference of modified ctx ptr R{regno} off={} disallowed",
                    base.off
                ),
                format!(
                    "r{regno} is the context pointer moved by {} bytes: read fields through the unmodified pointer with an offset",
                    base.off
                ),
            ));
        }
        if !base.s.is_const() {
            return Err(fail(
                SafetyRule::CtxAccess,
                format!("variable ctx access var_off={} disallowed", base.s.var),
                "context fields must be read at constant offsets",
            ));
        }
        let at = off + base.s.var.value as i64;
        match ctx::access(self.kind, at, size, write) {
            Some(Field::Scalar) => Ok(Reg::unknown()),
            Some(Field::Pointer(kind)) => {
                let mut r = Reg::pointer(kind);
                if kind.maybe_null() {
                    r.id = self.fresh_id();
                }
                Ok(r)
            }
            None => {
                let _ = st;
                let what = if write { "write" } else { "read" };
                Err(fail(
                    SafetyRule::CtxAccess,
                    format!("invalid bpf_context access off={at} size={size}"),
                    format!(
                        "a {size}-byte {what} at offset {at} of the {} context is not allowed: check the field, its size and whether this program type may {what} it",
                        self.kind.type_name()
                    ),
                ))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn stack_access(
        &mut self,
        st: &mut State,
        regno: u8,
        frame: u8,
        base: &Reg,
        off: i64,
        size: u32,
        access: Access,
        value: Option<Reg>,
    ) -> Res<Reg> {
        let write = access == Access::Write;
        let extra = if write { " write to" } else { " read from" };
        let fixed = off + base.off as i64;
        // Stack accesses must be aligned to their size (the kernel's spill
        // tracking relies on it).
        if !base
            .s
            .var
            .add(crate::tnum::Tnum::konst(fixed as u64))
            .is_aligned(size as u64)
        {
            return Err(fail(
                SafetyRule::StackBounds,
                format!(
                    "misaligned stack access off {}+{}+{off} size {size}",
                    base.s.var, base.off
                ),
                format!(
                    "a {size}-byte stack access at offset {fixed} is not aligned to {size} bytes"
                ),
            ));
        }
        let (min, max) = self.stack_bounds(regno, base, fixed, size, extra)?;
        let fno = frame as usize;
        if write
            && fno + 1 != st.frames.len()
            && value.is_some_and(|v| matches!(v.kind, Kind::Stack(_)))
        {
            return Err(fail(
                SafetyRule::StackBounds,
                "cannot spill pointers to stack into stack frame of the caller",
                "a stack pointer cannot be stored in a caller's stack",
            ));
        }
        self.grow_depth(st, fno, (-min) as usize);
        if !write {
            self.read_stack(frame, min, max);
        }
        let f = &mut st.frames[fno];
        if base.s.is_const() {
            let at = fixed + base.s.var.value as i64;
            self.last_stack = Some((frame, Frame::locate(at).0 as u8));
            if write {
                stack_write(
                    f,
                    at,
                    size,
                    value.expect("a store has a value"),
                    self.opts.privileged,
                )?;
                Ok(Reg::NOT_INIT)
            } else {
                stack_read(f, at, size, self.opts.privileged)
            }
        } else if write {
            // A variable-offset write makes every byte it may touch unknown.
            for a in min..max {
                let (slot, byte) = Frame::locate(a);
                let s = f.slot_mut(slot);
                if s.bytes.contains(&Byte::Spill) {
                    for b in s.bytes.iter_mut() {
                        if *b == Byte::Spill {
                            *b = Byte::Misc;
                        }
                    }
                }
                s.bytes[byte] = Byte::Misc;
            }
            Ok(Reg::NOT_INIT)
        } else {
            for a in min..max {
                let (slot, byte) = Frame::locate(a);
                if f.slot(slot).bytes[byte] == Byte::Invalid && !self.opts.privileged {
                    return Err(fail(
                        SafetyRule::StackBounds,
                        format!(
                            "invalid variable-offset read from stack R{regno} var_off={} off={fixed} size={size}",
                            base.s.var
                        ),
                        "the stack bytes this read may touch were never written",
                    ));
                }
            }
            Ok(Reg::unknown())
        }
    }

    /// The byte range `[min, max)` a stack access may touch, checked.
    pub fn stack_bounds(
        &self,
        regno: u8,
        base: &Reg,
        fixed: i64,
        size: u32,
        extra: &str,
    ) -> Res<(i64, i64)> {
        let (min, max) = if base.s.is_const() {
            let m = base.s.var.value as i64 + fixed;
            (m, m + size as i64)
        } else {
            if base.s.smax >= MAX_VAR_OFF || base.s.smin <= -MAX_VAR_OFF {
                return Err(fail(
                    SafetyRule::StackBounds,
                    format!("invalid unbounded variable-offset{extra} stack R{regno}"),
                    format!(
                        "the offset of stack pointer r{regno} is unbounded: check its range first"
                    ),
                ));
            }
            (base.s.smin + fixed, base.s.smax + fixed + size as i64)
        };
        if min < -(STACK_SIZE as i64) || max > 0 {
            let kernel = if base.s.is_const() {
                format!(
                    "invalid{extra} stack R{regno} off={} size={size}",
                    fixed + base.s.var.value as i64
                )
            } else {
                format!(
                    "invalid variable-offset{extra} stack R{regno} var_off={} off={fixed} size={size}",
                    base.s.var
                )
            };
            return Err(fail(
                SafetyRule::StackBounds,
                kernel,
                format!(
                    "the access touches stack bytes {min}..{max} from the frame pointer; the stack is the 512 bytes below it (offsets -512..0)"
                ),
            ));
        }
        Ok((min, max))
    }
}

/// A fixed-offset store into a frame's stack.
fn stack_write(f: &mut Frame, at: i64, size: u32, value: Reg, privileged: bool) -> Res<()> {
    let (slot, byte) = Frame::locate(at);
    let s = f.slot_mut(slot);
    let aligned = byte == 0;
    if value.kind.is_pointer() && size != 8 {
        if !privileged {
            return Err(fail(
                SafetyRule::PointerArithmetic,
                "invalid size of register spill",
                "a pointer must be stored with all 8 bytes",
            ));
        }
        return Err(fail(
            SafetyRule::StackBounds,
            "invalid size of register spill",
            "a pointer must be stored to the stack with all 8 bytes",
        ));
    }
    if aligned
        && (value.kind.is_pointer()
            || (value.is_scalar() && (size == 8 || value.s.truncate(size) == value.s)))
    {
        // A register spill (scalars that fit keep their bounds too).
        let mut spilled = value;
        if size < 8 && value.is_scalar() {
            spilled.s = value.s.truncate(size);
        }
        for (i, b) in s.bytes.iter_mut().enumerate() {
            if (i as u32) < size {
                *b = Byte::Spill;
            } else if *b == Byte::Spill {
                *b = Byte::Misc;
            }
        }
        s.spill = spilled;
        return Ok(());
    }
    // Plain data destroys a spilled register in the slot.
    if s.bytes.contains(&Byte::Spill) {
        for b in s.bytes.iter_mut() {
            if *b == Byte::Spill {
                *b = Byte::Misc;
            }
        }
        s.spill = Reg::NOT_INIT;
    }
    let t = if value.is_null_const() {
        Byte::Zero
    } else {
        Byte::Misc
    };
    for i in 0..size as usize {
        s.bytes[byte + i] = t;
    }
    Ok(())
}

/// A fixed-offset load from a frame's stack.
fn stack_read(f: &Frame, at: i64, size: u32, privileged: bool) -> Res<Reg> {
    let (slot, byte) = Frame::locate(at);
    let s = f.slot(slot);
    let spill = s.spill_len();
    if spill > 0 {
        if byte == 0 && size as usize == spill && size == 8 {
            return Ok(s.spill);
        }
        if s.spill.kind.is_pointer() {
            return Err(fail(
                SafetyRule::StackBounds,
                "invalid size of register fill",
                "a pointer stored on the stack must be loaded back with all 8 bytes",
            ));
        }
        if byte == 0 && size as usize <= spill {
            let mut r = s.spill;
            r.s = r.s.truncate(size);
            r.id = 0;
            return Ok(r);
        }
    }
    let mut all_zero = true;
    for i in 0..size as usize {
        match s.bytes[byte + i] {
            Byte::Zero => {}
            Byte::Spill if s.spill.is_null_const() => {}
            Byte::Invalid if !privileged => {
                return Err(fail(
                    SafetyRule::StackBounds,
                    format!("invalid read from stack off {at}+{i} size {size}"),
                    format!(
                        "stack byte {} is read before anything was written to it",
                        at + i as i64
                    ),
                ));
            }
            _ => all_zero = false,
        }
    }
    Ok(if all_zero {
        Reg::konst(0)
    } else {
        Reg::unknown()
    })
}

/// A packet access: inside the range proven against `data_end`.
pub fn packet_check(regno: u8, base: &Reg, off: i64, size: u32) -> Res<()> {
    if base.s.smin < 0 {
        return Err(fail(
            SafetyRule::PacketBounds,
            format!(
                "R{regno} min value is negative, either use unsigned index or do a if (index >=0) check."
            ),
            format!(
                "the offset added to packet pointer r{regno} may be negative: make it unsigned or check it"
            ),
        ));
    }
    let at = off + base.off as i64;
    if at < 0 || at + size as i64 > base.range as i64 {
        return Err(fail(
            SafetyRule::PacketBounds,
            format!(
                "invalid access to packet, off={at} size={size}, R{regno}(id={},off={},r={})\nR{regno} offset is outside of the packet",
                base.id, base.off, base.range
            ),
            format!(
                "accessing {size} byte(s) at offset {at} of packet pointer r{regno} is not proven inside the packet (only {} are): compare `ptr + {} > data_end` and bail out first",
                base.range,
                at + size as i64
            ),
        ));
    }
    Ok(())
}

/// An access inside a region of `limit` bytes (map value, memory).
pub fn region_check(regno: u8, base: &Reg, off: i64, size: u32, limit: u32, what: &str) -> Res<()> {
    let at = off + base.off as i64;
    let kernel_oob = |o: i64| {
        if what == "map value" {
            format!("invalid access to map value, value_size={limit} off={o} size={size}")
        } else {
            format!("invalid access to memory, mem_size={limit} off={o} size={size}")
        }
    };
    if base.s.smin < 0 && (base.s.smin == i64::MIN || base.s.smin + at < 0) {
        return Err(fail(
            SafetyRule::MapBounds,
            format!(
                "R{regno} min value is negative, either use unsigned index or do a if (index >=0) check."
            ),
            format!(
                "the offset into the {what} in r{regno} may be negative: check `if (i < 0)` or use an unsigned index"
            ),
        ));
    }
    let lo = base.s.smin + at;
    if lo < 0 || lo + size as i64 > limit as i64 {
        let mut kernel = kernel_oob(lo);
        if !base.s.is_const() {
            kernel.push_str(&format!(
                "\nR{regno} min value is outside of the allowed memory range"
            ));
        }
        return Err(fail(
            SafetyRule::MapBounds,
            kernel,
            format!("a {size}-byte access at offset {lo} is outside the {limit}-byte {what}"),
        ));
    }
    if base.s.umax >= MAX_VAR_OFF as u64 {
        return Err(fail(
            SafetyRule::MapBounds,
            format!("R{regno} unbounded memory access, make sure to bounds check any such access"),
            format!(
                "the offset into the {what} in r{regno} has no upper bound: check it against the size first"
            ),
        ));
    }
    let hi = base.s.umax as i64 + at;
    if hi + size as i64 > limit as i64 {
        return Err(fail(
            SafetyRule::MapBounds,
            format!(
                "{}\nR{regno} max value is outside of the allowed memory range",
                kernel_oob(hi)
            ),
            format!(
                "the offset into the {what} in r{regno} may reach {hi}, so a {size}-byte access can pass its {limit} bytes: bound the index (e.g. `if (i >= N) return ...;`)"
            ),
        ));
    }
    Ok(())
}
