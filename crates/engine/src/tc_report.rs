//! [`TcReport`]: what a run through a tc configuration did, as data: the
//! verdicts at the arrival hook, where mirred sent packets, and every
//! hook's filters and actions with their counters as `tc -s filter show`
//! prints them; it serializes as `sluice run --tc --json` prints it.

use std::collections::BTreeMap;

use pipeline::ReplaySummary;
use serde::Serialize;
use tc::{ClsactHook, Config, Sent, ShowOptions};

use crate::error::TcError;
use crate::sink::Output;
use crate::source::Skipped;

/// Packets mirred (or a classifier's program) sent to one device's hook.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct DeliveryReport {
    pub dev: String,
    /// `ingress` or `egress`.
    pub hook: String,
    /// Packets that left the hook alive.
    pub delivered: u64,
    /// Packets the hook dropped or took on (a redirect onwards).
    pub consumed: u64,
}

/// A hook's filters as `tc -s filter show dev DEV HOOK` prints them.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct FilterShow {
    pub dev: String,
    /// `ingress` or `egress`.
    pub hook: String,
    pub text: String,
}

/// What a run through a tc configuration did.
#[derive(Serialize, Clone, Debug)]
pub struct TcReport {
    /// The configuration file.
    pub config: String,
    /// The device packets arrived at.
    pub dev: String,
    /// Its hook packets arrived at: `ingress` or `egress`.
    pub hook: String,
    /// What was read: `capture F`, `generated SPEC`, `interface IF (live)`.
    pub source: String,
    pub packets: u64,
    pub seconds: f64,
    pub packets_per_second: f64,
    /// The arrival hook's verdicts, by name.
    pub verdicts: BTreeMap<String, u64>,
    /// Where mirred sent packets, by device and hook.
    pub sent: Vec<DeliveryReport>,
    /// Packets past mirred's nesting limit (dropped).
    pub too_deep: u64,
    /// `tc -s -j filter show` per device and hook (`DEV HOOK`), for every
    /// hook with filters.
    pub filters: BTreeMap<String, serde_json::Value>,
    /// Stopped by SIGINT or SIGTERM before the source's end.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// The same hooks' `tc -s filter show` text, in device order, ingress
    /// first; not serialized (`filters` is its JSON).
    #[serde(skip)]
    pub shown: Vec<FilterShow>,
    /// Frames of the capture without an Ethernet form, not run; not
    /// serialized.
    #[serde(skip)]
    pub skipped: Skipped,
    /// Why the capture ended before its end (every packet before it ran);
    /// not serialized.
    #[serde(skip)]
    pub source_error: Option<String>,
    /// The packets of the routes kept in memory ([`Target::Memory`](crate::Target));
    /// not serialized.
    #[serde(skip)]
    pub output: Output,
}

/// What the report says besides the counters: the run's names.
pub(crate) struct Names {
    pub config: String,
    pub dev: String,
    pub hook: ClsactHook,
    pub source: String,
    pub skipped: Skipped,
}

impl TcReport {
    /// The report of a run: `summary` from the replay, `sent` and `config`
    /// from the runner after it.
    pub(crate) fn new(
        names: Names,
        summary: &ReplaySummary,
        sent: &Sent,
        config: &mut Config,
    ) -> Result<TcReport, TcError> {
        let c = &summary.counters;
        let mut verdicts = BTreeMap::new();
        for (v, n) in c.verdicts.iter() {
            *verdicts.entry(v.name().to_string()).or_default() += n;
        }
        let mut filters = BTreeMap::new();
        let mut shown = Vec::new();
        for (dev, hook) in hooks_with_filters(config) {
            let json = show(config, &dev, hook, true)?;
            filters.insert(
                format!("{dev} {}", hook.name()),
                serde_json::from_str(&json)?,
            );
            shown.push(FilterShow {
                text: show(config, &dev, hook, false)?,
                dev,
                hook: hook.name().to_string(),
            });
        }
        Ok(TcReport {
            config: names.config,
            dev: names.dev,
            hook: names.hook.name().to_string(),
            source: names.source,
            packets: c.packets,
            seconds: summary.seconds,
            packets_per_second: c.packets as f64 / summary.seconds.max(1e-9),
            verdicts,
            sent: deliveries(sent),
            too_deep: sent.too_deep,
            filters,
            stopped: summary.stopped,
            shown,
            skipped: names.skipped,
            source_error: summary.source_error.as_ref().map(|e| e.to_string()),
            output: Output::new(),
        })
    }
}

/// Delivered and consumed counts side by side, by device and hook.
fn deliveries(sent: &Sent) -> Vec<DeliveryReport> {
    let mut by: BTreeMap<(String, ClsactHook), DeliveryReport> = BTreeMap::new();
    for (map, delivered) in [(&sent.delivered, true), (&sent.consumed, false)] {
        for ((dev, hook), n) in map {
            let e = by
                .entry((dev.clone(), *hook))
                .or_insert_with(|| DeliveryReport {
                    dev: dev.clone(),
                    hook: hook.name().to_string(),
                    delivered: 0,
                    consumed: 0,
                });
            if delivered {
                e.delivered += n;
            } else {
                e.consumed += n;
            }
        }
    }
    by.into_values().collect()
}

/// Every hook with filters: device order, ingress first.
fn hooks_with_filters(config: &Config) -> Vec<(String, ClsactHook)> {
    let mut out = Vec::new();
    for (dev, q) in config.qdiscs() {
        for (hook, block) in [
            (ClsactHook::Ingress, &q.ingress),
            (ClsactHook::Egress, &q.egress),
        ] {
            if block.chains().next().is_some() {
                out.push((dev.to_string(), hook));
            }
        }
    }
    out
}

/// `tc -s [-j] filter show dev DEV HOOK`.
fn show(config: &mut Config, dev: &str, hook: ClsactHook, json: bool) -> Result<String, TcError> {
    config
        .run(
            &["filter", "show", "dev", dev, hook.name()],
            ShowOptions { stats: true, json },
        )
        .map_err(|e| TcError::Show(e.to_string()))
}
