//! `bpf_spin_lock`, as the kernel checks it.
//!
//! Rule: a program holds at most one lock at a time: the `struct
//! bpf_spin_lock` of a map value (where the value's BTF puts it), taken
//! through a pointer at exactly that constant offset and released through
//! the same pointer. While it holds it, it calls no helper but
//! `bpf_spin_unlock` (its own static functions are fine), makes no legacy
//! packet load and does not leave the program. No load, store, atomic or
//! helper ever touches the lock's word itself: the lock is the runtime's.

use crate::check::{Res, Verifier, fail};
use crate::state::{Kind, Lock, Reg, State};
use crate::{MapView, SafetyRule};

/// `bpf_spin_lock` and `bpf_spin_unlock`.
pub(crate) const SPIN_LOCK: u32 = 93;
pub(crate) const SPIN_UNLOCK: u32 = 94;

/// Before helper `id` is called: only `bpf_spin_unlock` while a lock is
/// held (so a second lock is refused here too, as the kernel does).
pub(crate) fn call_allowed(st: &State, id: u32) -> Res<()> {
    match st.lock {
        Some(_) if id != SPIN_UNLOCK => Err(fail(
            SafetyRule::SpinLock,
            "function calls are not allowed while holding a lock",
            "the program calls a helper between bpf_spin_lock and bpf_spin_unlock: release the lock first (only bpf_spin_unlock, and the program's own functions, may be called while holding it)",
        )),
        _ => Ok(()),
    }
}

/// At the program's own exit, and before a legacy packet load (`what`):
/// no lock may be held.
pub(crate) fn not_held(st: &State, what: &str) -> Res<()> {
    match st.lock {
        Some(_) => Err(fail(
            SafetyRule::SpinLock,
            format!("{what} cannot be used inside bpf_spin_lock-ed region"),
            format!("{what} while holding a bpf_spin_lock: call bpf_spin_unlock first"),
        )),
        None => Ok(()),
    }
}

/// A `size`-byte access at `off` from `base`, a pointer into a value of
/// `map`, must not overlap the lock's word (any offset the pointer may
/// have counts).
pub(crate) fn untouched(map: &MapView, base: &Reg, off: i64, size: u32) -> Res<()> {
    let Some(lock) = map.spin_lock else {
        return Ok(());
    };
    let at = off + base.off as i64;
    let (lo, hi) = (
        base.s.smin.saturating_add(at),
        (base.s.umax as i64).saturating_add(at + size as i64),
    );
    if lo < lock as i64 + 4 && (lock as i64) < hi {
        return Err(fail(
            SafetyRule::SpinLock,
            "bpf_spin_lock cannot be accessed directly by load/store",
            format!(
                "bytes {lock}..{} of {}'s values are its bpf_spin_lock, which only bpf_spin_lock and bpf_spin_unlock may touch",
                lock + 4,
                map.name
            ),
        ));
    }
    Ok(())
}

impl Verifier<'_> {
    /// The lock argument (`reg`, in r`r`) of `bpf_spin_lock` or
    /// `bpf_spin_unlock` (`id`): takes or releases the lock in `st`.
    pub(crate) fn spin_lock_arg(&self, st: &mut State, r: u8, reg: &Reg, id: u32) -> Res<()> {
        let Kind::MapValue(m) = reg.kind else {
            unreachable!("the argument's type is checked first");
        };
        let info = &self.maps[m];
        let Some(var) = reg.s.as_const() else {
            return Err(fail(
                SafetyRule::SpinLock,
                format!(
                    "R{r} doesn't have constant offset. bpf_spin_lock has to be at the constant offset"
                ),
                format!("r{r} points at a variable offset in {}'s value", info.name),
            ));
        };
        let Some(at) = info.spin_lock else {
            return Err(fail(
                SafetyRule::SpinLock,
                format!("map '{}' has no valid bpf_spin_lock", info.name),
                format!(
                    "{}'s value type has no struct bpf_spin_lock member (the lock is found through the map's BTF)",
                    info.name
                ),
            ));
        };
        let off = (var as i64).wrapping_add(reg.off as i64);
        if off != at as i64 {
            return Err(fail(
                SafetyRule::SpinLock,
                format!("off {off} doesn't point to 'struct bpf_spin_lock' that is at {at}"),
                format!(
                    "r{r} points at byte {off} of {}'s value, its bpf_spin_lock is at byte {at}",
                    info.name
                ),
            ));
        }
        let lock = Lock { map: m, id: reg.id };
        if id == SPIN_LOCK {
            // A second lock never gets here (`call_allowed`).
            st.lock = Some(lock);
            return Ok(());
        }
        match st.lock {
            None => Err(fail(
                SafetyRule::SpinLock,
                "bpf_spin_unlock without taking a lock",
                "bpf_spin_unlock on a path where no bpf_spin_lock was taken",
            )),
            Some(held) if held != lock => Err(fail(
                SafetyRule::SpinLock,
                "bpf_spin_unlock of different lock",
                "bpf_spin_unlock through a pointer that is not the one bpf_spin_lock took (another map value, or another lookup)",
            )),
            Some(_) => {
                st.lock = None;
                Ok(())
            }
        }
    }
}
