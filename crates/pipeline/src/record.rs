//! Packets copied from a source to a sink as they come, no program between
//! (a capture: `sluice capture`).

use crate::batch::Batch;
use crate::sink::{Sink, SinkError};
use crate::source::{Source, SourceError};

/// What a recording copied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub packets: u64,
    pub bytes: u64,
    /// Why the source ended early, after the packets before it.
    pub source_error: Option<SourceError>,
}

/// Copies `source`'s packets to `sink` (the first `count` of them) until
/// the source ends; `each` sees every packet copied (timestamp, bytes).
/// The sink is flushed after every batch (a port sends what it holds);
/// finishing it is the caller's.
pub fn record(
    source: &mut dyn Source,
    sink: &mut dyn Sink,
    count: Option<u64>,
    mut each: impl FnMut(u64, &[u8]),
) -> Result<Recorded, SinkError> {
    let mut batch = Batch::new();
    let mut done = Recorded::default();
    loop {
        if count.is_some_and(|c| done.packets >= c) {
            return Ok(done);
        }
        batch.clear();
        let ended = source.fill(&mut batch).err();
        for (info, data) in batch.iter() {
            if count.is_some_and(|c| done.packets >= c) {
                break;
            }
            sink.write(data, &[], info.timestamp_ns)?;
            each(info.timestamp_ns, data);
            done.packets += 1;
            done.bytes += data.len() as u64;
        }
        sink.flush()?;
        if ended.is_some() || batch.is_empty() {
            done.source_error = ended;
            return Ok(done);
        }
    }
}
