//! The kernel helpers sluice provides, with the kernel's ids and semantics.
//!
//! Which helpers a program may call depends on its type, as in the kernel:
//! [`xdp_table`] and [`tc_table`] hold the helpers of each. A program that
//! calls one that is missing fails at load time, naming it.

mod callbacks;
mod csum;
mod fib;
mod maps;
mod output;
mod packet;
mod redirect;
mod skb;
mod sock;
mod syncookie;
mod trace;
mod tunnel;

pub use sock::HZ;

use std::sync::atomic::{AtomicU32, Ordering};

use vm::{HelperCtx, HelperError, HelperFn, HelperTable};

use crate::Env;

pub type Ctx<'c, 'm> = HelperCtx<'c, 'm, Env>;
pub type Ret = Result<u64, HelperError>;

/// The helper id of a kernel helper name (checked against the id table).
fn id(name: &str) -> u32 {
    isa::helper_id(name).unwrap_or_else(|| panic!("unknown helper {name}"))
}

fn register(t: &mut HelperTable<Env>, helpers: &[(&str, HelperFn<Env>)]) {
    for (name, f) in helpers {
        t.register(id(name), *f);
    }
}

/// Helpers every packet program type has.
fn common(t: &mut HelperTable<Env>) {
    vm::register_basic(t);
    register(t, maps::HELPERS);
    register(t, trace::HELPERS);
    register(t, output::HELPERS);
    register(t, csum::COMMON);
    register(t, callbacks::HELPERS);
    register(t, sock::COMMON);
    register(t, sock::CGROUP);
    register(t, &[("spin_lock", spin_lock), ("spin_unlock", spin_unlock)]);
}

/// Helpers of XDP programs.
pub fn xdp_table() -> HelperTable<Env> {
    let mut t = HelperTable::new();
    common(&mut t);
    register(&mut t, packet::XDP);
    register(&mut t, redirect::XDP);
    register(&mut t, fib::HELPERS);
    register(&mut t, fib::XDP);
    register(&mut t, syncookie::HELPERS);
    t
}

/// Helpers of tc (`sched_cls`, `sched_act`) programs.
pub fn tc_table() -> HelperTable<Env> {
    let mut t = HelperTable::new();
    common(&mut t);
    register(&mut t, skb::TC);
    register(&mut t, sock::TC);
    register(&mut t, tunnel::TC);
    register(&mut t, csum::SKB);
    register(&mut t, redirect::TC);
    register(&mut t, fib::HELPERS);
    register(&mut t, fib::TC);
    register(&mut t, syncookie::HELPERS);
    t
}

/// Helpers of socket filters.
pub fn socket_table() -> HelperTable<Env> {
    let mut t = HelperTable::new();
    common(&mut t);
    register(&mut t, skb::SOCKET);
    t
}

/// The helper ids a program of `kind` may call in sluice (`None` for kinds
/// sluice cannot run).
pub fn ids_for(kind: &obj::ProgramKind) -> Option<Vec<u32>> {
    let table = match kind {
        obj::ProgramKind::Xdp { .. } => xdp_table(),
        obj::ProgramKind::SchedCls | obj::ProgramKind::SchedAct => tc_table(),
        obj::ProgramKind::SocketFilter => socket_table(),
        obj::ProgramKind::Unsupported(_) => return None,
    };
    // Tail calls are the VM's own, not a table entry.
    let mut ids: Vec<u32> = table.ids().collect();
    ids.push(id("tail_call"));
    Some(ids)
}

/// The `struct bpf_spin_lock` word at `addr` (in a map value), as a host
/// atomic: checked to be 4 writable, aligned bytes of program memory.
fn lock_word<'a>(c: &mut Ctx, addr: u64) -> Result<&'a AtomicU32, HelperError> {
    if !addr.is_multiple_of(4) {
        return Err(HelperError(format!(
            "bpf_spin_lock at {addr:#x}, which is not 4-byte aligned"
        )));
    }
    let ptr = c.mem.write(addr, 4)?.as_mut_ptr();
    // SAFETY: `write` proved the 4 bytes mapped and writable for the run
    // (map values live in arenas that outlive every run), and they are
    // aligned (checked above). Other threads touch the word only through
    // atomics too (this helper and its unlock).
    Ok(unsafe { AtomicU32::from_ptr(ptr.cast()) })
}

/// `bpf_spin_lock(lock)`: spins until the word is free, then takes it
/// (acquire). Hooks on other threads share the maps, so the lock is real.
/// A program holds at most one lock (the verifier refuses nesting); one
/// that asks for a second would spin forever, so it fails instead.
fn spin_lock(c: &mut Ctx) -> Ret {
    let addr = c.args[0];
    if let Some(held) = c.env.spin_held {
        return Err(HelperError(format!(
            "bpf_spin_lock at {addr:#x} while holding the lock at {held:#x}"
        )));
    }
    let word = lock_word(c, addr)?;
    while word
        .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        while word.load(Ordering::Relaxed) != 0 {
            std::hint::spin_loop();
        }
    }
    c.env.spin_held = Some(addr);
    Ok(0)
}

/// `bpf_spin_unlock(lock)`: frees the word (release).
fn spin_unlock(c: &mut Ctx) -> Ret {
    let addr = c.args[0];
    if c.env.spin_held != Some(addr) {
        return Err(HelperError(format!(
            "bpf_spin_unlock at {addr:#x}, a lock the program does not hold"
        )));
    }
    lock_word(c, addr)?.store(0, Ordering::Release);
    c.env.spin_held = None;
    Ok(0)
}

/// Frees the lock a run that failed half-way still held, so that hooks on
/// other threads do not spin forever (a run that ends normally has
/// released it: the verifier sees to that).
pub(crate) fn release_held_lock(env: &mut Env, mem: &mut vm::Memory<'_>) {
    if let Some(addr) = env.spin_held.take()
        && let Ok(bytes) = mem.write(addr, 4)
    {
        // SAFETY: as in `lock_word`: checked, aligned (it was taken).
        unsafe { AtomicU32::from_ptr(bytes.as_mut_ptr().cast()) }.store(0, Ordering::Release);
    }
}

/// Reads `len` bytes of program memory.
fn read(c: &Ctx, addr: u64, len: usize) -> Result<Vec<u8>, HelperError> {
    Ok(c.mem.read(addr, len)?.to_vec())
}

/// The map a handle argument names.
fn map_arg(c: &Ctx, handle: u64) -> Result<usize, HelperError> {
    c.env
        .map_of(handle)
        .ok_or_else(|| HelperError(format!("{handle:#x} is not a map")))
}

/// `-errno` as a helper returns it.
fn err(e: ::maps::Errno) -> u64 {
    e.to_helper_ret()
}
