//! Prometheus metrics: counters kept in atomics as the work goes, and
//! their text exposition format ([`Metrics::render`]), which
//! `metrics_http` serves at `GET /metrics`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The counters of flow accounting, as flows end.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Packets of the ended flows.
    pub packets: AtomicU64,
    /// IP bytes of the ended flows.
    pub bytes: AtomicU64,
    /// Flows ended, per flowEndReason code (1 to 5).
    pub ended: [AtomicU64; 6],
    pub exported: AtomicU64,
    pub export_errors: AtomicU64,
    /// Flows held by the accounting now (shown once `accounting` is set).
    pub flows_active: AtomicU64,
    pub accounting: AtomicBool,
    /// What each application could not keep or hand over, by application
    /// and reason (a table full, records lost): [`Metrics::drops`].
    drops: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// Trajectory sampling's counters, shown once `sampling` is set.
    pub sampling: AtomicBool,
    /// Packets sampled.
    pub samples: AtomicU64,
    /// Flow records (labels seen for the first time, or again past a full
    /// table).
    pub sample_flows: AtomicU64,
    /// RTT samples per log2 bucket (`monitor::bucket`), their sum and count.
    pub rtt_buckets: [AtomicU64; crate::rtt::BUCKETS],
    pub rtt_sum_ns: AtomicU64,
    pub rtt_count: AtomicU64,
}

const REASONS: [(usize, &str); 5] = [
    (1, "idle_timeout"),
    (2, "active_timeout"),
    (3, "end_of_flow"),
    (4, "forced_end"),
    (5, "lack_of_resources"),
];

impl Metrics {
    /// Sets what `app` has dropped for `reason` so far (counts only grow:
    /// a smaller value is kept out).
    pub fn drops(&self, app: &'static str, reason: &'static str, total: u64) {
        let mut d = self.drops.lock().unwrap_or_else(|e| e.into_inner());
        let v = d.entry((app, reason)).or_default();
        *v = (*v).max(total);
    }

    /// Counts an RTT sample in the histogram.
    pub fn rtt(&self, rtt_ns: u64) {
        self.rtt_buckets[crate::rtt::bucket(rtt_ns)].fetch_add(1, Ordering::Relaxed);
        self.rtt_sum_ns.fetch_add(rtt_ns, Ordering::Relaxed);
        self.rtt_count.fetch_add(1, Ordering::Relaxed);
    }

    /// The RTT histogram: bucket `k` ends at 2^k µs (`le` in seconds),
    /// cumulative, as Prometheus histograms are.
    fn render_rtt(&self, s: &mut String) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        s.push_str(
            "# HELP sluice_rtt_seconds Round-trip times measured (handshake and TCP timestamps).\n",
        );
        s.push_str("# TYPE sluice_rtt_seconds histogram\n");
        let mut total = 0;
        for (k, b) in self
            .rtt_buckets
            .iter()
            .enumerate()
            .take(crate::rtt::BUCKETS - 1)
        {
            total += get(b);
            let le = (1u64 << k) as f64 * 1e-6;
            s.push_str(&format!(
                "sluice_rtt_seconds_bucket{{le=\"{le}\"}} {total}\n"
            ));
        }
        s.push_str(&format!(
            "sluice_rtt_seconds_bucket{{le=\"+Inf\"}} {}\n",
            get(&self.rtt_count)
        ));
        s.push_str(&format!(
            "sluice_rtt_seconds_sum {}\n",
            get(&self.rtt_sum_ns) as f64 * 1e-9
        ));
        s.push_str(&format!(
            "sluice_rtt_seconds_count {}\n",
            get(&self.rtt_count)
        ));
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut s = String::new();
        let mut one = |name: &str, kind: &str, help: &str, value: u64| {
            s.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            ));
        };
        one(
            "sluice_packets_total",
            "counter",
            "Packets of the flows ended so far.",
            get(&self.packets),
        );
        one(
            "sluice_bytes_total",
            "counter",
            "IP bytes of the flows ended so far.",
            get(&self.bytes),
        );
        one(
            "sluice_flows_exported_total",
            "counter",
            "Flow records exported as IPFIX.",
            get(&self.exported),
        );
        one(
            "sluice_export_errors_total",
            "counter",
            "IPFIX exports that failed.",
            get(&self.export_errors),
        );
        if self.sampling.load(Ordering::Relaxed) {
            one(
                "sluice_sampled_packets_total",
                "counter",
                "Packets trajectory sampling selected.",
                get(&self.samples),
            );
            one(
                "sluice_sample_flow_records_total",
                "counter",
                "Flow records of trajectory sampling (labels first seen).",
                get(&self.sample_flows),
            );
        }
        if self.accounting.load(Ordering::Relaxed) {
            one(
                "sluice_flows_active",
                "gauge",
                "Flows held by the accounting now.",
                get(&self.flows_active),
            );
        }
        s.push_str("# HELP sluice_flows_ended_total Flows ended, by flowEndReason.\n");
        s.push_str("# TYPE sluice_flows_ended_total counter\n");
        for (i, name) in REASONS {
            s.push_str(&format!(
                "sluice_flows_ended_total{{reason=\"{name}\"}} {}\n",
                get(&self.ended[i])
            ));
        }
        let drops = self.drops.lock().unwrap_or_else(|e| e.into_inner());
        if !drops.is_empty() {
            s.push_str(
                "# HELP sluice_drops_total What an application could not keep or hand over \
                 (a full table, a lost record), by application and reason.\n",
            );
            s.push_str("# TYPE sluice_drops_total counter\n");
            for ((app, reason), n) in drops.iter() {
                s.push_str(&format!(
                    "sluice_drops_total{{app=\"{app}\",reason=\"{reason}\"}} {n}\n"
                ));
            }
        }
        self.render_rtt(&mut s);
        s
    }
}
