//! [`TcSpec`] and [`TcRunSpec`]: packets through a tc configuration (the
//! `tc` crate's filters and actions) instead of a program, described as
//! data: the file of tc lines, the device and clsact hook packets arrive
//! at, the packets, where each route's packets go. [`TcSpec::build`]
//! gives the configuration's [`Runner`] (a [`PacketHook`](runtime::PacketHook));
//! [`TcRunSpec::run`] replays the packets through it on one thread (one
//! table of counters and policers for every packet) and gives the
//! [`TcReport`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};

use pipeline::{Collected, Route, Sinks, Source};
use serde::{Deserialize, Serialize};
use tc::{ClsactHook, Config, Runner};

use crate::Error;
use crate::error::TcError;
use crate::sink::{Opened, SinkSpec};
use crate::source::{Skipped, SourceSpec};
use crate::tc_report::{Names, TcReport};

#[derive(Serialize, Deserialize)]
#[serde(remote = "ClsactHook", rename_all = "lowercase")]
enum ClsactHookDef {
    Ingress,
    Egress,
}

fn ingress() -> ClsactHook {
    ClsactHook::Ingress
}

/// A tc configuration as a hook: packets arrive at `dev`'s `hook`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcSpec {
    /// A file of tc lines: the one `sluice tc` keeps, or any `tc -batch`
    /// file (`-`: standard input).
    pub config: PathBuf,
    /// The device packets arrive at (`None`: the only one with a qdisc).
    #[serde(default)]
    pub dev: Option<String>,
    /// The clsact hook packets arrive at.
    #[serde(default = "ingress", with = "ClsactHookDef")]
    pub hook: ClsactHook,
    /// The configuration's lines, in place of the file's (`config` then
    /// only names them in reports and errors).
    #[serde(default)]
    pub lines: Option<String>,
}

/// A configuration built from a [`TcSpec`]: its runner, and the device
/// packets arrive at.
pub struct TcBuilt {
    pub runner: Runner,
    pub dev: String,
}

impl TcSpec {
    /// The configuration at `config`, packets arriving at the ingress hook
    /// of its only device with a qdisc.
    pub fn new(config: impl Into<PathBuf>) -> TcSpec {
        TcSpec {
            config: config.into(),
            dev: None,
            hook: ClsactHook::Ingress,
            lines: None,
        }
    }

    /// The configuration of `lines` (tc commands, one a line, as a
    /// `tc -batch` file holds them), named `name` in reports and errors.
    pub fn from_lines(name: impl Into<PathBuf>, lines: impl Into<String>) -> TcSpec {
        TcSpec {
            lines: Some(lines.into()),
            ..TcSpec::new(name)
        }
    }

    /// The device packets arrive at in `config`: the one named, or the
    /// only one with a qdisc.
    pub fn arrival(&self, config: &Config) -> Result<String, TcError> {
        if let Some(d) = &self.dev {
            return Ok(d.clone());
        }
        let names: Vec<&str> = config.qdiscs().map(|(d, _)| d).collect();
        match names.as_slice() {
            [one] => Ok(one.to_string()),
            [] => Err(TcError::NoQdisc),
            many => Err(TcError::WhichDevice(
                many.iter().map(|s| s.to_string()).collect(),
            )),
        }
    }

    /// Reads the file (no more once `stop` is set) or takes the lines
    /// given, runs them into a configuration and puts it at the arrival
    /// device's hook.
    pub fn build(&self, stop: Option<&'static AtomicBool>) -> Result<TcBuilt, Error> {
        let config = match &self.lines {
            Some(text) => Config::from_lines(text, &self.config, &[]),
            None => Config::load(&self.config, &[], stop),
        }
        .map_err(TcError::from)?;
        let dev = self.arrival(&config)?;
        let runner = Runner::new(config, &dev, self.hook);
        Ok(TcBuilt { runner, dev })
    }
}

/// A replay through a tc configuration: its packets, where each route's
/// packets go, a limit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcRunSpec {
    pub tc: TcSpec,
    pub source: SourceSpec,
    /// Outputs per route (none: packets are only counted).
    #[serde(default)]
    pub sinks: Vec<SinkSpec>,
    /// Stop after this many packets (with a filter: packets that pass it).
    #[serde(default)]
    pub limit: Option<u64>,
}

/// A tc run started: the configuration built, the source and sinks open.
pub struct TcReplay<'a> {
    spec: &'a TcRunSpec,
    built: TcBuilt,
    source: Box<dyn Source>,
    sinks: Sinks,
    kept: Vec<(Route, Collected)>,
    stop: Option<&'static AtomicBool>,
}

/// A finished tc run: its report, and the configuration with its
/// counters as the run left them.
pub struct TcFinished {
    pub report: TcReport,
    pub config: Config,
}

impl TcRunSpec {
    /// `tc` over `source`, no outputs, no limit.
    pub fn new(tc: TcSpec, source: SourceSpec) -> TcRunSpec {
        TcRunSpec {
            tc,
            source,
            sinks: Vec::new(),
            limit: None,
        }
    }

    /// Builds the configuration, replays the packets and reports. `stop`,
    /// once set, ends the run after the packets read (the report says
    /// so); `progress` counts the packets read so far.
    pub fn run(
        &self,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
    ) -> Result<TcFinished, Error> {
        self.start(stop)?.finish(progress)
    }

    /// Builds the configuration and opens the source and the sinks.
    pub fn start(&self, stop: Option<&'static AtomicBool>) -> Result<TcReplay<'_>, Error> {
        let built = self.tc.build(stop)?;
        let source = self.source.open(stop)?;
        let opened = crate::sink::open(&self.sinks)?;
        Ok(TcReplay {
            spec: self,
            built,
            source,
            sinks: opened.sinks,
            kept: opened.kept,
            stop,
        })
    }
}

impl TcReplay<'_> {
    /// The packets the run will take, when the source knows.
    pub fn expected(&self) -> Option<u64> {
        let limit = self.spec.limit;
        self.source
            .expected()
            .map(|n| limit.map_or(n, |l| l.min(n)))
    }

    /// Replays and reports.
    pub fn finish(mut self, progress: Option<&AtomicU64>) -> Result<TcFinished, Error> {
        let spec = self.spec;
        let mut runner = self.built.runner;
        let opts = pipeline::ReplayOptions {
            // One table of counters and policers for every packet.
            threads: 1,
            limit: spec.limit,
            ifindex: runner.ifindex(),
            stop: self.stop,
            ..pipeline::ReplayOptions::default()
        };
        let summary = pipeline::replay(
            &mut runner,
            self.source.as_mut(),
            self.sinks,
            &opts,
            progress,
        )?;
        let names = Names {
            config: spec.tc.config.display().to_string(),
            dev: self.built.dev,
            hook: spec.tc.hook,
            source: spec.source.describe(),
            skipped: Skipped::of(self.source.as_ref()),
        };
        let sent = runner.sent().clone();
        let mut config = runner.into_config();
        let mut report = TcReport::new(names, &summary, &sent, &mut config)?;
        report.output = Opened::output(&self.kept);
        Ok(TcFinished { report, config })
    }
}
