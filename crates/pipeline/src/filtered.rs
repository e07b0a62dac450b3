//! A source seen through a classic BPF filter (a tcpdump expression, as
//! `sluice run --filter` takes it): only the packets it accepts reach the
//! hook. The filter looks at each packet where the source holds it, before
//! it is copied into a batch, and sees the Ethernet frame the hook would
//! see (captures of other link types are converted first), with its
//! captured length as `len`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::batch::Batch;
use crate::source::{Source, SourceError};

/// Packets read and accepted, shared by a filter and its forks.
#[derive(Default)]
struct Counts {
    read: AtomicU64,
    accepted: AtomicU64,
}

pub struct Filtered {
    inner: Box<dyn Source>,
    filter: Arc<cbpf::Filter>,
    expr: Arc<str>,
    /// This reader's own counts (forks read the same packets again, so
    /// only the first reader's are reported).
    counts: Arc<Counts>,
}

impl Filtered {
    /// `inner`'s packets that `prog` (compiled from `expr`) accepts.
    pub fn new(inner: Box<dyn Source>, prog: Vec<cbpf::Insn>, expr: &str) -> Filtered {
        Filtered {
            inner,
            filter: Arc::new(cbpf::Filter::new(&prog)),
            expr: expr.into(),
            counts: Arc::default(),
        }
    }

    fn accepts(filter: &cbpf::Filter, data: &[u8]) -> bool {
        // The program passed the checker when it was compiled: it runs.
        filter
            .run(data, &cbpf::Meta::default())
            .is_ok_and(|v| v.ret != 0)
    }
}

impl Source for Filtered {
    fn fill(&mut self, batch: &mut Batch) -> Result<(), SourceError> {
        self.fill_where(batch, u64::MAX, &mut |_, _| true).1
    }

    /// Reads until a packet passes the filter (or the source ends), at
    /// most `max` passing ones: the count it returns is of packets that
    /// passed, so a limit counts what runs, as `tcpdump -c` counts
    /// matches.
    fn fill_where(
        &mut self,
        batch: &mut Batch,
        max: u64,
        keep: &mut dyn FnMut(u64, &[u8]) -> bool,
    ) -> (u64, Result<(), SourceError>) {
        let filter = &self.filter;
        let mut passed = 0u64;
        loop {
            let mut accepted = 0u64;
            // At most as many reads as passes remain: no more can pass.
            let (read, result) = self
                .inner
                .fill_where(batch, max - passed, &mut |seq, data| {
                    let yes = Filtered::accepts(filter, data);
                    accepted += u64::from(yes);
                    yes && keep(seq, data)
                });
            self.counts.read.fetch_add(read, Ordering::Relaxed);
            self.counts.accepted.fetch_add(accepted, Ordering::Relaxed);
            passed += accepted;
            if passed > 0 || read == 0 || result.is_err() || batch.is_full() || passed == max {
                return (passed, result);
            }
        }
    }

    fn fork(&self) -> Option<Box<dyn Source>> {
        Some(Box::new(Filtered {
            inner: self.inner.fork()?,
            filter: self.filter.clone(),
            expr: self.expr.clone(),
            counts: Arc::default(),
        }))
    }

    fn cuttable(&self) -> Option<&std::path::Path> {
        self.inner.cuttable()
    }

    /// The inner source's range, filtered, its packets counted with this
    /// reader's (one filter's note for the whole capture).
    fn range(
        &self,
        range: &capture::Shard,
        from: capture::RangeStart,
    ) -> Result<Box<dyn Source>, SourceError> {
        Ok(Box::new(Filtered {
            inner: self.inner.range(range, from)?,
            filter: self.filter.clone(),
            expr: self.expr.clone(),
            counts: self.counts.clone(),
        }))
    }

    fn ends_on_stop(&self) -> bool {
        self.inner.ends_on_stop()
    }

    fn skipped(&self) -> Vec<(u32, u64)> {
        self.inner.skipped()
    }

    fn boundary(&self) -> Option<capture::Boundary> {
        self.inner.boundary()
    }

    fn snapped(&self) -> u64 {
        self.inner.snapped()
    }

    fn note(&self) -> Option<String> {
        let (read, accepted) = (
            self.counts.read.load(Ordering::Relaxed),
            self.counts.accepted.load(Ordering::Relaxed),
        );
        let inner = self
            .inner
            .note()
            .map(|n| format!("; {n}"))
            .unwrap_or_default();
        Some(format!(
            "filter `{}` accepted {accepted} of {read} packets{inner}",
            self.expr
        ))
    }
}
