//! [`ShardRun`]: a run over one byte range of a capture (one shard of a
//! plan, [`Origin::Range`](crate::Origin::Range)) kept raw for a merge:
//! the pipeline's counters, every map's contents as bytes, what the
//! source skipped, the error it ended on, and the range's
//! [`capture::Boundary`], the proof of where its reader began. It goes to
//! bytes and back ([`ShardRun::to_bytes`], CBOR with byte strings) to
//! travel between processes; [`merge_runs`](crate::merge_runs) makes one
//! process's report of many.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64};

use maps::{Map, MapType};
use pipeline::ReplayCounters;
use runtime::Hook;
use serde::{Deserialize, Serialize};

use crate::merge_policy::MergeError;
use crate::report::RunReport;
use crate::run_spec::{RunSpec, replay_raw};
use crate::source::Origin;
use crate::{Error, sink};

/// Bytes that serialize as a byte string (CBOR's compact form).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Bytes, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = a.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Bytes(out))
            }
        }
        d.deserialize_bytes(Visit)
    }
}

/// One map's contents after a range's run, raw: every entry of a hash
/// or LPM trie, the entries of an array not all zeros (keys as the map
/// holds them, values in user space's layout: per-CPU maps give every
/// CPU's copy, each rounded up to 8 bytes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapContents {
    pub name: String,
    pub entries: Vec<(Bytes, Bytes)>,
}

/// Whether a map's contents are kept raw after a run (maps of keys and
/// values the program writes); other maps (program arrays, devmaps, ring
/// buffers, queues, read-only data) hold what the specification gave them.
pub(crate) fn holds_values(map: &Map) -> bool {
    use MapType::*;
    let kind = matches!(
        map.map_type(),
        Array | PercpuArray | Hash | PercpuHash | LruHash | LruPercpuHash | LpmTrie
    );
    kind && !map.is_frozen()
}

/// The contents [`MapContents`] keeps of `map`.
pub(crate) fn contents_of(map: &Map) -> Vec<(Bytes, Bytes)> {
    let raw = match map.map_type() {
        MapType::Array | MapType::PercpuArray => map.entries_skipping_zeros().0,
        _ => map.entries(),
    };
    raw.into_iter().map(|(k, v)| (Bytes(k), Bytes(v))).collect()
}

/// A run over one byte range of a capture, raw, as
/// [`merge_runs`](crate::merge_runs) takes it.
#[derive(Clone, Serialize, Deserialize)]
pub struct ShardRun {
    /// The range's place in the plan (set by the caller; reports only).
    pub index: usize,
    /// Where the range's reader began and where its records crossed the
    /// range's end.
    pub boundary: capture::Boundary,
    /// Whether the range was read from a proven position given to it
    /// (read again after [`capture::check`]).
    pub redone: bool,
    /// Worker threads that ran the program, and the CPUs of its per-CPU maps.
    pub threads: usize,
    pub cpus: u32,
    pub seconds: f64,
    /// The pipeline's counts; packet numbers count from the range's first frame.
    pub counters: ReplayCounters,
    /// The maps that hold values, in the object's order.
    pub maps: Vec<MapContents>,
    /// Records each ring buffer held, and events each perf array took.
    pub ringbuf: BTreeMap<String, u64>,
    pub perf_events: BTreeMap<String, u64>,
    /// Frames without an Ethernet form skipped, per link type name, in
    /// order of first appearance.
    pub skipped: Vec<(String, u64)>,
    /// The error the range ended on, as the run gave it (its packet
    /// counted from the range's first frame).
    pub source_error: Option<String>,
}

impl std::fmt::Debug for ShardRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardRun")
            .field("index", &self.index)
            .field("range", &self.boundary.shard.describe())
            .field("packets", &self.counters.packets)
            .field("frames", &self.boundary.frames)
            .finish_non_exhaustive()
    }
}

/// A range's run: its own report (with its per-packet table and the
/// packets kept in memory, as asked) and the raw parts a merge takes.
pub struct RangeRun {
    pub report: RunReport,
    pub run: ShardRun,
}

impl ShardRun {
    /// The run as bytes (CBOR).
    pub fn to_bytes(&self) -> Result<Vec<u8>, MergeError> {
        let mut out = Vec::new();
        ciborium::into_writer(self, &mut out).map_err(|e| MergeError::Encode(e.to_string()))?;
        Ok(out)
    }

    /// A run from [`to_bytes`](Self::to_bytes)'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<ShardRun, MergeError> {
        ciborium::from_reader(bytes).map_err(|e| MergeError::Decode(e.to_string()))
    }

    /// Packets the run ran.
    pub fn packets(&self) -> u64 {
        self.counters.packets
    }
}

impl RunSpec {
    /// Runs the packets of one byte range ([`Origin::Range`]) through
    /// `hook` (fresh, built from [`RunSpec::hook_spec`], with the maps
    /// the specification gives) and keeps, besides the range's report,
    /// the raw parts [`merge_runs`](crate::merge_runs) takes. Refuses
    /// another source, a limit, and a run stopped before the range's end
    /// (it has no boundary).
    pub fn run_range_on(
        &self,
        hook: &mut Hook,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
    ) -> Result<RangeRun, Error> {
        let Origin::Range { proven, .. } = &self.source.origin else {
            return Err(MergeError::NotARange {
                what: self.source.describe(),
            }
            .into());
        };
        if self.limit.is_some() {
            return Err(MergeError::Limit.into());
        }
        let mut source = self.source.open(stop)?;
        let opened = sink::open(&self.sinks)?;
        let raw = replay_raw(self, hook, source.as_mut(), opened, stop, progress)?;
        let boundary = raw.boundary.ok_or_else(|| MergeError::NoBoundary {
            range: self.source.describe(),
        })?;
        let mut counters = raw.summary.counters;
        counters.log = None;
        counters.coverage = None;
        let maps = hook
            .maps()
            .iter()
            .filter(|m| holds_values(m))
            .map(|m| MapContents {
                name: m.name().to_string(),
                entries: contents_of(m),
            })
            .collect();
        let cpus = hook.maps().iter().map(Map::ncpus).max().unwrap_or(1);
        let run = ShardRun {
            index: 0,
            redone: proven.is_some() && boundary.shard.start != 0,
            boundary,
            threads: raw.summary.threads,
            cpus,
            seconds: raw.summary.seconds,
            counters,
            maps,
            ringbuf: raw.report.ringbuf.clone(),
            perf_events: raw.report.perf_events.clone(),
            skipped: raw.skipped.0,
            source_error: raw.summary.source_error.map(|e| e.0),
        };
        Ok(RangeRun {
            report: raw.report,
            run,
        })
    }

    /// [`run_range_on`](Self::run_range_on) on a hook built from
    /// [`RunSpec::hook_spec`].
    pub fn run_range(
        &self,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
    ) -> Result<RangeRun, Error> {
        let built = self.hook_spec().build_with(stop)?;
        let mut hook = built.hook;
        let mut ran = self.run_range_on(&mut hook, stop, progress)?;
        ran.report.notes = built.notes;
        Ok(ran)
    }
}
