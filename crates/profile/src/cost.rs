//! The profiling loop: source -> hook (counting) -> one cost record per
//! packet, and the loads and stores per place summed per packet length.

use std::collections::BTreeMap;

use pipeline::{Source, SourceError, for_each_packet};
use runtime::Hook;
use serde::Serialize;

/// Which engine ran the program (counts are the same in both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VmEngine {
    Interpreter,
    Jit,
}

/// What one packet cost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PacketCost {
    /// Position in the source, from 1.
    pub seq: u64,
    /// Frame length in bytes (the paper's packet size).
    pub len: u32,
    pub insns: u64,
    /// Conditional jumps executed, and taken.
    pub branches: u64,
    pub taken: u64,
    pub helper_calls: u64,
    /// The program's own loads and stores, every place together.
    pub loads: u64,
    pub stores: u64,
    /// Reads and writes helpers made in program memory.
    pub helper_reads: u64,
    pub helper_writes: u64,
    pub verdict: &'static str,
}

impl PacketCost {
    /// Memory accesses: the program's loads and stores and the helpers'
    /// reads and writes (the paper's `m`).
    pub fn accesses(&self) -> u64 {
        self.loads + self.stores + self.helper_reads + self.helper_writes
    }
}

/// Loads and stores per place, summed over the packets of one length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PlaceSums {
    pub packets: u64,
    pub per_place: Vec<[u64; 2]>,
}

/// Every packet's cost, for [`crate::CostModel::fit`].
#[derive(Clone, Debug)]
pub struct Profile {
    pub program: String,
    pub engine: VmEngine,
    /// The places accesses are counted in (`stack`, `packet`, `context`,
    /// `map:NAME`, `scratch`).
    pub places: Vec<String>,
    /// The packets that ran to a verdict, in source order.
    pub packets: Vec<PacketCost>,
    /// Packets whose run failed (not in `packets`): how many, and the
    /// first few with the error.
    pub failed: u64,
    pub first_failures: Vec<(u64, String)>,
    pub(crate) by_length: BTreeMap<u32, PlaceSums>,
}

/// Why profiling stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("reading packets: {0}")]
    Source(#[from] SourceError),
    #[error("no packet ran to a verdict{0}")]
    Empty(String),
}

/// Failures kept with their message.
const FIRST_FAILURES: usize = 5;

/// Runs `hook` over up to `limit` packets of `source` without counting
/// them: the per-flow state and caches a later [`profile`] of the same
/// packets finds in place (its steady state). Returns the packets run.
pub fn warm_up(
    hook: &mut Hook,
    source: &mut dyn Source,
    limit: Option<u64>,
) -> Result<u64, ProfileError> {
    let mut done = 0;
    for_each_packet(source, limit, |info, bytes| {
        done += 1;
        // A packet that fails here fails again, counted, in the profile.
        let _ = hook.run(bytes, &crate::calibrate::meta(info.timestamp_ns));
    })?;
    Ok(done)
}

/// Runs `hook` over up to `limit` packets of `source`, counting; calls
/// `progress` with the packets done every 1024 packets.
pub fn profile(
    hook: &mut Hook,
    program: &str,
    source: &mut dyn Source,
    limit: Option<u64>,
    progress: &mut dyn FnMut(u64),
) -> Result<Profile, ProfileError> {
    hook.set_counting(true);
    let mut p = Profile {
        program: program.to_string(),
        engine: if hook.jit_enabled() {
            VmEngine::Jit
        } else {
            VmEngine::Interpreter
        },
        places: Vec::new(),
        packets: Vec::new(),
        failed: 0,
        first_failures: Vec::new(),
        by_length: BTreeMap::new(),
    };
    let mut done = 0u64;
    for_each_packet(source, limit, |info, bytes| {
        done += 1;
        if done.is_multiple_of(1024) {
            progress(done);
        }
        let meta = crate::calibrate::meta(info.timestamp_ns);
        let cost = match hook.run(bytes, &meta) {
            Ok(out) => {
                let s = out.stats;
                PacketCost {
                    seq: info.seq,
                    len: bytes.len() as u32,
                    insns: s.insns,
                    branches: s.branches,
                    taken: s.taken,
                    helper_calls: s.helper_calls,
                    loads: s.loads.iter().sum(),
                    stores: s.stores.iter().sum(),
                    helper_reads: s.helper_mem.reads,
                    helper_writes: s.helper_mem.writes,
                    verdict: out.verdict.name(),
                }
            }
            Err(e) => {
                p.failed += 1;
                if p.first_failures.len() < FIRST_FAILURES {
                    p.first_failures.push((info.seq, e.to_string()));
                }
                return;
            }
        };
        let places = hook.accesses_by_place();
        if p.places.len() != places.len() {
            p.places = places.iter().map(|(n, _)| n.to_string()).collect();
        }
        let sums = p.by_length.entry(cost.len).or_default();
        sums.packets += 1;
        sums.per_place.resize(places.len(), [0; 2]);
        for (acc, (_, c)) in sums.per_place.iter_mut().zip(&places) {
            acc[0] += c[0];
            acc[1] += c[1];
        }
        p.packets.push(cost);
    })?;
    progress(done);
    if p.packets.is_empty() {
        let why = match p.first_failures.first() {
            Some((seq, e)) => format!(" (packet {seq}: {e})"),
            None => " (the source is empty)".to_string(),
        };
        return Err(ProfileError::Empty(why));
    }
    Ok(p)
}
