//! Helper functions: a table the embedder fills, indexed by the kernel's
//! helper ids, and the helpers that need nothing but time, randomness and a
//! CPU number.

use crate::memory::Memory;

/// What a helper sees: the five argument registers, the embedder's state
/// and the program's memory (checked).
pub struct HelperCtx<'c, 'm, E> {
    pub args: [u64; 5],
    pub env: &'c mut E,
    pub mem: &'c mut Memory<'m>,
    /// When the helper asked for a callback: its state and the callback's
    /// return value. `None` on the first call.
    pub resume: Option<Resume>,
    /// Set by a helper to have a BPF function called; the helper is called
    /// again with `resume` when the function returns (`bpf_loop`,
    /// `bpf_for_each_map_elem`). Its own return value is ignored then.
    pub callback: Option<Callback>,
}

/// A helper's request to call a BPF function.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Callback {
    /// A function handle, as `lddw func(...)` loads it.
    pub func: u64,
    pub args: [u64; 5],
    /// Anything the helper needs when it resumes.
    pub state: u64,
}

/// What a resumed helper gets back.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Resume {
    pub state: u64,
    /// The callback's r0.
    pub ret: u64,
}

/// A helper failed in a way the kernel would have prevented (bad pointer,
/// bad argument); the run stops with this message.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{0}")]
pub struct HelperError(pub String);

impl From<crate::memory::MemFault> for HelperError {
    fn from(f: crate::memory::MemFault) -> Self {
        HelperError(f.to_string())
    }
}

/// A helper implementation. Plain function pointers keep calls cheap and
/// tables cloneable.
pub type HelperFn<E> = fn(&mut HelperCtx<'_, '_, E>) -> Result<u64, HelperError>;

/// A registered helper.
pub struct Helper<E> {
    pub name: String,
    pub func: HelperFn<E>,
}

impl<E> Clone for Helper<E> {
    fn clone(&self) -> Self {
        Helper {
            name: self.name.clone(),
            func: self.func,
        }
    }
}

/// Helpers by id (dense, so a call is one index).
pub struct HelperTable<E> {
    entries: Vec<Option<Helper<E>>>,
}

impl<E> Clone for HelperTable<E> {
    fn clone(&self) -> Self {
        HelperTable {
            entries: self.entries.clone(),
        }
    }
}

impl<E> Default for HelperTable<E> {
    fn default() -> Self {
        HelperTable::new()
    }
}

impl<E> HelperTable<E> {
    pub fn new() -> Self {
        HelperTable {
            entries: Vec::new(),
        }
    }

    /// Registers `func` as helper `id`, replacing any earlier one. The name
    /// defaults to the kernel's name for the id.
    pub fn register(&mut self, id: u32, func: HelperFn<E>) -> &mut Self {
        let name = isa::helper_name(id.into()).unwrap_or_else(|| format!("helper_{id}"));
        self.register_named(id, name, func)
    }

    pub fn register_named(
        &mut self,
        id: u32,
        name: impl Into<String>,
        func: HelperFn<E>,
    ) -> &mut Self {
        let idx = id as usize;
        if self.entries.len() <= idx {
            self.entries.resize_with(idx + 1, || None);
        }
        self.entries[idx] = Some(Helper {
            name: name.into(),
            func,
        });
        self
    }

    pub fn get(&self, id: u64) -> Option<&Helper<E>> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.entries.get(i))
            .and_then(Option::as_ref)
    }

    /// Registered ids in ascending order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some())
            .map(|(i, _)| i as u32)
    }
}

/// The state the basic helpers need.
pub trait BasicEnv {
    /// Monotonic time in nanoseconds.
    fn now_ns(&mut self) -> u64;
    fn random_u32(&mut self) -> u32;
    fn cpu_id(&self) -> u32;
}

/// A deterministic [`BasicEnv`]: a simulated clock that the embedder sets
/// and that ticks one nanosecond per read (so time is strictly monotonic),
/// a seeded xorshift generator and a fixed CPU number. Runs are therefore
/// reproducible, which differential testing relies on.
///
/// For differential runs the embedder can queue values another system
/// produced (`replay_ns`, `replay_u32`): reads take them first, in order.
#[derive(Clone, Debug)]
pub struct SimEnv {
    pub clock_ns: u64,
    pub cpu: u32,
    rng: u64,
    /// Clock readings to return before the simulated clock.
    pub replay_ns: std::collections::VecDeque<u64>,
    /// Random numbers to return before the generator's.
    pub replay_u32: std::collections::VecDeque<u32>,
}

impl SimEnv {
    pub fn new(seed: u64) -> SimEnv {
        SimEnv {
            clock_ns: 0,
            cpu: 0,
            // xorshift must not start at zero.
            rng: seed | 1,
            replay_ns: Default::default(),
            replay_u32: Default::default(),
        }
    }
}

impl SimEnv {
    /// The simulation of CPU `cpu`: its own deterministic random numbers
    /// (CPU 0's are those of [`SimEnv::default`]), so that hooks running on
    /// several threads differ from one another but every run repeats.
    pub fn for_cpu(cpu: u32) -> SimEnv {
        let mut sim =
            SimEnv::new(DEFAULT_SEED ^ u64::from(cpu).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        sim.cpu = cpu;
        sim
    }
}

const DEFAULT_SEED: u64 = 0x5eed_5eed_5eed_5eed;

impl Default for SimEnv {
    fn default() -> Self {
        SimEnv::new(DEFAULT_SEED)
    }
}

impl BasicEnv for SimEnv {
    fn now_ns(&mut self) -> u64 {
        if let Some(t) = self.replay_ns.pop_front() {
            return t;
        }
        let t = self.clock_ns;
        self.clock_ns += 1;
        t
    }

    fn random_u32(&mut self) -> u32 {
        if let Some(r) = self.replay_u32.pop_front() {
            return r;
        }
        // xorshift64* (Vigna): cheap and good enough for sampling decisions.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    fn cpu_id(&self) -> u32 {
        self.cpu
    }
}

/// Kernel helper ids of the basic helpers.
pub mod ids {
    pub const KTIME_GET_NS: u32 = 5;
    pub const GET_PRANDOM_U32: u32 = 7;
    pub const GET_SMP_PROCESSOR_ID: u32 = 8;
    pub const KTIME_GET_BOOT_NS: u32 = 125;
    pub const KTIME_GET_COARSE_NS: u32 = 160;
}

fn ktime_get_ns<E: BasicEnv>(c: &mut HelperCtx<'_, '_, E>) -> Result<u64, HelperError> {
    Ok(c.env.now_ns())
}

fn get_prandom_u32<E: BasicEnv>(c: &mut HelperCtx<'_, '_, E>) -> Result<u64, HelperError> {
    Ok(c.env.random_u32().into())
}

fn get_smp_processor_id<E: BasicEnv>(c: &mut HelperCtx<'_, '_, E>) -> Result<u64, HelperError> {
    Ok(c.env.cpu_id().into())
}

/// Registers the time, random-number and CPU-id helpers.
pub fn register_basic<E: BasicEnv>(table: &mut HelperTable<E>) {
    table
        .register(ids::KTIME_GET_NS, ktime_get_ns::<E>)
        .register(ids::KTIME_GET_BOOT_NS, ktime_get_ns::<E>)
        .register(ids::KTIME_GET_COARSE_NS, ktime_get_ns::<E>)
        .register(ids::GET_PRANDOM_U32, get_prandom_u32::<E>)
        .register(ids::GET_SMP_PROCESSOR_ID, get_smp_processor_id::<E>);
}
