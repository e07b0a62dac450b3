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
pub use tunnel::TunnelInfo;

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
    register(t, &[("spin_lock", spin_lock), ("spin_unlock", spin_lock)]);
}

/// Helpers of XDP programs.
pub fn xdp_table() -> HelperTable<Env> {
    let mut t = HelperTable::new();
    common(&mut t);
    register(&mut t, packet::XDP);
    register(&mut t, redirect::XDP);
    register(&mut t, fib::HELPERS);
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

/// Runs are single-threaded, so a lock is always free.
fn spin_lock(_: &mut Ctx) -> Ret {
    Ok(0)
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
