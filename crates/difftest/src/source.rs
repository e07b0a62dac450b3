//! [`Differ::compare_source`]: every packet of a pipeline source through
//! both sides, the differential run of `sluice diff`.

use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::{Source, SourceError, for_each_packet};

use crate::{DiffSummary, Differ};

impl Differ {
    /// Compares every packet of `source` (the first `limit` of them), in
    /// order, and gives the totals after the final comparison; `progress`
    /// counts the packets read (for a progress bar polled elsewhere). A
    /// packet is numbered by its place in the source (from 0; a capture's
    /// skipped frames keep their numbers).
    ///
    /// The pipeline's own loop (`pipeline::for_each_packet`), not
    /// `pipeline::replay` with a `PacketHook`: a comparison gives no
    /// verdict to route, it runs one packet at a time on one CPU (the
    /// kernel's twin is pinned to CPU 0, no sibling exists), and it needs
    /// the packet's number in the source, which a hook is not told.
    pub fn compare_source(
        mut self,
        source: &mut dyn Source,
        limit: Option<u64>,
        progress: &AtomicU64,
    ) -> Result<DiffSummary, SourceError> {
        for_each_packet(source, limit, |info, data| {
            self.packet(info.seq - 1, info.timestamp_ns, data);
            progress.store(info.seq, Ordering::Relaxed);
        })?;
        Ok(self.into_summary())
    }
}
