//! The words of a merge over byte ranges: the [`MapPolicy`] each map is
//! merged by, the `merged` part of a report ([`MergedReport`]), and what
//! refuses a merge ([`MergeError`]). Types only: [`merge_runs`](crate::merge_runs)
//! and its helpers use them, and so do the report and the engine's error.

use std::collections::BTreeMap;
use std::path::PathBuf;

use maps::Errno;
use serde::{Deserialize, Serialize};

use crate::mapfmt::MapDump;

/// How a map's contents from several ranges become one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MapPolicy {
    /// Values added member by member (BTF integer members, else whole
    /// 8, 4, 2 or 1-byte words), each CPU's for per-CPU maps: what each
    /// range added to the specification's value (counters).
    Sum,
    /// Every key of every range; a key in several: the last range's
    /// value in plan order (an array's index: the last range that
    /// changed it).
    Union,
    /// The last range's contents.
    Last,
    /// Each range's contents, kept apart: the report lists them per
    /// range (`merged.kept`); the map holds the specification's contents.
    Keep,
}

impl MapPolicy {
    /// `sum`, `union`, `last`, `keep`.
    pub fn name(self) -> &'static str {
        match self {
            MapPolicy::Sum => "sum",
            MapPolicy::Union => "union",
            MapPolicy::Last => "last",
            MapPolicy::Keep => "keep",
        }
    }
}

impl std::fmt::Display for MapPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MapPolicy {
    type Err = MergeError;
    fn from_str(text: &str) -> Result<MapPolicy, MergeError> {
        match text {
            "sum" => Ok(MapPolicy::Sum),
            "union" => Ok(MapPolicy::Union),
            "last" => Ok(MapPolicy::Last),
            "keep" => Ok(MapPolicy::Keep),
            _ => Err(MergeError::BadPolicy { text: text.into() }),
        }
    }
}

/// Policies chosen per map name, overriding the defaults.
pub type MapPolicies = BTreeMap<String, MapPolicy>;

/// Why runs over ranges were not merged, or a range's run not kept.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no runs to merge")]
    Empty,
    #[error(
        "{range}: not proven: its reader began at offset {first}, the range before ended at offset {from}; \
         read it again from there (sluice.check lists it)"
    )]
    Unproven {
        range: String,
        first: u64,
        from: u64,
    },
    #[error("{}: its ranges end at byte {end} of {size}: the runs of the rest are missing", path.display())]
    Incomplete { path: PathBuf, end: u64, size: u64 },
    #[error(transparent)]
    Shards(#[from] capture::ShardError),
    #[error("map policy for `{name}`: no such map; the object has: {}", maps.join(", "))]
    NoSuchMap { name: String, maps: Vec<String> },
    #[error("map policy `{text}`: not a policy (sum, union, last or keep)")]
    BadPolicy { text: String },
    #[error("map {map}: merged contents not written: {errno}")]
    Write { map: String, errno: Errno },
    #[error("{what}: not a byte range of a capture (a shard's run reads one)")]
    NotARange { what: String },
    #[error("a shard's run reads its whole range: a limit is not taken")]
    Limit,
    #[error("{range}: the run stopped before the range's end: it has no proof to merge")]
    NoBoundary { range: String },
    #[error("a shard's run not encoded: {0}")]
    Encode(String),
    #[error("not a shard's run (bytes from ShardRun::to_bytes): {0}")]
    Decode(String),
}

/// What the report says of a merge: `merged` in `sluice run --json`'s keys.
#[derive(Clone, Debug, Serialize)]
pub struct MergedReport {
    /// The runs merged, and those among them read again from a proven
    /// position.
    pub shards: usize,
    pub redone: usize,
    /// Every map's policy, by name.
    pub map_policies: BTreeMap<String, MapPolicy>,
    /// The maps kept per range ([`MapPolicy::Keep`]): one dump per run.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub kept: BTreeMap<String, Vec<MapDump>>,
}
