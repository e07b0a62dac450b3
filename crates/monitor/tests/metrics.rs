//! The metrics server answers `GET /metrics` with the counters in
//! Prometheus's text format, 404 elsewhere, and listens on loopback when
//! given a bare port.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use monitor::{Metrics, MetricsServer};

fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn metrics_are_served_in_the_text_format() {
    let m = Arc::new(Metrics::default());
    let server = MetricsServer::start("127.0.0.1:0", m.clone()).unwrap();
    m.packets.store(200, Ordering::Relaxed);
    m.ended[3].store(4, Ordering::Relaxed);
    m.export_errors.store(1, Ordering::Relaxed);
    let body = get(server.addr(), "/metrics");
    // hyper answers in the request's version.
    assert!(body.starts_with("HTTP/1.0 200 OK"), "{body}");
    assert!(body.contains("# TYPE sluice_packets_total counter\nsluice_packets_total 200\n"));
    assert!(body.contains("sluice_flows_ended_total{reason=\"end_of_flow\"} 4\n"));
    assert!(body.contains("sluice_flows_ended_total{reason=\"idle_timeout\"} 0\n"));
    assert!(body.contains("sluice_export_errors_total 1\n"));
    assert!(get(server.addr(), "/other").starts_with("HTTP/1.0 404"));
    // A bare port is loopback.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = MetricsServer::start(&port.to_string(), m).unwrap();
    assert!(s.addr().ip().is_loopback() && s.addr().port() == port);
    assert!(MetricsServer::start("not an address", Arc::default()).is_err());
}

#[test]
fn rtt_histogram_is_cumulative_with_sum_and_count() {
    let m = Metrics::default();
    m.rtt(500); // under 1 µs: bucket 0
    m.rtt(3_000_000); // 3 ms: [2048, 4096) µs, bucket 12
    m.rtt(3_500_000);
    let body = m.render();
    assert!(
        body.contains("# TYPE sluice_rtt_seconds histogram\n"),
        "{body}"
    );
    assert!(
        body.contains("sluice_rtt_seconds_bucket{le=\"0.000001\"} 1\n"),
        "{body}"
    );
    assert!(
        body.contains("sluice_rtt_seconds_bucket{le=\"0.002048\"} 1\n"),
        "{body}"
    );
    assert!(
        body.contains("sluice_rtt_seconds_bucket{le=\"0.004096\"} 3\n"),
        "{body}"
    );
    assert!(
        body.contains("sluice_rtt_seconds_bucket{le=\"+Inf\"} 3\n"),
        "{body}"
    );
    assert!(
        body.contains("sluice_rtt_seconds_sum 0.0065005\n"),
        "{body}"
    );
    assert!(body.contains("sluice_rtt_seconds_count 3\n"), "{body}");
}

/// Accounting keeps the metrics' gauges up to date as it goes: a table
/// of 16 for 50 round-robin flows holds 16 while the packets come, none
/// at the end, and its toll is the summary's, on every engine.
#[test]
fn accounting_keeps_flows_held_and_drops_up_to_date() {
    use monitor::{Ended, FlowEngine, FlowRunOptions, TableOptions, account_flows};
    for engine in [
        FlowEngine::Table,
        FlowEngine::Ebpf,
        FlowEngine::Xpf(xpf::XpfEngine::Interp),
    ] {
        let m = Arc::new(Metrics::default());
        m.accounting.store(true, Ordering::Relaxed);
        let opts = FlowRunOptions {
            table: TableOptions {
                capacity: 16,
                ..TableOptions::default()
            },
            engine,
            limit: None,
            metrics: Some(m.clone()),
        };
        let mut source = pipeline::Generated::parse(&["udp,flows=50,count=5000".into()]).unwrap();
        let mut held = std::collections::BTreeSet::new();
        let summary = account_flows(
            &mut source,
            &opts,
            &std::sync::atomic::AtomicU64::new(0),
            |_: &[Ended]| {
                held.insert(m.flows_active.load(Ordering::Relaxed));
            },
        )
        .unwrap();
        assert!(summary.evicted > 0, "{engine:?}: {summary:?}");
        assert!(held.contains(&16), "{engine:?}: {held:?}");
        assert!(held.iter().all(|&n| n <= 16), "{engine:?}: {held:?}");
        let body = m.render();
        assert!(
            body.contains("sluice_flows_active 0\n"),
            "{engine:?}: {body}"
        );
        let want = format!(
            "sluice_drops_total{{app=\"flows\",reason=\"table_full\"}} {}\n",
            summary.evicted
        );
        assert!(body.contains(&want), "{engine:?}: {body}");
        assert!(body.contains("sluice_drops_total{app=\"flows\",reason=\"records_lost\"} 0\n"));
    }
}

/// Sampling's drops (a full label table) reach the metrics while the
/// packets come, and end equal to the summary's, on every engine.
#[test]
fn sampling_keeps_its_drops_up_to_date() {
    use monitor::{SampleEngine, SampleOptions, SampleRecord, sample_trajectories};
    for engine in [
        SampleEngine::Reference,
        SampleEngine::Ebpf,
        SampleEngine::Xpf(xpf::XpfEngine::Interp),
    ] {
        let m = Arc::new(Metrics::default());
        let opts = SampleOptions {
            a: 1,
            b: 1,
            table: 16,
            engine,
            limit: None,
            metrics: Some(m.clone()),
        };
        let mut source = pipeline::Generated::parse(&["udp,flows=200,count=4000".into()]).unwrap();
        let mut seen = Vec::new();
        let summary = sample_trajectories(
            &mut source,
            &opts,
            &std::sync::atomic::AtomicU64::new(0),
            |_: &[SampleRecord]| {
                let body = m.render();
                seen.push(
                    body.contains("reason=\"table_full\"} ") && !body.contains("table_full\"} 0\n"),
                );
            },
        )
        .unwrap();
        assert!(summary.counts.full > 0, "{engine:?}: {summary:?}");
        assert!(
            seen.iter().any(|&s| s),
            "{engine:?}: no drops seen during the run"
        );
        let want = format!(
            "sluice_drops_total{{app=\"sample\",reason=\"table_full\"}} {}\n",
            summary.counts.full
        );
        assert!(m.render().contains(&want), "{engine:?}: {}", m.render());
    }
}

/// A stream that gives 30 flows, each ended by a FIN, then pauses (a pipe
/// between bursts): what was handed out by then is kept.
struct Paused {
    burst: Option<Vec<Vec<u8>>>,
    handed: Arc<std::sync::atomic::AtomicU64>,
    at_pause: Arc<std::sync::atomic::AtomicU64>,
}

impl pipeline::Source for Paused {
    fn fill(&mut self, batch: &mut pipeline::Batch) -> Result<(), pipeline::SourceError> {
        match self.burst.take() {
            Some(frames) => {
                for (i, f) in frames.iter().enumerate() {
                    batch.push(
                        i as u64 + 1,
                        i as u64 * 1000,
                        capture::LinkKind::Ethernet,
                        f,
                    );
                }
            }
            None => self
                .at_pause
                .store(self.handed.load(Ordering::SeqCst), Ordering::SeqCst),
        }
        Ok(())
    }
}

/// A scrape during a pause of a piped replay showed no ended flow after
/// 30 had ended: they waited in a batch of 256 to fill. They now go out
/// (and into the metrics) when the source's batch ends.
#[test]
fn flows_ended_before_a_pause_are_handed_out_by_then() {
    let fin = |port: u16| {
        let mut f = packet::Builder::tcp("10.0.0.1", "10.0.0.2", port, 80).build();
        f[14 + 20 + 13] = 0x11; // FIN|ACK
        f
    };
    let handed = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let at_pause = Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
    let mut source = Paused {
        burst: Some((1000..1030).map(fin).collect()),
        handed: handed.clone(),
        at_pause: at_pause.clone(),
    };
    let opts = monitor::FlowRunOptions::default();
    let progress = std::sync::atomic::AtomicU64::new(0);
    let sum = monitor::account_flows(&mut source, &opts, &progress, |ended| {
        handed.fetch_add(ended.len() as u64, Ordering::SeqCst);
    })
    .unwrap();
    assert_eq!((sum.flows, sum.by_reason[3]), (30, 30));
    assert_eq!(
        at_pause.load(Ordering::SeqCst),
        30,
        "flows handed out at the pause"
    );
}
