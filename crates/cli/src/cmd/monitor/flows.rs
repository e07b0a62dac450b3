//! `sluice monitor flows`: flow accounting over a capture or generated
//! traffic (the library's `monitor::account_flows`), ended flows exported
//! as IPFIX to a collector (UDP or TCP) or a file, and printed as a table
//! or JSON lines. A collector that cannot be reached is reported, never
//! fatal: accounting goes on.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use engine::FlowsSpec;
use monitor::{Ended, FlowEngine};
use serde::Serialize;

#[derive(clap::Args)]
pub struct FlowArgs {
    #[command(flatten)]
    input: super::Input,
    /// Who accounts: sluice's flow table, the eBPF program programs/flows.c in sluice's VM, or the xPF program programs/xpf/flows.s in the xPF interpreter (--dev with --datapath kernel always runs programs/flows.c in the kernel)
    #[arg(long, value_enum, default_value_t = EngineArg::Table)]
    engine: EngineArg,
    /// Flows kept at once; when full, the table evicts the least recently seen, the programs send the packet as a record of its own (counted) [default: 65536; xpf: 2048, its most]
    #[arg(long)]
    capacity: Option<usize>,
    /// Seconds without a packet that end a flow
    #[arg(long, default_value_t = 15.0)]
    idle: f64,
    /// Seconds after which a flow is exported and starts again
    #[arg(long, default_value_t = 1800.0)]
    active: f64,
    /// Export IPFIX over UDP to this collector (e.g. nfcapd)
    #[arg(long, value_name = "HOST:PORT")]
    ipfix: Option<String>,
    /// Export IPFIX over TCP to this collector
    #[arg(long, value_name = "HOST:PORT")]
    ipfix_tcp: Option<String>,
    /// Write IPFIX messages to this file (RFC 5655)
    #[arg(long, value_name = "FILE")]
    ipfix_file: Option<PathBuf>,
    /// IPFIX observation domain id
    #[arg(long, default_value_t = 0)]
    domain: u32,
    /// Flows listed on the terminal (the most bytes first)
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics while it runs (a bare PORT: loopback; a client whose request is slow, idle or over 16 KiB is cut off, docs/monitor.md)
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<String>,
    /// Write one row per ended flow, columns named as IPFIX's information elements, to FILE: Parquet, or Arrow IPC for .arrow/.feather/.ipc, CSV for .csv (docs/tables.md)
    #[arg(long, value_name = "FILE")]
    out_table: Option<PathBuf>,
    /// A JSON line per ended flow, then one with the summary
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum EngineArg {
    /// sluice's own flow table
    Table,
    /// programs/flows.c (hash map, ring buffer of ended flows) in sluice's VM
    Ebpf,
    /// programs/xpf/flows.s (a table and a log in persistent memory) in the xPF interpreter
    Xpf,
}

/// Where ended flows go as IPFIX.
enum Exporter {
    Udp(ipfix::UdpExporter),
    Tcp(ipfix::TcpExporter),
    File(ipfix::FileExporter),
}

impl Exporter {
    fn export(&mut self, flows: &[ipfix::Flow]) -> Result<ipfix::Sent, ipfix::Error> {
        match self {
            Exporter::Udp(e) => e.export(flows),
            Exporter::Tcp(e) => e.export(flows),
            Exporter::File(e) => e.export(flows),
        }
    }
}

/// An ended flow as a JSON line, each field named as the IPFIX information
/// element (IANA's registry, RFC 7012) that carries it in the export.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FlowLine {
    #[serde(rename = "sourceIPv4Address", skip_serializing_if = "Option::is_none")]
    source_ipv4_address: Option<String>,
    #[serde(
        rename = "destinationIPv4Address",
        skip_serializing_if = "Option::is_none"
    )]
    destination_ipv4_address: Option<String>,
    #[serde(rename = "sourceIPv6Address", skip_serializing_if = "Option::is_none")]
    source_ipv6_address: Option<String>,
    #[serde(
        rename = "destinationIPv6Address",
        skip_serializing_if = "Option::is_none"
    )]
    destination_ipv6_address: Option<String>,
    protocol_identifier: u8,
    /// Ports of every flow but ICMP's.
    #[serde(skip_serializing_if = "Option::is_none")]
    source_transport_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    destination_transport_port: Option<u16>,
    /// ICMP: type * 256 + code.
    #[serde(rename = "icmpTypeCodeIPv4", skip_serializing_if = "Option::is_none")]
    icmp_type_code_ipv4: Option<u16>,
    #[serde(rename = "icmpTypeCodeIPv6", skip_serializing_if = "Option::is_none")]
    icmp_type_code_ipv6: Option<u16>,
    packet_delta_count: u64,
    octet_delta_count: u64,
    flow_start_milliseconds: u64,
    flow_end_milliseconds: u64,
    /// The times to the nanosecond, as counts since the epoch (the IPFIX
    /// element is NTP-encoded on the wire).
    flow_start_nanoseconds: u64,
    flow_end_nanoseconds: u64,
    tcp_control_bits: u8,
    flow_end_reason: u8,
}

#[derive(Serialize, Default)]
struct Summary {
    packets: u64,
    accounted: u64,
    flows: u64,
    idle_timeout: u64,
    active_timeout: u64,
    end_of_flow: u64,
    forced_end: u64,
    evicted: u64,
    exported: u64,
    export_messages: u64,
    export_errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_export_error: Option<String>,
    /// Stopped by SIGINT or SIGTERM (the packets read before it all ran).
    stopped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_error: Option<String>,
    /// Packets earlier than a packet before them (a capture out of time
    /// order).
    #[serde(skip_serializing_if = "super::is_zero")]
    out_of_order: u64,
}

impl Summary {
    /// The flows ended, per flowEndReason code (1 to 5).
    fn ended(&mut self, by_reason: &[u64; 6]) {
        self.flows = by_reason.iter().sum();
        self.idle_timeout = by_reason[1];
        self.active_timeout = by_reason[2];
        self.end_of_flow = by_reason[3];
        self.forced_end = by_reason[4];
    }
}

pub fn run(a: FlowArgs) -> Result<ExitCode, String> {
    let metrics = Arc::new(monitor::Metrics::default());
    metrics.accounting.store(true, Ordering::Relaxed);
    let spec = FlowsSpec {
        source: a.input.spec(),
        engine: match a.engine {
            EngineArg::Table => FlowEngine::Table,
            EngineArg::Ebpf => FlowEngine::Ebpf,
            EngineArg::Xpf => FlowEngine::Xpf(xpf::XpfEngine::Interp),
        },
        capacity: a.capacity,
        idle: a.idle,
        active: a.active,
        limit: a.input.count,
        metrics: a.metrics.is_some().then(|| metrics.clone()),
    };
    let opts = spec.options().map_err(|e| e.to_string())?;
    crate::out_table::check(a.out_table.as_deref())?;
    let mut exporters = Vec::new();
    let mut sum = Summary::default();
    // A collector that cannot be reached now is reported, not fatal.
    let failed = |sum: &mut Summary, e: String| {
        sum.export_errors += 1;
        if sum.first_export_error.is_none() {
            say!("sluice: IPFIX export: {e} (accounting goes on)");
            sum.first_export_error = Some(e);
        }
    };
    if let Some(c) = &a.ipfix {
        let o = ipfix::UdpOptions {
            domain: a.domain,
            ..ipfix::UdpOptions::default()
        };
        match ipfix::UdpExporter::connect(c, o) {
            Ok(e) => exporters.push(Exporter::Udp(e)),
            Err(e) => failed(&mut sum, e.to_string()),
        }
    }
    if let Some(c) = &a.ipfix_tcp {
        match ipfix::TcpExporter::connect(c, a.domain, Duration::from_secs(5)) {
            Ok(e) => exporters.push(Exporter::Tcp(e)),
            Err(e) => failed(&mut sum, e.to_string()),
        }
    }
    if let Some(p) = &a.ipfix_file {
        exporters.push(Exporter::File(
            ipfix::FileExporter::create(p, a.domain).map_err(|e| e.to_string())?,
        ));
    }
    let _server = match &a.metrics {
        Some(spec) => Some(monitor::MetricsServer::start(spec, metrics.clone())?),
        None => None,
    };
    let mut listed: Vec<Ended> = Vec::new();
    let mut rows: Vec<Ended> = Vec::new();
    let mut handle = |ended: &[Ended]| {
        if a.out_table.is_some() {
            rows.extend_from_slice(ended);
        }
        let records: Vec<ipfix::Flow> = ended.iter().map(Ended::to_ipfix).collect();
        for e in ended {
            metrics.packets.fetch_add(e.flow.packets, Ordering::Relaxed);
            metrics.bytes.fetch_add(e.flow.bytes, Ordering::Relaxed);
            metrics.ended[usize::from(e.reason.code())].fetch_add(1, Ordering::Relaxed);
        }
        for ex in &mut exporters {
            match ex.export(&records) {
                Ok(sent) => {
                    sum.exported += sent.records as u64;
                    sum.export_messages += sent.messages as u64;
                    metrics
                        .exported
                        .fetch_add(sent.records as u64, Ordering::Relaxed);
                }
                Err(e) => {
                    metrics.export_errors.fetch_add(1, Ordering::Relaxed);
                    failed(&mut sum, e.to_string());
                }
            }
        }
        if a.json {
            for e in ended {
                out!("{}", serde_json::to_string(&line(e)).expect("plain data"));
            }
        } else {
            listed.extend_from_slice(ended);
        }
    };
    if let Some(live) = a.input.live()? {
        if matches!(a.engine, EngineArg::Xpf) {
            return Err(
                "--engine xpf does not load into the kernel (its probe loop is more than a \
                 verifier can follow): --dev with --datapath kernel runs programs/flows.c; \
                 --datapath afxdp or afpacket runs any engine in user space"
                    .into(),
            );
        }
        let live = monitor::live_flows(
            &opts.table,
            live.dev,
            live.mode,
            live.stop,
            live.duration,
            opts.metrics.as_deref(),
            &mut handle,
        )
        .map_err(|e| e.to_string())?;
        sum.ended(&live.by_reason);
        sum.evicted = live.lacked;
    } else {
        let (mut source, total) = a.input.source()?;
        let run = crate::progress::with_progress(total, a.json, |count| {
            spec.run_on(source.as_mut(), count, &mut handle)
        })
        .map_err(|e| e.to_string())?;
        a.input.tell(source.as_ref());
        sum.packets = run.packets;
        sum.accounted = run.accounted;
        sum.ended(&run.by_reason);
        sum.evicted = run.evicted;
        sum.source_error = run.source_error;
        sum.stopped = a.input.stopped();
        sum.out_of_order = run.order.backwards;
        super::warn_out_of_order(
            &run.order,
            "flows time out as their packets are read, not as they crossed the wire",
        );
    }
    if let Some(path) = &a.out_table {
        crate::out_table::write(path, tables::flows(&rows))?;
    }
    // A file that could not be written whole (a full disk) ends at its last
    // whole message; the summary is printed, then what was lost, and the
    // exit status is 1.
    let mut file_error = None;
    for ex in exporters {
        if let Exporter::File(f) = ex
            && let Err(e) = f.finish()
        {
            file_error = Some(e.to_string());
        }
    }
    if a.json {
        out!(
            "{}",
            serde_json::to_string(&serde_json::json!({ "summary": sum })).expect("plain data")
        );
    } else {
        print_table(&mut listed, a.top, &sum);
    }
    let ended = crate::report::input_ended(
        sum.source_error.as_deref(),
        sum.packets,
        a.input.dev.is_some(),
    );
    match file_error {
        Some(e) => {
            say!("sluice: {e}");
            Ok(ExitCode::FAILURE)
        }
        None => Ok(ended),
    }
}

fn line(e: &Ended) -> FlowLine {
    let f = &e.flow;
    let (v4, v6) = match (f.key.src, f.key.dst) {
        (std::net::IpAddr::V4(_), std::net::IpAddr::V4(_)) => (true, false),
        _ => (false, true),
    };
    let icmp = (v4 && f.key.protocol == 1) || (v6 && f.key.protocol == 58);
    let addr = |yes: bool, a: std::net::IpAddr| yes.then(|| a.to_string());
    FlowLine {
        source_ipv4_address: addr(v4, f.key.src),
        destination_ipv4_address: addr(v4, f.key.dst),
        source_ipv6_address: addr(v6, f.key.src),
        destination_ipv6_address: addr(v6, f.key.dst),
        protocol_identifier: f.key.protocol,
        source_transport_port: (!icmp).then_some(f.key.src_port),
        destination_transport_port: (!icmp).then_some(f.key.dst_port),
        icmp_type_code_ipv4: (icmp && v4).then_some(f.key.dst_port),
        icmp_type_code_ipv6: (icmp && v6).then_some(f.key.dst_port),
        packet_delta_count: f.packets,
        octet_delta_count: f.bytes,
        flow_start_milliseconds: f.first_ns / 1_000_000,
        flow_end_milliseconds: f.last_ns / 1_000_000,
        flow_start_nanoseconds: f.first_ns,
        flow_end_nanoseconds: f.last_ns,
        tcp_control_bits: f.tcp_flags,
        flow_end_reason: e.reason.code(),
    }
}

fn print_table(flows: &mut [Ended], top: usize, s: &Summary) {
    out!(
        "{} packets, {} with IP in {} flows ({} idle, {} active timeout, {} FIN/RST, {} at the end, {} evicted); {} exported in {} IPFIX messages{}",
        s.packets,
        s.accounted,
        s.flows,
        s.idle_timeout,
        s.active_timeout,
        s.end_of_flow,
        s.forced_end,
        s.evicted,
        s.exported,
        s.export_messages,
        if s.export_errors > 0 {
            format!(", {} export errors", s.export_errors)
        } else {
            String::new()
        }
    );
    flows.sort_by_key(|e| std::cmp::Reverse(e.flow.bytes));
    if flows.is_empty() {
        return;
    }
    out!(
        "{:>39} {:>6}  {:>39} {:>6} {:>5} {:>9} {:>12}",
        "source",
        "port",
        "destination",
        "port",
        "proto",
        "packets",
        "bytes"
    );
    for e in flows.iter().take(top) {
        let k = &e.flow.key;
        out!(
            "{:>39} {:>6}  {:>39} {:>6} {:>5} {:>9} {:>12}",
            k.src.to_string(),
            k.src_port,
            k.dst.to_string(),
            k.dst_port,
            k.protocol,
            e.flow.packets,
            e.flow.bytes
        );
    }
}
