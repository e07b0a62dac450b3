//! A tcpdump filter over the shards of a plan, each range on its own
//! ([`FilterRunSpec::run_range`] gives a [`FilterPart`]: its counts, its
//! matching packets numbered within the range, its boundary, the pcap
//! partition it wrote), and the parts merged ([`merge_filter`]) into the
//! [`FilterReport`] that [`FilterRunSpec::run`] gives over the whole
//! file: counts summed, packets numbered from the file's first, the
//! error the file's sequential read ends on.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use capture::{Boundary, Position, Shard};
use cbpf::FilterOptions;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::filter::{FilterReport, FilterRunSpec, MatchTable};
use crate::flows_shard::{PartsError, decode, encode, files, open_range, proven};
use pipeline::SourceError;

/// One range filtered.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FilterPart {
    pub boundary: Boundary,
    pub expression: String,
    /// Records read and matched in the range.
    pub read: u64,
    pub matched: u64,
    /// Link types met, with their program's length, in order met.
    pub programs: Vec<(u32, usize)>,
    /// The matching packets, `index` counted from the range's first.
    pub matches: MatchTable,
    /// The partition written (`output_dir/part-INDEX.pcap`), if asked.
    pub written: Option<PathBuf>,
}

impl FilterPart {
    /// The part as bytes (CBOR).
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        encode(self, "a filter part")
    }

    /// A part from [`to_bytes`](Self::to_bytes)'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<FilterPart, Error> {
        decode(bytes, "a filter part")
    }
}

/// The partition of range `index` in `dir`: `part-00007.pcap`.
pub fn partition_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("part-{index:05}.pcap"))
}

impl FilterRunSpec {
    /// Filters the records of one range of a capture (`shard`, read from
    /// `proven` when given), for [`merge_filter`]. With `output_dir`, the
    /// matching packets go to its partition `part-{index:05}.pcap`,
    /// written whole or not at all (a temporary name renamed at the end:
    /// a task run again replaces it). The spec's origin and `write` are
    /// not used; a count is refused (each range is read whole).
    pub fn run_range(
        &self,
        shard: &Shard,
        proven: Option<&Position>,
        index: usize,
        output_dir: Option<&Path>,
        stop: Option<&'static AtomicBool>,
    ) -> Result<FilterPart, Error> {
        if self.count.is_some() {
            let why = "a filter over shards takes no count (each range is read whole)";
            return Err(PartsError::Option(why.into()).into());
        }
        let mut source = open_range(shard, proven, stop)?;
        let target = output_dir.map(|d| partition_path(d, index));
        let temp = target.as_ref().map(|t| {
            let mut name = t.as_os_str().to_owned();
            name.push(format!(".tmp-{}", std::process::id()));
            PathBuf::from(name)
        });
        let opts = FilterOptions {
            write: temp.as_deref(),
            count: None,
            stop,
        };
        let mut matches = MatchTable::default();
        let mut each = |m: &cbpf::Matched| {
            matches.index.push(m.index);
            matches.timestamp_ns.push(m.timestamp_ns);
            matches.length.push(m.data.len() as u32);
            matches.wire_length.push(m.orig_len);
        };
        let mut engine = cbpf::Interp;
        let summary =
            cbpf::filter_source_each(&mut source, &self.expr, &mut engine, &opts, &mut each)
                .map_err(|e| match e {
                    cbpf::FilterError::Io(io) if temp.as_deref() != Some(io.path.as_path()) => {
                        Error::Source(SourceError(io.to_string()))
                    }
                    e => Error::FilterRun(e),
                })?;
        let boundary = source.boundary().ok_or_else(|| PartsError::Stopped {
            shard: shard.describe(),
        })?;
        if let (Some(temp), Some(target)) = (&temp, &target) {
            std::fs::rename(temp, target).map_err(|e| {
                let reason = format!("renaming {}: {e}", temp.display());
                Error::FilterRun(cbpf::FilterError::Io(capture::IoError {
                    path: target.clone(),
                    packet: None,
                    reason,
                    op: Some("writing"),
                }))
            })?;
        }
        Ok(FilterPart {
            boundary,
            expression: self.expr.clone(),
            read: summary.read,
            matched: summary.matched,
            programs: summary
                .programs
                .iter()
                .map(|(l, p)| (*l, p.len()))
                .collect(),
            matches,
            written: target,
        })
    }
}

/// Merges the parts of every range of a plan (in plan order, proven) into
/// the report [`FilterRunSpec::run`] gives over the whole capture; for
/// several files, as if read one after another (`input` names them all,
/// packets numbered from the first file's first). `written` names the
/// partitions' directory, when they were written.
pub fn merge_filter(parts: &[FilterPart]) -> Result<FilterReport, Error> {
    let boundaries: Vec<Boundary> = parts.iter().map(|p| p.boundary.clone()).collect();
    proven(&boundaries)?;
    let expression = parts[0].expression.clone();
    if let Some(p) = parts.iter().find(|p| p.expression != expression) {
        let why = format!(
            "{}: filtered by `{}`, not `{expression}` as the others",
            p.boundary.shard.describe(),
            p.expression
        );
        return Err(PartsError::Option(why).into());
    }
    let mut inputs: Vec<String> = Vec::new();
    let (mut read, mut matched) = (0u64, 0u64);
    let mut programs: Vec<(u32, usize)> = Vec::new();
    let mut matches = MatchTable::default();
    let mut capture_error = None;
    for (indices, error) in files(&boundaries) {
        inputs.push(parts[indices[0]].boundary.shard.path.display().to_string());
        for &i in &indices {
            let p = &parts[i];
            for prog in &p.programs {
                if !programs.iter().any(|q| q.0 == prog.0) {
                    programs.push(*prog);
                }
            }
            matches
                .index
                .extend(p.matches.index.iter().map(|n| n + read));
            matches.timestamp_ns.extend(&p.matches.timestamp_ns);
            matches.length.extend(&p.matches.length);
            matches.wire_length.extend(&p.matches.wire_length);
            read += p.read;
            matched += p.matched;
        }
        if capture_error.is_none() {
            capture_error = error.map(|e| e.to_string());
        }
    }
    let dirs: Vec<String> = parts
        .iter()
        .filter_map(|p| {
            p.written
                .as_ref()?
                .parent()
                .map(|d| d.display().to_string())
        })
        .collect();
    Ok(FilterReport {
        input: inputs.join(", "),
        expression,
        engine: "interp",
        read,
        matched,
        written: dirs.first().cloned(),
        programs,
        decided_by_interpreter: 0,
        interpreter_reasons: Default::default(),
        capture_error,
        stopped: false,
        matches,
    })
}
