//! The proof that a file's byte ranges were read exactly: range 0 starts
//! at the file's header, and range k+1 began where range k's chain of
//! records crossed its end, in the same reader state. [`check`] lists the
//! ranges that did not, with the proven position to read them again from;
//! [`read_checked`] reads every range, re-reads those, and checks again
//! until none is left (see docs/shards.md).

use serde::Serialize;

use crate::{Boundary, IoError, PcapSource, Position, Shard, ShardError};

/// A range to read again: its index among the boundaries checked, and the
/// position proven for it (the `next` of the range before).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Redo {
    pub index: usize,
    pub shard: Shard,
    pub from: Position,
}

/// The ranges whose start is not proven by the range before: `boundaries`
/// are one or more files' ranges, each file's in order from its range at
/// 0, each starting where the one before ends. A range after one that
/// ended on an error lies past the end of the file's sequential read and
/// is not checked. Empty: every range read exactly the records whose
/// first byte it holds (by induction from the file's header).
pub fn check(boundaries: &[Boundary]) -> Result<Vec<Redo>, ShardError> {
    let mut redo = Vec::new();
    for (index, b) in boundaries.iter().enumerate() {
        let proven = if b.shard.start == 0 {
            Position {
                offset: 0,
                state: b.first.state.clone(),
            }
        } else {
            let prev = index.checked_sub(1).map(|i| &boundaries[i]);
            let Some(prev) =
                prev.filter(|p| p.shard.path == b.shard.path && p.shard.end == b.shard.start)
            else {
                return Err(ShardError::NotContiguous {
                    path: b.shard.path.clone(),
                    start: b.shard.start,
                });
            };
            match &prev.next {
                Some(next) => next.clone(),
                None => continue,
            }
        };
        if b.first != proven {
            redo.push(Redo {
                index,
                shard: b.shard.clone(),
                from: proven,
            });
        }
    }
    Ok(redo)
}

/// Every range of a plan read and proven: each range's boundary and what
/// the reading function made of it (of its last, proven read), the
/// re-reads done, and the rounds of checking it took.
#[derive(Debug)]
pub struct Checked<R> {
    pub boundaries: Vec<Boundary>,
    pub results: Vec<R>,
    pub redone: Vec<Redo>,
    pub rounds: usize,
}

impl<R> Checked<R> {
    /// Whether range `index` lies past an error of its file (its records
    /// are not part of the file's sequential read, which ends there).
    pub fn past_error(&self, index: usize) -> bool {
        let start = (0..=index)
            .rev()
            .find(|&i| self.boundaries[i].shard.start == 0)
            .unwrap_or(0);
        self.boundaries[start..index]
            .iter()
            .any(|b| b.error.is_some())
    }

    /// The error each file's sequential read ends on, as it gives it (its
    /// packet counted from the file's first frame), in plan order.
    pub fn errors(&self) -> Vec<IoError> {
        let mut errors = Vec::new();
        let mut before = 0u64;
        for (i, b) in self.boundaries.iter().enumerate() {
            if b.shard.start == 0 {
                before = 0;
            }
            if self.past_error(i) {
                continue;
            }
            if let Some(e) = &b.error {
                let mut e = e.clone();
                e.packet = e.packet.map(|p| p + before as usize);
                errors.push(e);
            }
            before += b.frames;
        }
        errors
    }
}

/// Reads every shard with `read` (given the range's index and source;
/// frames it leaves unread are read and dropped), checks the boundaries,
/// re-reads the ranges [`check`] lists from their proven positions, and
/// checks again until it lists none. Shards are one or more files'
/// ranges, as [`plan`](crate::plan) gives them.
pub fn read_checked<R>(
    shards: &[Shard],
    mut read: impl FnMut(usize, &mut PcapSource) -> R,
) -> Result<Checked<R>, ShardError> {
    let mut one = |index: usize, source: Result<PcapSource, IoError>| {
        let mut source = source?;
        let result = read(index, &mut source);
        while source.next_raw().is_some() {}
        let boundary = source.boundary().ok_or_else(|| {
            let reason = "reading stopped before the range's end".to_string();
            IoError::reading(&shards[index].path, reason)
        })?;
        Ok::<_, ShardError>((boundary, result))
    };
    let mut boundaries = Vec::with_capacity(shards.len());
    let mut results = Vec::with_capacity(shards.len());
    for (index, shard) in shards.iter().enumerate() {
        let (b, r) = one(index, PcapSource::open_range(shard))?;
        boundaries.push(b);
        results.push(r);
    }
    let mut redone = Vec::new();
    let mut rounds = 1;
    loop {
        let redo = check(&boundaries)?;
        if redo.is_empty() {
            break;
        }
        for r in &redo {
            let (b, result) = one(r.index, PcapSource::open_range_at(&r.shard, &r.from))?;
            boundaries[r.index] = b;
            results[r.index] = result;
        }
        redone.extend(redo);
        rounds += 1;
    }
    Ok(Checked {
        boundaries,
        results,
        redone,
        rounds,
    })
}
