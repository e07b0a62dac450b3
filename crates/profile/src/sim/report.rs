//! A run's results (RTT statistics, throughput, the router's queues) and
//! the comparison of one scenario through several routers.

use serde::Serialize;

use super::net::{Outcome, RouterStats};
use super::tcp::SenderStats;
use super::{Router, Scenario, SimError, SimRttSample, simulate};

/// Mean, median and 99th percentile of the RTT samples (nearest rank).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SimRttStats {
    pub samples: u64,
    pub mean_ns: f64,
    pub median_ns: u64,
    pub p99_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl SimRttStats {
    pub fn of(samples: &[SimRttSample]) -> SimRttStats {
        let mut v: Vec<u64> = samples.iter().map(|s| s.rtt_ns).collect();
        if v.is_empty() {
            return SimRttStats::default();
        }
        v.sort_unstable();
        let n = v.len();
        // Nearest rank: the smallest value with at least p of the samples at or below it.
        let rank = |p: f64| v[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        SimRttStats {
            samples: n as u64,
            mean_ns: v.iter().map(|&x| x as f64).sum::<f64>() / n as f64,
            median_ns: rank(0.5),
            p99_ns: rank(0.99),
            min_ns: v[0],
            max_ns: v[n - 1],
        }
    }
}

/// One run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimResult {
    /// Every segment was acknowledged (false: the time ran out).
    pub complete: bool,
    /// When the run ended: the last ACK, or the time limit, ns.
    pub end_ns: u64,
    /// Segments delivered in order at the sink, and their bytes.
    pub delivered: u64,
    pub delivered_bytes: u64,
    /// Segments the sink received again.
    pub duplicates: u64,
    pub sender: SenderStats,
    pub rtt: SimRttStats,
    /// Data delivered in order at the sink, from its first delivery to its
    /// last: `(bytes - the first segment's) * 8 / (t_last - t_first)`, in
    /// bits per second (0 with fewer than two deliveries).
    pub throughput_bps: f64,
    pub router: RouterStats,
    pub samples: Vec<SimRttSample>,
}

impl SimResult {
    pub(crate) fn from_outcome(o: Outcome) -> SimResult {
        let r = &o.receiver;
        let throughput_bps = match r.first {
            Some((t0, b0)) if r.last_ns > t0 => {
                (r.delivered_bytes - u64::from(b0)) as f64 * 8.0 * 1e9 / (r.last_ns - t0) as f64
            }
            _ => 0.0,
        };
        SimResult {
            complete: o.complete,
            end_ns: o.end_ns,
            delivered: r.delivered,
            delivered_bytes: r.delivered_bytes,
            duplicates: r.duplicates,
            sender: o.sender.stats.clone(),
            rtt: SimRttStats::of(&o.samples),
            throughput_bps,
            router: o.router,
            samples: o.samples,
        }
    }
}

/// One router in a comparison, beside the run without processing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Compared {
    pub name: String,
    pub router: Router,
    /// What the router spends on the first segment size and its ACK: what
    /// it adds to a round trip with a window of 1, ns.
    pub round_trip_processing_ns: u64,
    pub result: SimResult,
    /// Against the first row (no processing), ns.
    pub mean_rtt_increase_ns: f64,
    pub median_rtt_increase_ns: i64,
    pub p99_rtt_increase_ns: i64,
}

/// One scenario through several routers, the first without processing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RouterComparison {
    pub scenario: Scenario,
    pub rows: Vec<Compared>,
}

/// Runs `s` without processing delay, then through each of `routers`
/// (by name), and reports each beside the first.
pub fn compare(s: &Scenario, routers: &[(String, Router)]) -> Result<RouterComparison, SimError> {
    let mut all = vec![("no processing".to_string(), Router::none())];
    all.extend(routers.iter().cloned());
    let mut rows: Vec<Compared> = Vec::new();
    for (name, router) in all {
        let result = simulate(s, &router)?;
        let base = rows.first().map_or(&result.rtt, |r| &r.result.rtt);
        let diff = |a: u64, b: u64| a as i64 - b as i64;
        rows.push(Compared {
            round_trip_processing_ns: router.round_trip_ns(s.segment_sizes[0], s.ack_bytes),
            mean_rtt_increase_ns: result.rtt.mean_ns - base.mean_ns,
            median_rtt_increase_ns: diff(result.rtt.median_ns, base.median_ns),
            p99_rtt_increase_ns: diff(result.rtt.p99_ns, base.p99_ns),
            name,
            router,
            result,
        });
    }
    Ok(RouterComparison {
        scenario: s.clone(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_statistics() {
        let samples: Vec<SimRttSample> = (1..=100)
            .rev()
            .map(|r| SimRttSample {
                at_ns: 0,
                rtt_ns: r,
                ack: 0,
            })
            .collect();
        let s = SimRttStats::of(&samples);
        assert_eq!((s.samples, s.median_ns, s.p99_ns), (100, 50, 99));
        assert_eq!((s.min_ns, s.max_ns, s.mean_ns), (1, 100, 50.5));
        assert_eq!(SimRttStats::of(&samples[..1]).p99_ns, 100);
        assert_eq!(SimRttStats::of(&[]).samples, 0);
    }
}
