//! Trajectory sampling over any packet source: *source -> sampler ->
//! records*, handed to the caller in batches as they come.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use pipeline::{PacketInfo, Source};
use xpf::XpfEngine;

use crate::drive::{Application, Drive, drive};
use crate::error::MonitorError;
use crate::metrics::Metrics;
use crate::sample::{SampleCounts, SampleRecord, Sampler};
use crate::sample_ebpf::EbpfSampler;
use crate::sample_xpf::XpfSampler;

/// Which sampler runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SampleEngine {
    /// The reference in Rust ([`Sampler`]).
    #[default]
    Reference,
    /// `programs/sample.c` in sluice's VM.
    Ebpf,
    /// `programs/xpf/sample.s` on an xPF engine (interp, vm or jit).
    Xpf(XpfEngine),
}

/// How to sample.
#[derive(Clone, Debug)]
pub struct SampleOptions {
    /// Sample when `h mod a < b` (`a` at least 1).
    pub a: u32,
    pub b: u32,
    /// Slots of the label table (rounded up to a power of two, at least
    /// 8; see [`crate::Sampler`]).
    pub table: usize,
    pub engine: SampleEngine,
    /// Stop after this many packets.
    pub limit: Option<u64>,
    /// Its drops kept up to date (every 1024 packets, at the end of each
    /// batch the source gives, and at the end).
    pub metrics: Option<Arc<Metrics>>,
}

impl Default for SampleOptions {
    fn default() -> SampleOptions {
        SampleOptions {
            a: 100,
            b: 1,
            table: 4096,
            engine: SampleEngine::Reference,
            limit: None,
            metrics: None,
        }
    }
}

/// How a sampling run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleSummary {
    /// Packets read.
    pub packets: u64,
    /// What the sampler counted.
    pub counts: SampleCounts,
    /// Why the source stopped early, if it did.
    pub source_error: Option<String>,
}

/// Parses a rate `B/A` (`1/100`), or a fraction of one (`0.01`, as `B`
/// of 1,000,000).
pub fn parse_rate(s: &str) -> Result<(u32, u32), MonitorError> {
    let bad = || {
        MonitorError::Options(format!(
            "--rate {s}: B/A with 0 <= B <= A, A >= 1 (1/100), or a fraction (0.01)"
        ))
    };
    let (a, b) = match s.split_once('/') {
        Some((b, a)) => (
            a.trim().parse::<u32>().map_err(|_| bad())?,
            b.trim().parse::<u32>().map_err(|_| bad())?,
        ),
        None => {
            let f: f64 = s.trim().parse().map_err(|_| bad())?;
            if !(0.0..=1.0).contains(&f) {
                return Err(bad());
            }
            (1_000_000, (f * 1e6).round() as u32)
        }
    };
    if a == 0 || b > a {
        return Err(bad());
    }
    Ok((a, b))
}

enum Engine {
    Reference(Box<Sampler>),
    Ebpf(Box<EbpfSampler>),
    Xpf(Box<XpfSampler>),
}

impl Engine {
    fn counts(&mut self) -> Result<SampleCounts, MonitorError> {
        Ok(match self {
            Engine::Reference(r) => r.counts(),
            Engine::Ebpf(e) => e.counts(),
            Engine::Xpf(x) => x.counts()?,
        })
    }
}

impl Application for Engine {
    type Record = SampleRecord;

    fn packet(
        &mut self,
        info: &PacketInfo,
        data: &[u8],
        out: &mut Vec<SampleRecord>,
    ) -> Result<(), MonitorError> {
        let ts = info.timestamp_ns;
        match self {
            Engine::Reference(r) => {
                r.packet(data, ts, out);
                Ok(())
            }
            Engine::Ebpf(e) => e.packet(data, ts, out),
            Engine::Xpf(x) => x.packet(data, ts, out),
        }
    }

    /// Sampling's drops.
    fn gauge(&mut self, m: &Metrics) -> Result<(), MonitorError> {
        let c = self.counts()?;
        m.drops("sample", "table_full", c.full);
        m.drops("sample", "records_lost", c.lost);
        Ok(())
    }
}

/// Samples every packet of `source`; `each` gets the records in order;
/// `progress` counts the packets read.
pub fn sample_trajectories(
    source: &mut dyn Source,
    opts: &SampleOptions,
    progress: &AtomicU64,
    each: impl FnMut(&[SampleRecord]),
) -> Result<SampleSummary, MonitorError> {
    if opts.a == 0 {
        return Err(MonitorError::Options("A must be at least 1".into()));
    }
    let mut engine = match opts.engine {
        SampleEngine::Reference => {
            Engine::Reference(Box::new(Sampler::new(opts.a, opts.b, opts.table)))
        }
        SampleEngine::Ebpf => Engine::Ebpf(Box::new(EbpfSampler::new(opts.a, opts.b, opts.table)?)),
        SampleEngine::Xpf(e) => {
            Engine::Xpf(Box::new(XpfSampler::new(opts.a, opts.b, opts.table, e)?))
        }
    };
    let how = Drive {
        limit: opts.limit,
        metrics: opts.metrics.as_deref(),
        progress,
    };
    let driven = drive(source, &mut engine, &how, each)?;
    Ok(SampleSummary {
        packets: driven.packets,
        counts: engine.counts()?,
        source_error: driven.source_error,
    })
}
