//! The abstract machine state on one path: registers with types, offsets
//! and ranges; the stack of every frame, byte by byte; references held.
//! Also when one state is covered by another (state pruning).

use std::collections::HashMap;
use std::fmt;

use crate::bounds::Scalar;

/// Index into the verifier's map table (object maps, then inner-map
/// templates of maps of maps).
pub type MapId = usize;

/// What a register holds.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Kind {
    NotInit,
    Scalar,
    Ctx,
    /// A map itself (`lddw map`), as helpers take it.
    MapPtr(MapId),
    /// A lookup in a map of maps: an inner map, or NULL.
    MapPtrOrNull(MapId),
    MapValue(MapId),
    MapValueOrNull(MapId),
    /// A map's key, as `bpf_for_each_map_elem` hands it to its callback
    /// (read-only).
    MapKey(MapId),
    /// A pointer into the stack of frame `n`.
    Stack(u8),
    Packet,
    PacketMeta,
    PacketEnd,
    /// Memory of a known size from a helper (ring buffer records).
    Mem {
        size: u32,
        ringbuf: bool,
        null: bool,
    },
    /// A socket from a lookup helper (`common`: a `sock_common`).
    Sock {
        null: bool,
        common: bool,
    },
    /// The address of a function (callback), by its start slot.
    Func(usize),
}

impl Kind {
    pub fn is_pointer(self) -> bool {
        !matches!(self, Kind::NotInit | Kind::Scalar)
    }

    pub fn maybe_null(self) -> bool {
        matches!(
            self,
            Kind::MapPtrOrNull(_)
                | Kind::MapValueOrNull(_)
                | Kind::Mem { null: true, .. }
                | Kind::Sock { null: true, .. }
        )
    }

    /// The same pointer proven non-null.
    pub fn non_null(self) -> Kind {
        match self {
            Kind::MapPtrOrNull(m) => Kind::MapPtr(m),
            Kind::MapValueOrNull(m) => Kind::MapValue(m),
            Kind::Mem { size, ringbuf, .. } => Kind::Mem {
                size,
                ringbuf,
                null: false,
            },
            Kind::Sock { common, .. } => Kind::Sock {
                null: false,
                common,
            },
            k => k,
        }
    }

    pub fn is_packet(self) -> bool {
        matches!(self, Kind::Packet | Kind::PacketMeta)
    }

    /// The kernel's name of the type (`reg_type_str`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::NotInit => "?",
            Kind::Scalar => "scalar",
            Kind::Ctx => "ctx",
            Kind::MapPtr(_) => "map_ptr",
            Kind::MapPtrOrNull(_) => "map_ptr_or_null",
            Kind::MapValue(_) => "map_value",
            Kind::MapValueOrNull(_) => "map_value_or_null",
            Kind::MapKey(_) => "map_key",
            Kind::Stack(_) => "fp",
            Kind::Packet => "pkt",
            Kind::PacketMeta => "pkt_meta",
            Kind::PacketEnd => "pkt_end",
            Kind::Mem {
                ringbuf: true,
                null: true,
                ..
            } => "ringbuf_mem_or_null",
            Kind::Mem { ringbuf: true, .. } => "ringbuf_mem",
            Kind::Mem { null: true, .. } => "mem_or_null",
            Kind::Mem { .. } => "mem",
            Kind::Sock {
                null: true,
                common: false,
            } => "sock_or_null",
            Kind::Sock {
                null: false,
                common: false,
            } => "sock",
            Kind::Sock { null: true, .. } => "sock_common_or_null",
            Kind::Sock { .. } => "sock_common",
            Kind::Func(_) => "func",
        }
    }
}

/// One register.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Reg {
    pub kind: Kind,
    /// Fixed offset of a pointer.
    pub off: i32,
    /// A scalar's value, or a pointer's variable offset.
    pub s: Scalar,
    /// Shared by copies: a null check, a packet range check or a scalar
    /// range check on one applies to all.
    pub id: u32,
    /// The reference (socket, ring buffer record) the pointer holds.
    pub ref_id: u32,
    /// Packet pointers: bytes proven readable from the pointer's base.
    pub range: i32,
    /// In a stored state: some path on from here depended on this
    /// number's value (its range decided a branch, a size, an offset), so
    /// pruning must compare it. Other numbers match any number.
    pub precise: bool,
}

impl Reg {
    pub const NOT_INIT: Reg = Reg {
        kind: Kind::NotInit,
        off: 0,
        s: SCALAR_ZERO,
        id: 0,
        ref_id: 0,
        range: 0,
        precise: false,
    };

    pub fn scalar(s: Scalar) -> Reg {
        Reg {
            kind: Kind::Scalar,
            s,
            ..Reg::NOT_INIT
        }
    }

    pub fn unknown() -> Reg {
        Reg::scalar(Scalar::unknown())
    }

    pub fn konst(v: u64) -> Reg {
        Reg::scalar(Scalar::konst(v))
    }

    pub fn pointer(kind: Kind) -> Reg {
        Reg {
            kind,
            ..Reg::NOT_INIT
        }
    }

    pub fn is_scalar(&self) -> bool {
        self.kind == Kind::Scalar
    }

    pub fn is_init(&self) -> bool {
        self.kind != Kind::NotInit
    }

    pub fn as_const(&self) -> Option<u64> {
        if self.is_scalar() {
            self.s.as_const()
        } else {
            None
        }
    }

    pub fn is_null_const(&self) -> bool {
        self.as_const() == Some(0)
    }
}

const SCALAR_ZERO: Scalar = Scalar {
    var: crate::tnum::Tnum::konst(0),
    umin: 0,
    umax: 0,
    smin: 0,
    smax: 0,
    u32min: 0,
    u32max: 0,
    s32min: 0,
    s32max: 0,
};

impl fmt::Display for Reg {
    /// In the style of the kernel's log: `ctx()`, `pkt(id=2,off=14,r=34)`,
    /// `scalar(umax=255)`, `fp-8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::NotInit => write!(f, "?"),
            Kind::Scalar => write!(f, "{}", self.s),
            Kind::Stack(_) if self.s.as_const() == Some(0) => write!(f, "fp{}", self.off),
            kind => {
                let mut parts = Vec::new();
                if self.id != 0 {
                    parts.push(format!("id={}", self.id));
                }
                if self.ref_id != 0 {
                    parts.push(format!("ref_obj_id={}", self.ref_id));
                }
                if self.off != 0 {
                    parts.push(format!("off={}", self.off));
                }
                if kind.is_packet() {
                    parts.push(format!("r={}", self.range));
                }
                if let Kind::Mem { size, .. } = kind {
                    parts.push(format!("size={size}"));
                }
                if self.s.as_const() != Some(0) {
                    let s = self.s.to_string();
                    parts.push(s.trim_start_matches("scalar(").trim_end_matches(')').into());
                }
                write!(f, "{}({})", kind.name(), parts.join(","))
            }
        }
    }
}

/// What one byte of stack holds.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Byte {
    Invalid,
    Misc,
    Zero,
    /// Part of a spilled register.
    Spill,
}

/// An 8-byte stack slot. `bytes[0]` is the lowest address.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Slot {
    pub bytes: [Byte; 8],
    /// The register spilled here; its low `n` bytes are the slot's first
    /// `n` bytes marked [`Byte::Spill`].
    pub spill: Reg,
    /// In a stored state: some path on from here reads the slot before
    /// writing it whole. Pruning ignores the other slots.
    pub live: bool,
}

impl Slot {
    pub const EMPTY: Slot = Slot {
        bytes: [Byte::Invalid; 8],
        spill: Reg::NOT_INIT,
        live: false,
    };

    /// The register, when the whole slot holds one spilled register.
    pub fn full_spill(&self) -> Option<&Reg> {
        (self.bytes == [Byte::Spill; 8]).then_some(&self.spill)
    }

    pub fn spill_len(&self) -> usize {
        self.bytes.iter().take_while(|b| **b == Byte::Spill).count()
    }
}

pub const STACK_SIZE: usize = 512;
/// Frames a call chain may hold (`MAX_CALL_FRAMES`).
pub const MAX_FRAMES: usize = 8;
pub const SLOTS: usize = STACK_SIZE / 8;

/// One function activation.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Frame {
    pub regs: [Reg; 11],
    /// Slot `i` covers stack offsets `-(i+1)*8 .. -i*8`; slots past the
    /// end were never touched.
    pub stack: Vec<Slot>,
    /// Where the caller continues (slot after the call), for frames > 0;
    /// for a callback, the helper call that runs it (which may run it
    /// again).
    pub callsite: usize,
    /// A callback's frame (`bpf_loop`, `bpf_for_each_map_elem`).
    pub callback: bool,
    /// Calls of a `bpf_loop` callback explored so far on this path from the
    /// call in this frame (never more than its `nr_loops`); not compared
    /// when pruning, like the kernel's `callback_depth`.
    pub callback_depth: u64,
    /// The function's start slot.
    pub func: usize,
    /// Deepest stack byte touched, in bytes.
    pub depth: usize,
}

impl Frame {
    pub fn new(func: usize, callsite: usize, frameno: u8) -> Frame {
        let mut regs = [Reg::NOT_INIT; 11];
        regs[10] = Reg::pointer(Kind::Stack(frameno));
        Frame {
            regs,
            stack: Vec::new(),
            callsite,
            callback: false,
            callback_depth: 0,
            func,
            depth: 0,
        }
    }

    pub fn slot(&self, i: usize) -> &Slot {
        self.stack.get(i).unwrap_or(&Slot::EMPTY)
    }

    pub fn slot_mut(&mut self, i: usize) -> &mut Slot {
        if i >= self.stack.len() {
            self.stack.resize(i + 1, Slot::EMPTY);
        }
        &mut self.stack[i]
    }

    /// The stack byte at offset `off` (negative) from the frame pointer:
    /// slot index and byte index.
    pub fn locate(off: i64) -> (usize, usize) {
        let pos = (STACK_SIZE as i64 + off) as usize; // 0 = lowest address
        let from_top = SLOTS - 1 - pos / 8;
        (from_top, pos % 8)
    }
}

/// A reference a program holds and must release.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Held {
    pub id: u32,
    /// The instruction that took it.
    pub insn: usize,
}

/// The `bpf_spin_lock` a path holds: the map value's map and the id of
/// the lookup that gave the pointer (unlock must name the same).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Lock {
    pub map: MapId,
    pub id: u32,
}

/// The state of one path.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct State {
    pub frames: Vec<Frame>,
    pub refs: Vec<Held>,
    pub lock: Option<Lock>,
    /// Callback calls entered on the path so far: two states that differ
    /// here are different calls, not a loop (the kernel's
    /// `callback_unroll_depth`).
    pub callback_calls: u32,
}

impl State {
    pub fn cur(&self) -> &Frame {
        self.frames.last().expect("a frame")
    }

    pub fn cur_mut(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame")
    }

    pub fn reg(&self, r: u8) -> &Reg {
        &self.cur().regs[r as usize]
    }

    pub fn reg_mut(&mut self, r: u8) -> &mut Reg {
        &mut self.cur_mut().regs[r as usize]
    }

    /// Every register and spilled register of every frame.
    pub fn for_each_reg(&mut self, mut f: impl FnMut(&mut Reg)) {
        for frame in &mut self.frames {
            for r in frame.regs.iter_mut() {
                f(r);
            }
            for slot in frame.stack.iter_mut() {
                if slot.bytes.contains(&Byte::Spill) {
                    f(&mut slot.spill);
                }
            }
        }
    }

    /// The current frame's registers as the kernel's log shows them.
    pub fn describe(&self) -> String {
        let frame = self.cur();
        let mut parts: Vec<String> = frame
            .regs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_init())
            .map(|(i, r)| format!("R{i}={r}"))
            .collect();
        for (i, slot) in frame.stack.iter().enumerate() {
            let off = -((i as i64 + 1) * 8);
            if let Some(r) = slot.full_spill() {
                parts.push(format!("fp{off}={r}"));
            } else if slot.bytes != [Byte::Invalid; 8] {
                let s: String = slot
                    .bytes
                    .iter()
                    .rev()
                    .map(|b| match b {
                        Byte::Invalid => '?',
                        Byte::Misc => 'm',
                        Byte::Zero => '0',
                        Byte::Spill => 'r',
                    })
                    .collect();
                parts.push(format!("fp{off}={s}"));
            }
        }
        if self.frames.len() > 1 {
            format!("frame{}: {}", self.frames.len() - 1, parts.join(" "))
        } else {
            parts.join(" ")
        }
    }
}

/// Matches ids of an explored state to a new one's: consistent both ways.
#[derive(Default)]
pub struct IdMap {
    old_to_new: HashMap<u32, u32>,
    new_to_old: HashMap<u32, u32>,
    fresh: u32,
}

impl IdMap {
    fn check(&mut self, old: u32, new: u32) -> bool {
        if old == 0 {
            return true;
        }
        let new = if new == 0 {
            // An unlinked register: unique, so it can stand for one old id.
            self.fresh += 1;
            u32::MAX - self.fresh
        } else {
            new
        };
        let a = *self.old_to_new.entry(old).or_insert(new) == new;
        let b = *self.new_to_old.entry(new).or_insert(old) == old;
        a && b
    }
}

/// Whether a path reaching an instruction in state `new` is safe because
/// one in state `old` was proven safe from there: `old` allows everything
/// `new` can be. `live(frame, reg)` says which registers may still be read.
/// Unless `exact`, numbers of `old` not marked precise match any number.
pub fn covers(old: &State, new: &State, live: &dyn Fn(usize, usize) -> bool, exact: bool) -> bool {
    if old.frames.len() != new.frames.len() || old.refs.len() != new.refs.len() {
        return false;
    }
    let mut ids = IdMap::default();
    for (a, b) in old.refs.iter().zip(&new.refs) {
        if !ids.check(a.id, b.id) {
            return false;
        }
    }
    match (old.lock, new.lock) {
        (None, None) => {}
        (Some(a), Some(b)) if a.map == b.map && ids.check(a.id, b.id) => {}
        _ => return false,
    }
    for (fi, (fo, fnew)) in old.frames.iter().zip(&new.frames).enumerate() {
        if fo.callsite != fnew.callsite || fo.func != fnew.func || fo.callback != fnew.callback {
            return false;
        }
        for r in 0..11 {
            if live(fi, r) && !reg_covers(&fo.regs[r], &fnew.regs[r], &mut ids, exact) {
                return false;
            }
        }
        for i in 0..fo.stack.len().max(fnew.stack.len()) {
            if !exact && !fo.slot(i).live {
                continue;
            }
            if !slot_covers(fo.slot(i), fnew.slot(i), &mut ids, exact) {
                return false;
            }
        }
    }
    true
}

fn reg_covers(old: &Reg, new: &Reg, ids: &mut IdMap, exact: bool) -> bool {
    match old.kind {
        Kind::NotInit => true,
        Kind::Scalar if !exact && !old.precise => new.is_scalar(),
        Kind::Scalar => new.is_scalar() && old.s.includes(&new.s) && ids.check(old.id, new.id),
        _ => {
            old.kind == new.kind
                && old.off == new.off
                && old.s.includes(&new.s)
                && old.range <= new.range
                && ids.check(old.id, new.id)
                && ids.check(old.ref_id, new.ref_id)
        }
    }
}

fn slot_covers(old: &Slot, new: &Slot, ids: &mut IdMap, exact: bool) -> bool {
    // A spilled number no path depended on (or an unknown one) is no more
    // than misc bytes.
    let spill_is_misc = |o: &Reg| o.is_scalar() && (o.s.is_unknown() || (!exact && !o.precise));
    if let Some(o) = old.full_spill() {
        return match new.full_spill() {
            Some(n) => reg_covers(o, n, ids, exact),
            None => spill_is_misc(o) && !new.bytes.contains(&Byte::Invalid),
        };
    }
    if old.bytes.contains(&Byte::Spill) {
        // A narrower spill (a 32-bit number, say): the spilled part is
        // compared like a register when the new slot has the same shape, the
        // rest byte by byte.
        let same_shape = (old.bytes.iter().zip(&new.bytes))
            .all(|(o, n)| (*o == Byte::Spill) == (*n == Byte::Spill));
        let spill_ok = if same_shape {
            reg_covers(&old.spill, &new.spill, ids, exact)
        } else {
            spill_is_misc(&old.spill)
                && (old.bytes.iter().zip(&new.bytes))
                    .all(|(o, n)| *o != Byte::Spill || *n != Byte::Invalid)
        };
        return spill_ok
            && (old.bytes.iter().zip(&new.bytes))
                .all(|(o, n)| *o == Byte::Spill || byte_covers(*o, *n, new));
    }
    (old.bytes.iter().zip(&new.bytes)).all(|(o, n)| byte_covers(*o, *n, new))
}

/// One stack byte that is not part of a spill in the old state.
fn byte_covers(old: Byte, new: Byte, new_slot: &Slot) -> bool {
    match old {
        // Reading either gives an unknown scalar (uninitialised stack is
        // readable for privileged programs): anything can stand in for it.
        Byte::Invalid | Byte::Misc => true,
        Byte::Zero => new == Byte::Zero || (new == Byte::Spill && new_slot.spill.is_null_const()),
        Byte::Spill => unreachable!("spilled bytes are compared as registers"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_offsets_locate_slots_and_bytes() {
        assert_eq!(Frame::locate(-8), (0, 0));
        assert_eq!(Frame::locate(-1), (0, 7));
        assert_eq!(Frame::locate(-9), (1, 7));
        assert_eq!(Frame::locate(-512), (63, 0));
    }

    #[test]
    fn wider_ranges_cover_narrower_ones() {
        let mut old = State {
            frames: vec![Frame::new(0, 0, 0)],
            refs: vec![],
            lock: None,
            callback_calls: 0,
        };
        let mut new = old.clone();
        old.frames[0].regs[1] = Reg::scalar(Scalar::urange(0, 100));
        new.frames[0].regs[1] = Reg::scalar(Scalar::urange(3, 7));
        let all = |_: usize, _: usize| true;
        assert!(covers(&old, &new, &all, true));
        assert!(!covers(&new, &old, &all, true));
        // Not marked precise, any number does.
        assert!(covers(&new, &old, &all, false));
        let dead = |_: usize, r: usize| r != 1;
        assert!(covers(&new, &old, &dead, true));
    }
}
