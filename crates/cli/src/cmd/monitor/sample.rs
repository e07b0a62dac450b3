//! `sluice monitor sample`: trajectory sampling (the library's
//! `monitor::sample_trajectories`) over a capture or generated traffic by
//! the eBPF program (`programs/sample.c` in sluice's VM), the xPF program
//! (`programs/xpf/sample.s`) or the reference, or live with the eBPF
//! program in the kernel; samples and flow records printed as a table or
//! JSON lines.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use engine::SampleSpec;
use monitor::{SampleCounts, SampleEngine, SampleOptions, SampleRecord};
use serde::Serialize;
use xpf::XpfEngine;

#[derive(clap::Args)]
pub struct SampleArgs {
    #[command(flatten)]
    input: super::Input,
    /// Who samples: the eBPF program in sluice's VM, the xPF program, or sluice's reference in Rust
    #[arg(long, value_enum, default_value_t = EngineArg::Ebpf)]
    engine: EngineArg,
    /// With --engine xpf: the xPF interpreter, or its eBPF translation in sluice's VM or JIT
    #[arg(long, value_enum, default_value_t = XpfArg::Interp)]
    xpf_engine: XpfArg,
    /// The sampling rate B/A (a packet is sampled when h(x) mod A < B), e.g. 1/100, or a fraction (0.01)
    #[arg(long, value_name = "B/A", conflicts_with_all = ["a", "b"])]
    rate: Option<String>,
    /// The modulus A
    #[arg(short = 'a', value_name = "A", requires = "b")]
    a: Option<u32>,
    /// The threshold B
    #[arg(short = 'b', value_name = "B", requires = "a")]
    b: Option<u32>,
    /// Slots of the label table (a power of two; a label that finds no room is counted as `table_full`)
    #[arg(long, default_value_t = SampleOptions::default().table)]
    table: usize,
    /// Samples listed on the terminal
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics while it runs (a bare PORT: loopback; a client whose request is slow, idle or over 16 KiB is cut off, docs/monitor.md)
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<String>,
    /// Write one row per record (flow records and samples, in order) to FILE: Parquet, or Arrow IPC for .arrow/.feather/.ipc, CSV for .csv (docs/tables.md)
    #[arg(long, value_name = "FILE")]
    out_table: Option<std::path::PathBuf>,
    /// A JSON line per record (flow records before the first sample of their label), then one with the summary
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum EngineArg {
    /// programs/sample.c (label table, ring buffer of records) in sluice's VM
    Ebpf,
    /// programs/xpf/sample.s (persistent memory, a log of records)
    Xpf,
    /// sluice's reference in Rust
    Reference,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum XpfArg {
    Interp,
    Vm,
    Jit,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Line {
    Sample {
        label: u32,
        hash: u32,
        time_ns: u64,
    },
    Flow {
        label: u32,
        src: String,
        dst: String,
        protocol: u8,
        src_port: u16,
        dst_port: u16,
    },
}

#[derive(Serialize, Default)]
struct Summary {
    a: u32,
    b: u32,
    packets: u64,
    hashed: u64,
    sampled: u64,
    flow_records: u64,
    table_full: u64,
    lost: u64,
    /// Stopped by SIGINT or SIGTERM (the packets read before it all ran).
    stopped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_error: Option<String>,
}

fn line(r: &SampleRecord) -> Line {
    match r {
        SampleRecord::Sample(s) => Line::Sample {
            label: s.label,
            hash: s.hash,
            time_ns: s.time_ns,
        },
        SampleRecord::Flow(f) => Line::Flow {
            label: f.label,
            src: f.flow.src.to_string(),
            dst: f.flow.dst.to_string(),
            protocol: f.flow.protocol,
            src_port: f.flow.src_port,
            dst_port: f.flow.dst_port,
        },
    }
}

pub fn run(a: SampleArgs) -> Result<ExitCode, String> {
    let metrics = Arc::new(monitor::Metrics::default());
    metrics.sampling.store(true, Ordering::Relaxed);
    let spec = SampleSpec {
        source: a.input.spec(),
        rate: a.rate.clone(),
        a: a.a,
        b: a.b,
        table: a.table,
        engine: match a.engine {
            EngineArg::Ebpf => SampleEngine::Ebpf,
            EngineArg::Reference => SampleEngine::Reference,
            EngineArg::Xpf => SampleEngine::Xpf(match a.xpf_engine {
                XpfArg::Interp => XpfEngine::Interp,
                XpfArg::Vm => XpfEngine::Vm,
                XpfArg::Jit => XpfEngine::Jit,
            }),
        },
        limit: a.input.count,
        metrics: a.metrics.is_some().then(|| metrics.clone()),
    };
    let (ma, mb) = spec.rate().map_err(|e| e.to_string())?;
    crate::out_table::check(a.out_table.as_deref())?;
    let _server = match &a.metrics {
        Some(spec) => Some(monitor::MetricsServer::start(spec, metrics.clone())?),
        None => None,
    };
    let mut listed: Vec<SampleRecord> = Vec::new();
    let mut rows: Vec<SampleRecord> = Vec::new();
    let mut handle = |records: &[SampleRecord]| {
        if a.out_table.is_some() {
            rows.extend_from_slice(records);
        }
        for r in records {
            match r {
                SampleRecord::Sample(_) => metrics.samples.fetch_add(1, Ordering::Relaxed),
                SampleRecord::Flow(_) => metrics.sample_flows.fetch_add(1, Ordering::Relaxed),
            };
            if a.json {
                out!("{}", serde_json::to_string(&line(r)).expect("plain data"));
            }
        }
        if !a.json {
            listed.extend_from_slice(records);
        }
    };
    let mut sum = Summary {
        a: ma,
        b: mb,
        ..Summary::default()
    };
    let counts: SampleCounts;
    if let Some(live) = a.input.live()? {
        if matches!(a.engine, EngineArg::Xpf | EngineArg::Reference) {
            return Err(
                "--dev with --datapath kernel runs programs/sample.c in the kernel (--engine \
                 ebpf); --datapath afxdp or afpacket runs any engine in user space"
                    .into(),
            );
        }
        // Live, the program counts the IP packets it hashed, not all.
        counts = monitor::live_sample(
            ma,
            mb,
            a.table,
            live.dev,
            live.mode,
            live.stop,
            live.duration,
            &mut handle,
        )
        .map_err(|e| e.to_string())?;
    } else {
        let (mut source, total) = a.input.source()?;
        let run = crate::progress::with_progress(total, a.json, |count| {
            spec.run_on(source.as_mut(), count, &mut handle)
        })
        .map_err(|e| e.to_string())?;
        a.input.tell(source.as_ref());
        sum.packets = run.packets;
        sum.source_error = run.source_error;
        sum.stopped = a.input.stopped();
        counts = run.counts;
    }
    if let Some(path) = &a.out_table {
        crate::out_table::write(path, tables::samples(&rows))?;
    }
    sum.hashed = counts.hashed;
    sum.sampled = counts.sampled;
    sum.flow_records = counts.flows;
    sum.table_full = counts.full;
    sum.lost = counts.lost;
    metrics.drops("sample", "table_full", counts.full);
    metrics.drops("sample", "records_lost", counts.lost);
    if a.json {
        out!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "summary": sum })).expect("plain data")
        );
    } else {
        print_table(&listed, a.top, &sum);
    }
    if sum.table_full > 0 {
        say!(
            "sluice: the label table was full for {} flow records (sent anyway): raise --table",
            sum.table_full
        );
    }
    if sum.lost > 0 {
        say!("sluice: {} records lost on the way to user space", sum.lost);
    }
    Ok(crate::report::input_ended(
        sum.source_error.as_deref(),
        sum.packets,
        a.input.dev.is_some(),
    ))
}

fn print_table(records: &[SampleRecord], top: usize, s: &Summary) {
    let pct = if s.hashed > 0 {
        100.0 * s.sampled as f64 / s.hashed as f64
    } else {
        0.0
    };
    out!(
        "{} packets, {} with IP hashed, {} sampled ({pct:.3}%; B/A = {}/{} = {:.3}%), {} flow records, {} past a full table, {} lost",
        s.packets,
        s.hashed,
        s.sampled,
        s.b,
        s.a,
        100.0 * f64::from(s.b) / f64::from(s.a),
        s.flow_records,
        s.table_full,
        s.lost
    );
    let mut flows = HashMap::new();
    for r in records {
        if let SampleRecord::Flow(f) = r {
            flows.entry(f.label).or_insert(f.flow);
        }
    }
    let samples: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            SampleRecord::Sample(s) => Some(s),
            SampleRecord::Flow(_) => None,
        })
        .collect();
    if samples.is_empty() {
        return;
    }
    out!(
        "{:>20} {:>10} {:>10}  {:>39} {:>6}  {:>39} {:>6} {:>5}",
        "time_ns",
        "label",
        "hash",
        "source",
        "port",
        "destination",
        "port",
        "proto"
    );
    for s in samples.iter().take(top) {
        let (src, sport, dst, dport, proto) = match flows.get(&s.label) {
            Some(k) => (
                k.src.to_string(),
                k.src_port,
                k.dst.to_string(),
                k.dst_port,
                k.protocol,
            ),
            None => ("?".into(), 0, "?".into(), 0, 0),
        };
        out!(
            "{:>20} {:>10x} {:>10x}  {src:>39} {sport:>6}  {dst:>39} {dport:>6} {proto:>5}",
            s.time_ns,
            s.label,
            s.hash
        );
    }
    if samples.len() > top {
        out!("... {} more samples (--top, --json)", samples.len() - top);
    }
}
