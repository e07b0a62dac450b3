//! `sluice monitor rtt`: passive round-trip times per TCP flow (the
//! library's `monitor::measure_rtt` over a capture or generated traffic, or
//! `monitor::live_rtt` on an interface), by the handshake (the xPF paper's
//! method) and by TCP timestamps (pping's), with the reference, the eBPF
//! program or the xPF program; printed as a per-flow table, JSON lines, or
//! pping's lines.

use std::process::ExitCode;
use std::sync::Arc;

use engine::RttSpec;
use monitor::{BUCKETS, MeterOptions, RttEngine, RttSample, RttStats, RttSummary};
use serde::Serialize;
use xpf::XpfEngine;

use super::seconds;

#[derive(clap::Args)]
pub struct RttArgs {
    #[command(flatten)]
    input: super::Input,
    /// Who measures (--dev with --datapath kernel always runs programs/rtt.c in the kernel)
    #[arg(long, value_enum, default_value_t = EngineArg::Table)]
    engine: EngineArg,
    /// With --engine xpf: the xPF interpreter, or its eBPF translation in sluice's VM or JIT
    #[arg(long, value_enum, default_value_t = XpfArg::Interp)]
    xpf_engine: XpfArg,
    /// SYNs kept awaiting their ACK (a full table is counted, never silent) [default: 16384; xpf: 512, its most]
    #[arg(long)]
    syn_table: Option<usize>,
    /// (flow, TSval) entries kept awaiting their echo [default: 65536; xpf: 4096, its most]
    #[arg(long)]
    ts_table: Option<usize>,
    /// Flows (per method) with statistics
    #[arg(long, default_value_t = MeterOptions::default().flow_capacity)]
    flow_table: usize,
    /// Seconds after which a SYN or TSval not answered is forgotten (pping's tsvalMaxAge)
    #[arg(long, default_value_t = 10.0)]
    max_age: f64,
    /// Flows listed on the terminal (the most samples first)
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Serve Prometheus metrics (an RTT histogram) at http://ADDR:PORT/metrics while it runs (a bare PORT: loopback; a client whose request is slow, idle or over 16 KiB is cut off, docs/monitor.md)
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<String>,
    /// Write one row per sample (src, dst, src_port, dst_port, method, rtt_ns, time_ns) to FILE: Parquet, or Arrow IPC for .arrow/.feather/.ipc, CSV for .csv (docs/tables.md)
    #[arg(long, value_name = "FILE", conflicts_with = "pping")]
    out_table: Option<std::path::PathBuf>,
    /// A JSON line per sample, one per flow and method, then one with the summary
    #[arg(long, conflicts_with = "pping")]
    json: bool,
    /// pping's lines by pping's own rules: HH:MM:SS RTT minRTT FLOW (local time; the flow that echoed; not with --engine ebpf|xpf or --datapath kernel)
    #[arg(long)]
    pping: bool,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum EngineArg {
    /// sluice's reference meter
    Table,
    /// programs/rtt.c (hash maps, ring buffer of samples) in sluice's VM
    Ebpf,
    /// programs/xpf/rtt.s (tables probed in persistent memory, a log of samples)
    Xpf,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum XpfArg {
    Interp,
    Vm,
    Jit,
}

#[derive(Serialize)]
struct SampleLine {
    src: String,
    dst: String,
    src_port: u16,
    dst_port: u16,
    method: &'static str,
    rtt_ns: u64,
    time_ns: u64,
}

#[derive(Serialize)]
struct FlowLine {
    flow: FlowJson,
}

#[derive(Serialize)]
struct FlowJson {
    src: String,
    dst: String,
    src_port: u16,
    dst_port: u16,
    method: &'static str,
    samples: u64,
    min_ns: u64,
    avg_ns: u64,
    max_ns: u64,
    /// Samples per log2 bucket of microseconds (bucket k: [2^(k-1), 2^k) µs).
    histogram: Vec<u32>,
}

#[derive(Serialize, Default)]
struct Summary {
    packets: u64,
    tcp: u64,
    handshake_samples: u64,
    timestamp_samples: u64,
    flows: usize,
    syn_table_full: u64,
    ts_table_full: u64,
    flow_table_full: u64,
    lost: u64,
    /// Stopped by SIGINT or SIGTERM (the packets read before it all ran).
    stopped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_error: Option<String>,
    /// Packets earlier than a packet before them (a capture out of time
    /// order).
    #[serde(skip_serializing_if = "super::is_zero")]
    out_of_order: u64,
}

pub fn run(a: RttArgs) -> Result<ExitCode, String> {
    let spec = RttSpec {
        source: a.input.spec(),
        engine: match a.engine {
            EngineArg::Table => RttEngine::Table,
            EngineArg::Ebpf => RttEngine::Ebpf,
            EngineArg::Xpf => RttEngine::Xpf(match a.xpf_engine {
                XpfArg::Interp => XpfEngine::Interp,
                XpfArg::Vm => XpfEngine::Vm,
                XpfArg::Jit => XpfEngine::Jit,
            }),
        },
        syn_table: a.syn_table,
        ts_table: a.ts_table,
        flow_table: a.flow_table,
        max_age: a.max_age,
        limit: a.input.count,
    };
    let opts = spec.options().map_err(|e| e.to_string())?;
    crate::out_table::check(a.out_table.as_deref())?;
    let metrics = Arc::new(monitor::Metrics::default());
    let _server = match &a.metrics {
        Some(spec) => Some(monitor::MetricsServer::start(spec, metrics.clone())?),
        None => None,
    };
    if a.pping {
        return run_pping(&a, &metrics);
    }
    let mut rows: Vec<RttSample> = Vec::new();
    let mut handle = |samples: &[RttSample]| {
        if a.out_table.is_some() {
            rows.extend_from_slice(samples);
        }
        for s in samples {
            metrics.rtt(s.rtt_ns);
            if a.json {
                let line = SampleLine {
                    src: s.key.src.to_string(),
                    dst: s.key.dst.to_string(),
                    src_port: s.key.src_port,
                    dst_port: s.key.dst_port,
                    method: s.method.name(),
                    rtt_ns: s.rtt_ns,
                    time_ns: s.time_ns,
                };
                out!("{}", serde_json::to_string(&line).expect("plain data"));
            }
        }
    };
    let run: RttSummary = if let Some(live) = a.input.live()? {
        if matches!(a.engine, EngineArg::Xpf) {
            return Err(
                "--dev with --datapath kernel runs programs/rtt.c in the kernel (the xPF program \
                 keeps its working words in shared memory: one CPU at a time); --datapath afxdp \
                 or afpacket runs any engine in user space"
                    .into(),
            );
        }
        monitor::live_rtt(
            &opts.meter,
            live.dev,
            live.mode,
            live.stop,
            live.duration,
            &mut handle,
        )
        .map_err(|e| e.to_string())?
    } else {
        let (mut source, total) = a.input.source()?;
        let run = crate::progress::with_progress(total, a.json, |count| {
            spec.run_on(source.as_mut(), count, &mut handle)
        })
        .map_err(|e| e.to_string())?;
        a.input.tell(source.as_ref());
        run
    };
    if let Some(path) = &a.out_table {
        crate::out_table::write(path, tables::rtt(&rows))?;
    }
    for (reason, n) in [
        ("syn_table_full", run.counters.syn_full),
        ("ts_table_full", run.counters.ts_full),
        ("flow_table_full", run.counters.flows_full),
        ("records_lost", run.counters.lost),
    ] {
        metrics.drops("rtt", reason, n);
    }
    let sum = Summary {
        packets: run.packets,
        tcp: run.tcp,
        handshake_samples: run.samples[1],
        timestamp_samples: run.samples[2],
        flows: run.flows.len(),
        syn_table_full: run.counters.syn_full,
        ts_table_full: run.counters.ts_full,
        flow_table_full: run.counters.flows_full,
        lost: run.counters.lost,
        stopped: a.input.stopped(),
        source_error: run.source_error.clone(),
        out_of_order: run.order.backwards,
    };
    super::warn_out_of_order(
        &run.order,
        "RTTs are measured in the order read, so a reply read before its request gives a wrong sample or none",
    );
    if a.json {
        for ((k, m), st) in &run.flows {
            let line = FlowLine {
                flow: FlowJson {
                    src: k.src.to_string(),
                    dst: k.dst.to_string(),
                    src_port: k.src_port,
                    dst_port: k.dst_port,
                    method: m.name(),
                    samples: st.count,
                    min_ns: st.min_ns,
                    avg_ns: st.avg_ns(),
                    max_ns: st.max_ns,
                    histogram: st.hist.to_vec(),
                },
            };
            out!("{}", serde_json::to_string(&line).expect("plain data"));
        }
        out!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "summary": sum })).expect("plain data")
        );
    } else {
        print_table(&run, a.top, &sum);
    }
    let full = sum.syn_table_full + sum.ts_table_full + sum.flow_table_full + sum.lost;
    if full > 0 {
        say!(
            "sluice: tables full: {} SYNs, {} TSvals, {} flow samples not kept; {} records lost",
            sum.syn_table_full,
            sum.ts_table_full,
            sum.flow_table_full,
            sum.lost
        );
    }
    Ok(crate::report::input_ended(
        sum.source_error.as_deref(),
        sum.packets,
        a.input.dev.is_some(),
    ))
}

/// `--pping`: pping's own rules (`monitor::Pping`) over the packets, read
/// in user space, and its lines.
fn run_pping(a: &RttArgs, metrics: &monitor::Metrics) -> Result<ExitCode, String> {
    if !matches!(a.engine, EngineArg::Table) {
        return Err(
            "--pping runs pping's own rules in user space; --engine ebpf and xpf measure \
                    by sluice's (see them with --json)"
                .into(),
        );
    }
    if a.input.in_kernel() {
        return Err(
            "--pping reads the packets in user space: with --dev give --datapath afpacket \
                    or afxdp"
                .into(),
        );
    }
    seconds(a.max_age, "max-age")?;
    let (mut source, total) = a.input.source()?;
    let run = crate::progress::with_progress(total, true, |count| {
        monitor::pping_samples(source.as_mut(), a.max_age, a.input.count, count, |s| {
            if s.rtt >= 0.0 {
                metrics.rtt((s.rtt * 1e9) as u64);
            }
            out!("{}", pping_line(s));
        })
    })
    .map_err(|e| e.to_string())?;
    a.input.tell(source.as_ref());
    super::warn_out_of_order(
        &run.order,
        "pping takes the packets in capture order, so a reply read before its request gives a wrong sample or none",
    );
    // pping's summary goes to stderr too.
    say!(
        "{} flows, {} packets, {} samples",
        run.flows,
        run.packets,
        run.samples
    );
    Ok(crate::report::input_ended(
        run.source_error.as_deref(),
        run.packets,
        a.input.dev.is_some(),
    ))
}

/// pping's line: `HH:MM:SS RTT minRTT SRC:PORT+DST:PORT` (its `%T` of the
/// packet's second in local time, its `fmtTimeDiff` delays).
fn pping_line(s: &monitor::PpingSample) -> String {
    format!(
        "{} {} {} {}:{}+{}:{}",
        clock_time(s.secs),
        monitor::pping_delay(s.rtt),
        monitor::pping_delay(s.min),
        inet_ntop(&s.key.src),
        s.key.src_port,
        inet_ntop(&s.key.dst),
        s.key.dst_port
    )
}

/// An address as glibc's `inet_ntop` (libtins's `to_string`) writes it:
/// as Rust does, except that an IPv4-compatible IPv6 address (`::a.b.c.d`)
/// keeps its dotted quad.
fn inet_ntop(a: &std::net::IpAddr) -> String {
    match a {
        std::net::IpAddr::V6(v6) => {
            let w = v6.segments();
            if w[..6].iter().all(|&x| x == 0) && w[6] != 0 {
                let o = v6.octets();
                return format!("::{}.{}.{}.{}", o[12], o[13], o[14], o[15]);
            }
            v6.to_string()
        }
        v4 => v4.to_string(),
    }
}

/// `HH:MM:SS` in local time (pping's `strftime("%T", localtime(...))`).
fn clock_time(secs: i64) -> String {
    let secs = secs as libc::time_t;
    // SAFETY: a zeroed tm is a valid out-parameter; localtime_r writes it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a time_t and a tm.
    unsafe { libc::localtime_r(&secs, &mut tm) };
    format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 * 1e-6)
}

/// The range of histogram bucket `k`.
fn bucket_range(k: usize) -> String {
    let us = |v: u64| {
        if v >= 1000 {
            format!("{}ms", v as f64 / 1000.0)
        } else {
            format!("{v}us")
        }
    };
    match k {
        0 => "<1us".into(),
        k if k == BUCKETS - 1 => format!(">={}", us(1 << (k - 1))),
        k => format!("{}-{}", us(1 << (k - 1)), us(1 << k)),
    }
}

/// The bucket holding the median sample.
fn median_bucket(st: &RttStats) -> usize {
    let half = st.count.div_ceil(2);
    let mut seen = 0;
    for (k, &n) in st.hist.iter().enumerate() {
        seen += u64::from(n);
        if seen >= half {
            return k;
        }
    }
    0
}

fn print_table(run: &RttSummary, top: usize, s: &Summary) {
    out!(
        "{} packets, {} TCP: {} handshake and {} timestamp RTTs in {} flows{}",
        s.packets,
        s.tcp,
        s.handshake_samples,
        s.timestamp_samples,
        s.flows,
        if s.syn_table_full + s.ts_table_full + s.flow_table_full + s.lost > 0 {
            format!(
                " (tables full: {} SYNs, {} TSvals, {} samples not in flow statistics; {} records lost)",
                s.syn_table_full, s.ts_table_full, s.flow_table_full, s.lost
            )
        } else {
            String::new()
        }
    );
    if run.flows.is_empty() {
        return;
    }
    let mut flows: Vec<_> = run.flows.iter().collect();
    flows.sort_by_key(|(k, st)| (std::cmp::Reverse(st.count), **k));
    out!(
        "{:>39} {:>6}  {:>39} {:>6} {:>9} {:>8} {:>10} {:>10} {:>10}  median bucket",
        "source",
        "port",
        "destination",
        "port",
        "method",
        "samples",
        "min ms",
        "avg ms",
        "max ms"
    );
    for ((k, m), st) in flows.into_iter().take(top) {
        out!(
            "{:>39} {:>6}  {:>39} {:>6} {:>9} {:>8} {:>10} {:>10} {:>10}  {}",
            k.src.to_string(),
            k.src_port,
            k.dst.to_string(),
            k.dst_port,
            m.name(),
            st.count,
            ms(st.min_ns),
            ms(st.avg_ns()),
            ms(st.max_ns),
            bucket_range(median_bucket(st))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_print_as_inet_ntop_and_buckets_name_their_range() {
        for (a, want) in [
            ("::1", "::1"),
            ("::1.2.3.4", "::1.2.3.4"),
            ("::ffff:1.2.3.4", "::ffff:1.2.3.4"),
            ("2001:db8::1", "2001:db8::1"),
            ("10.0.0.1", "10.0.0.1"),
        ] {
            assert_eq!(inet_ntop(&a.parse().unwrap()), want);
        }
        assert_eq!(bucket_range(0), "<1us");
        assert_eq!(bucket_range(12), "2.048ms-4.096ms");
    }
}
