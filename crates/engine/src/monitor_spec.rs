//! The monitoring applications of `sluice monitor` run in user space, as
//! data: [`FlowsSpec`] (flow accounting), [`RttSpec`] (passive RTT),
//! [`SampleSpec`] (trajectory sampling). Each holds its packets' source
//! and the command line's options, with its defaults; `options()` checks
//! them (the command line's messages) and gives the monitor crate's; `run`
//! opens the source and runs, `run_on` runs over a source already open (a
//! live interface a front end opened). The records go to a callback in
//! batches, as they come; the summary comes back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use monitor::{
    Ended, FlowEngine, FlowRunOptions, FlowSummary, MeterOptions, Metrics, MonitorError, RttEngine,
    RttOptions, RttSample, RttSummary, SampleEngine, SampleOptions, SampleRecord, SampleSummary,
    TableOptions,
};
use pipeline::Source;

use crate::Error;
use crate::source::SourceSpec;

/// Nanoseconds of a positive number of seconds given as `--what`.
fn seconds(s: f64, what: &str) -> Result<u64, MonitorError> {
    if !(s > 0.0 && s.is_finite()) {
        return Err(MonitorError::Options(format!(
            "--{what} {s}: a positive number of seconds"
        )));
    }
    Ok((s * 1e9) as u64)
}

/// Opens `source` and gives it to `run`, with a progress counter.
fn opened<T>(
    source: &SourceSpec,
    stop: Option<&'static AtomicBool>,
    progress: Option<&AtomicU64>,
    run: impl FnOnce(&mut dyn Source, &AtomicU64) -> Result<T, Error>,
) -> Result<T, Error> {
    let mut open = source.open(stop)?;
    let own = AtomicU64::new(0);
    run(open.as_mut(), progress.unwrap_or(&own))
}

/// Flow accounting, as `sluice monitor flows` runs it over a capture or
/// generated traffic.
#[derive(Clone, Debug)]
pub struct FlowsSpec {
    pub source: SourceSpec,
    /// Who accounts: sluice's flow table, `programs/flows.c` in the VM, or
    /// `programs/xpf/flows.s` on an xPF engine.
    pub engine: FlowEngine,
    /// Flows kept at once [default: 65,536; xPF: 2,048, its most].
    pub capacity: Option<usize>,
    /// Seconds without a packet that end a flow [15].
    pub idle: f64,
    /// Seconds after which a flow is exported and starts again [1800].
    pub active: f64,
    /// Stop after this many packets.
    pub limit: Option<u64>,
    /// Gauges kept up to date while it runs.
    pub metrics: Option<Arc<Metrics>>,
}

impl FlowsSpec {
    /// Accounting over `source` by sluice's flow table, the defaults elsewhere.
    pub fn new(source: SourceSpec) -> FlowsSpec {
        FlowsSpec {
            source,
            engine: FlowEngine::Table,
            capacity: None,
            idle: 15.0,
            active: 1800.0,
            limit: None,
            metrics: None,
        }
    }

    /// The monitor crate's options; an error names the option out of range.
    pub fn options(&self) -> Result<FlowRunOptions, Error> {
        let capacity = self.capacity.unwrap_or(match self.engine {
            FlowEngine::Xpf(_) => monitor::XPF_MAX_FLOWS,
            _ => TableOptions::default().capacity,
        });
        Ok(FlowRunOptions {
            table: TableOptions {
                capacity,
                idle_timeout_ns: seconds(self.idle, "idle")?,
                active_timeout_ns: seconds(self.active, "active")?,
            },
            engine: self.engine,
            limit: self.limit,
            metrics: self.metrics.clone(),
        })
    }

    /// Opens the source and accounts every packet; `each` gets the ended
    /// flows as they end (the rest at the end of the input).
    pub fn run(
        &self,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
        each: impl FnMut(&[Ended]),
    ) -> Result<FlowSummary, Error> {
        opened(&self.source, stop, progress, |s, p| self.run_on(s, p, each))
    }

    /// Accounts every packet of `source` (instead of [`FlowsSpec::source`]).
    pub fn run_on(
        &self,
        source: &mut dyn Source,
        progress: &AtomicU64,
        each: impl FnMut(&[Ended]),
    ) -> Result<FlowSummary, Error> {
        let opts = self.options()?;
        Ok(monitor::account_flows(source, &opts, progress, each)?)
    }
}

/// Passive RTT, as `sluice monitor rtt` runs it over a capture or
/// generated traffic.
#[derive(Clone, Debug)]
pub struct RttSpec {
    pub source: SourceSpec,
    /// Who measures: sluice's reference meter, `programs/rtt.c` in the VM,
    /// or `programs/xpf/rtt.s` on an xPF engine.
    pub engine: RttEngine,
    /// SYNs kept awaiting their ACK [default: 16,384; xPF: 512, its most].
    pub syn_table: Option<usize>,
    /// (flow, TSval) entries kept awaiting their echo [default: 65,536;
    /// xPF: 4,096, its most].
    pub ts_table: Option<usize>,
    /// Flows (per method) with statistics [65,536].
    pub flow_table: usize,
    /// Seconds after which a SYN or TSval not answered is forgotten [10].
    pub max_age: f64,
    /// Stop after this many packets.
    pub limit: Option<u64>,
}

impl RttSpec {
    /// Measuring over `source` by the reference meter, the defaults elsewhere.
    pub fn new(source: SourceSpec) -> RttSpec {
        RttSpec {
            source,
            engine: RttEngine::Table,
            syn_table: None,
            ts_table: None,
            flow_table: MeterOptions::default().flow_capacity,
            max_age: 10.0,
            limit: None,
        }
    }

    /// The monitor crate's options; an error names the option out of range.
    pub fn options(&self) -> Result<RttOptions, Error> {
        // The xPF program's tables fit one block of memory: smaller defaults.
        let xpf = matches!(self.engine, RttEngine::Xpf(_));
        let defaults = MeterOptions::default();
        let syn_table = self.syn_table.unwrap_or(if xpf {
            monitor::XPF_MAX_SYNS
        } else {
            defaults.syn_capacity
        });
        let ts_table = self.ts_table.unwrap_or(if xpf {
            monitor::XPF_MAX_TSVALS
        } else {
            defaults.ts_capacity
        });
        let meter = MeterOptions {
            syn_capacity: syn_table,
            ts_capacity: ts_table,
            flow_capacity: self.flow_table,
            max_age_ns: seconds(self.max_age, "max-age")?,
        };
        for (n, what) in [
            (syn_table, "syn-table"),
            (ts_table, "ts-table"),
            (self.flow_table, "flow-table"),
        ] {
            if n == 0 || n > u32::MAX as usize {
                let why = format!("--{what} {n}: 1 to {}", u32::MAX);
                return Err(MonitorError::Options(why).into());
            }
        }
        Ok(RttOptions {
            meter,
            engine: self.engine,
            limit: self.limit,
        })
    }

    /// Opens the source and measures every packet; `each` gets the samples
    /// as they come.
    pub fn run(
        &self,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
        each: impl FnMut(&[RttSample]),
    ) -> Result<RttSummary, Error> {
        opened(&self.source, stop, progress, |s, p| self.run_on(s, p, each))
    }

    /// Measures every packet of `source` (instead of [`RttSpec::source`]).
    pub fn run_on(
        &self,
        source: &mut dyn Source,
        progress: &AtomicU64,
        each: impl FnMut(&[RttSample]),
    ) -> Result<RttSummary, Error> {
        let opts = self.options()?;
        Ok(monitor::measure_rtt(source, &opts, progress, each)?)
    }
}

/// Trajectory sampling, as `sluice monitor sample` runs it over a capture
/// or generated traffic.
#[derive(Clone, Debug)]
pub struct SampleSpec {
    pub source: SourceSpec,
    /// Who samples: `programs/sample.c` in the VM (the default), the xPF
    /// program, or sluice's reference.
    pub engine: SampleEngine,
    /// The rate `B/A` (`1/100`) or a fraction (`0.01`); not with `a`, `b`.
    pub rate: Option<String>,
    /// The modulus A and threshold B (both or neither) [without a rate:
    /// 100 and 1].
    pub a: Option<u32>,
    pub b: Option<u32>,
    /// Slots of the label table (a power of two) [4096].
    pub table: usize,
    /// Stop after this many packets.
    pub limit: Option<u64>,
    /// Gauges kept up to date while it runs.
    pub metrics: Option<Arc<Metrics>>,
}

impl SampleSpec {
    /// Sampling over `source` by the eBPF program, 1/100, the defaults
    /// elsewhere.
    pub fn new(source: SourceSpec) -> SampleSpec {
        SampleSpec {
            source,
            engine: SampleEngine::Ebpf,
            rate: None,
            a: None,
            b: None,
            table: SampleOptions::default().table,
            limit: None,
            metrics: None,
        }
    }

    /// `(A, B)`: from the rate, or `a` and `b`, or 1/100.
    pub fn rate(&self) -> Result<(u32, u32), Error> {
        Ok(match (&self.rate, self.a, self.b) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                let why = "--rate goes without -a and -b".to_string();
                return Err(MonitorError::Options(why).into());
            }
            (Some(r), ..) => monitor::parse_rate(r)?,
            (None, Some(m), Some(t)) if m >= 1 && t <= m => (m, t),
            (None, Some(m), Some(t)) => {
                let why = format!("-a {m} -b {t}: A at least 1, B at most A");
                return Err(MonitorError::Options(why).into());
            }
            (None, Some(_), None) | (None, None, Some(_)) => {
                let why = "-a and -b go together".to_string();
                return Err(MonitorError::Options(why).into());
            }
            (None, None, None) => (100, 1),
        })
    }

    /// The monitor crate's options; an error names the option out of range.
    pub fn options(&self) -> Result<SampleOptions, Error> {
        let (a, b) = self.rate()?;
        Ok(SampleOptions {
            a,
            b,
            table: self.table,
            engine: self.engine,
            limit: self.limit,
            metrics: self.metrics.clone(),
        })
    }

    /// Opens the source and samples every packet; `each` gets the records
    /// in order.
    pub fn run(
        &self,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
        each: impl FnMut(&[SampleRecord]),
    ) -> Result<SampleSummary, Error> {
        opened(&self.source, stop, progress, |s, p| self.run_on(s, p, each))
    }

    /// Samples every packet of `source` (instead of [`SampleSpec::source`]).
    pub fn run_on(
        &self,
        source: &mut dyn Source,
        progress: &AtomicU64,
        each: impl FnMut(&[SampleRecord]),
    ) -> Result<SampleSummary, Error> {
        let opts = self.options()?;
        Ok(monitor::sample_trajectories(source, &opts, progress, each)?)
    }
}
