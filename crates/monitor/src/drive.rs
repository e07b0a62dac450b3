//! The one driver of the monitoring applications in user space (flow
//! accounting, trajectory sampling, passive RTT, pping's rules): it reads
//! a pipeline [`Source`] through the pipeline's loop
//! ([`pipeline::for_each_step`]), runs each packet through the
//! application, hands what comes out to the caller in batches, keeps the
//! progress count, the time order and the metrics' gauges, and stops at
//! the limit or the first packet that fails.
//!
//! The pipeline's observing loop, not `pipeline::replay` with a
//! `PacketHook`: an application gives records, not a verdict to route,
//! and keeps one state (a table, a program's maps, an xPF instance's
//! memory) that no sibling on another thread could share.

use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::{PacketInfo, Source, Step};

use crate::error::MonitorError;
use crate::metrics::Metrics;
use crate::order::TimeOrder;

/// How often (in packets) the metrics' gauges are brought up to date
/// (and at the end of each batch the source gives, and of the run).
pub(crate) const GAUGE_EVERY: u64 = 1024;

/// Records are handed out in batches of this many (and at the end of
/// each batch the source gives, and of the run).
const BATCH: usize = 256;

/// A monitoring application, as the driver runs it.
pub(crate) trait Application {
    /// What it gives: ended flows, sample records, RTT samples.
    type Record;

    /// Runs one packet; what it gives goes into `out`.
    fn packet(
        &mut self,
        info: &PacketInfo,
        data: &[u8],
        out: &mut Vec<Self::Record>,
    ) -> Result<(), MonitorError>;

    /// Brings `m`'s gauges up to date.
    fn gauge(&mut self, _m: &Metrics) -> Result<(), MonitorError> {
        Ok(())
    }

    /// After the last packet: what is still held comes out into `out`
    /// (a flow table's flows, at the end of the input).
    fn finish(&mut self, _out: &mut Vec<Self::Record>) -> Result<(), MonitorError> {
        Ok(())
    }
}

/// How a driven run went.
#[derive(Clone, Debug, Default)]
pub(crate) struct Driven {
    /// Packets read.
    pub packets: u64,
    /// Why the source stopped early, if it did.
    pub source_error: Option<String>,
    /// Packets earlier than a packet before them.
    pub order: TimeOrder,
}

/// What the driver does besides running packets.
pub(crate) struct Drive<'a> {
    /// Stop after this many packets.
    pub limit: Option<u64>,
    /// Gauges kept up to date.
    pub metrics: Option<&'a Metrics>,
    /// Counts the packets read (for a progress bar).
    pub progress: &'a AtomicU64,
}

/// Runs every packet of `source` through `app`; `hand_out` gets what it
/// gives, in order. The first packet that fails ends the run (`packet N:
/// why`); the packets after it are read but not run.
pub(crate) fn drive<A: Application>(
    source: &mut dyn Source,
    app: &mut A,
    how: &Drive<'_>,
    mut hand_out: impl FnMut(&[A::Record]),
) -> Result<Driven, MonitorError> {
    let mut d = Driven::default();
    let mut out = Vec::with_capacity(BATCH);
    let mut failure = None;
    // What came out goes out at the end of each batch the source gives
    // too: a stream that pauses (a pipe between bursts) ends a batch, and
    // a scrape then sees every record so far, not a batch still filling.
    let read = pipeline::for_each_step(source, how.limit, |step| {
        if failure.is_some() {
            return;
        }
        let Step::Packet(info, data) = step else {
            if !out.is_empty() {
                hand_out(&out);
                out.clear();
            }
            if let Some(m) = how.metrics
                && let Err(why) = app.gauge(m)
            {
                failure = Some(why);
            }
            return;
        };
        d.packets += 1;
        d.order.see(info.seq, info.timestamp_ns);
        how.progress.store(d.packets, Ordering::Relaxed);
        if let Err(why) = app.packet(info, data, &mut out) {
            failure = Some(MonitorError::Packet {
                seq: info.seq,
                error: Box::new(why),
            });
            return;
        }
        if out.len() >= BATCH {
            hand_out(&out);
            out.clear();
        }
        if let Some(m) = how.metrics
            && d.packets.is_multiple_of(GAUGE_EVERY)
            && let Err(why) = app.gauge(m)
        {
            failure = Some(why);
        }
    });
    if let Some(f) = failure {
        return Err(f);
    }
    if let Err(e) = read {
        d.source_error = Some(e.to_string());
    }
    app.finish(&mut out)?;
    hand_out(&out);
    if let Some(m) = how.metrics {
        app.gauge(m)?;
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives every packet's length; fails at a length of 13.
    struct Lengths;

    impl Application for Lengths {
        type Record = usize;

        fn packet(
            &mut self,
            _: &PacketInfo,
            data: &[u8],
            out: &mut Vec<usize>,
        ) -> Result<(), MonitorError> {
            if data.len() == 13 {
                return Err(MonitorError::record("thirteen"));
            }
            out.push(data.len());
            Ok(())
        }

        fn finish(&mut self, out: &mut Vec<usize>) -> Result<(), MonitorError> {
            out.push(0);
            Ok(())
        }
    }

    fn frames(lens: &[usize]) -> pipeline::Packets {
        pipeline::Packets::new(
            lens.iter()
                .enumerate()
                .map(|(i, &n)| (10_000 - i as u64, vec![0; n]))
                .collect(),
        )
    }

    #[test]
    fn hands_out_in_order_to_the_limit_then_finishes() {
        let progress = AtomicU64::new(0);
        let how = Drive {
            limit: Some(600),
            metrics: None,
            progress: &progress,
        };
        let lens: Vec<usize> = (0..1000).map(|i| 14 + i % 50).collect();
        let mut got = Vec::new();
        let d = drive(&mut frames(&lens), &mut Lengths, &how, |r| {
            got.extend_from_slice(r)
        })
        .unwrap();
        assert_eq!(d.packets, 600);
        assert_eq!(progress.load(Ordering::Relaxed), 600);
        // Timestamps go down: every packet after the first is out of order.
        assert_eq!((d.order.backwards, d.order.first_backwards), (599, Some(2)));
        assert_eq!(got.len(), 601);
        assert_eq!(&got[..600], &lens[..600]);
        assert_eq!(got[600], 0);
    }

    #[test]
    fn the_first_failing_packet_ends_the_run() {
        let progress = AtomicU64::new(0);
        let how = Drive {
            limit: None,
            metrics: None,
            progress: &progress,
        };
        let err = drive(&mut frames(&[20, 13, 20]), &mut Lengths, &how, |_| {}).unwrap_err();
        assert_eq!(err.to_string(), "packet 2: thirteen");
    }
}
