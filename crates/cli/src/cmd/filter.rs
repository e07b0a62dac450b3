//! `sluice filter`: tcpdump's filter language over a capture, as `tcpdump
//! -r IN [-w OUT] [-c N] EXPR` runs it (classic BPF compiled by libpcap,
//! run by the engine `--engine` picks: sluice's classic interpreter, the
//! program compiled to native code by sluice's classic JIT, or its eBPF
//! translation in sluice's eBPF JIT or in the kernel); without `-w`, a
//! line per matching packet as `tcpdump -n` prints it (crate `dissect`);
//! `-d`, `-dd`, `-ddd` print the program as tcpdump does.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::report::print_json;

/// Filter a capture with a tcpdump expression, or print its classic BPF program
#[derive(clap::Args)]
pub struct Args {
    /// The filter expression, as tcpdump takes it (the words are joined)
    #[arg(required = true, num_args = 1.., value_name = "EXPR")]
    expr: Vec<String>,
    /// Capture to read (pcap or pcapng): a file, a FIFO, or - for standard input
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    read: Option<PathBuf>,
    /// Write the matching packets here, with their link type (.pcapng for pcapng; - for standard output, the report then going to standard error)
    #[arg(short = 'w', long = "write", value_name = "FILE", requires = "read")]
    write: Option<PathBuf>,
    /// Stop after this many matching packets (1 or more)
    #[arg(short = 'c', long = "count", value_name = "N")]
    count: Option<u64>,
    /// Print the program instead: -d as mnemonics, -dd as C, -ddd as decimal (as tcpdump; with -r, for the capture's link type and snapshot length)
    #[arg(short = 'd', action = clap::ArgAction::Count)]
    dump: u8,
    /// Link type to compile -d for: a LINKTYPE number or EN10MB, RAW, LINUX_SLL, LINUX_SLL2, NULL
    #[arg(short = 'y', long = "linktype", default_value = "EN10MB")]
    linktype: String,
    /// Snap length to compile -d for
    #[arg(short = 's', long = "snaplen", default_value_t = cbpf::DEFAULT_SNAPLEN)]
    snaplen: u32,
    /// What runs the filter
    #[arg(long, value_enum, default_value_t = EngineArg::Interp)]
    engine: EngineArg,
    /// Addresses and ports as numbers (always: sluice looks no name up; taken for tcpdump's habit)
    #[arg(short = 'n')]
    numeric: bool,
    /// Print each packet's link-level header (tcpdump -e)
    #[arg(short = 'e')]
    link: bool,
    /// Timestamps: -t none, -tt seconds since the epoch, -ttt time since the previous packet
    #[arg(short = 't', action = clap::ArgAction::Count)]
    time: u8,
    /// More of each packet: the IP header's fields, checksums (tcpdump -v)
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    verbose: u8,
    /// Each packet in hex after its line, without the link header (tcpdump -x)
    #[arg(short = 'x', conflicts_with_all = ["hex_ascii", "ascii"])]
    hex: bool,
    /// Each packet in hex and ASCII (tcpdump -X)
    #[arg(short = 'X', conflicts_with = "ascii")]
    hex_ascii: bool,
    /// Each packet in ASCII (tcpdump -A)
    #[arg(short = 'A')]
    ascii: bool,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum EngineArg {
    /// sluice's classic interpreter
    Interp,
    /// The classic program compiled to x86-64 code by sluice's classic JIT (programs the kernel's checker accepts: at most 4096 instructions; on other architectures the interpreter decides, counted)
    Jit,
    /// The eBPF translation, verified by sluice's verifier, in sluice's eBPF JIT (programs of at most 4096 classic instructions, the kernel's limit)
    EbpfJit,
    /// The eBPF translation in the kernel, a BPF_PROG_TEST_RUN per packet (root, or CAP_BPF and CAP_NET_ADMIN); the packets the kernel cannot run as classic BPF would (under 14 bytes, refused by the test run, or cut shorter than their wire length for a filter that reads len) are decided by the interpreter and counted
    Kernel,
}

/// The printer's options from tcpdump's flags.
fn print_options(a: &Args) -> Result<dissect::PrintOptions, String> {
    let time = match a.time {
        0 => dissect::TimeFormat::Default,
        1 => dissect::TimeFormat::None,
        2 => dissect::TimeFormat::Epoch,
        3 => dissect::TimeFormat::Delta,
        n => {
            return Err(format!(
                "-{}: sluice prints -t, -tt and -ttt",
                "t".repeat(n.into())
            ));
        }
    };
    let hex = if a.hex {
        dissect::Hex::X
    } else if a.hex_ascii {
        dissect::Hex::XAscii
    } else if a.ascii {
        dissect::Hex::Ascii
    } else {
        dissect::Hex::None
    };
    Ok(dissect::PrintOptions {
        numeric: true,
        link: a.link,
        time,
        verbose: a.verbose,
        hex,
    })
}

/// A capture's link type (its header's, or for pcapng its first packet's)
/// and snapshot length (the default where the file gives none).
fn capture_link(path: &std::path::Path) -> Result<(u32, u32), String> {
    let mut src = capture::PcapSource::open(path).map_err(|e| e.to_string())?;
    let linktype = match src.linktype() {
        Some(lt) => lt,
        // pcapng: the interface of the first packet.
        None => match src.next_raw() {
            Some(Ok(f)) => f.linktype,
            Some(Err(e)) => return Err(e.to_string()),
            None => {
                return Err(format!(
                    "{}: no packet to take a link type from",
                    path.display()
                ));
            }
        },
    };
    let snaplen = src
        .snaplen()
        .filter(|&s| s > 0)
        .unwrap_or(cbpf::DEFAULT_SNAPLEN);
    Ok((linktype, snaplen))
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let expr = a.expr.join(" ");
    if a.dump > 0 {
        // With a capture, as `tcpdump -r F -d`: its link type and snapshot
        // length.
        let (lt, snaplen) = match &a.read {
            Some(path) => capture_link(path)?,
            None => (
                capture::linktype_from_name(&a.linktype).map_err(|e| e.to_string())?,
                a.snaplen,
            ),
        };
        let prog = cbpf::compile_expr(&expr, lt, snaplen).map_err(|e| format!("{expr}: {e}"))?;
        out_part!(
            "{}",
            match a.dump {
                1 => cbpf::image(&prog),
                2 => cbpf::image_c(&prog),
                _ => cbpf::image_decimal(&prog),
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let Some(input) = &a.read else {
        return Err("give a capture to read (-r FILE), or -d/-dd/-ddd to print the program".into());
    };
    if a.count == Some(0) {
        // As tcpdump: `-c 0` would stop before the first packet.
        return Err("invalid packet count 0 (-c takes 1 or more)".into());
    }
    crate::report::outputs_on_stdout([a.write.as_deref()])?;
    let mut spec =
        engine::FilterRunSpec::new(expr.clone(), engine::SourceSpec::capture(input).origin);
    spec.write = a.write.clone();
    spec.count = a.count;
    spec.engine = match a.engine {
        EngineArg::Interp => engine::FilterEngineKind::Interp,
        EngineArg::Jit => engine::FilterEngineKind::Jit,
        EngineArg::EbpfJit => engine::FilterEngineKind::EbpfJit,
        EngineArg::Kernel => engine::FilterEngineKind::Kernel,
    };
    // Without -w (or JSON), a line per matching packet on standard output,
    // as tcpdump prints them; the counts then go to standard error.
    let lines = a.write.is_none() && !a.json;
    if lines {
        crate::report::reports_to_stderr();
    }
    let mut printer = dissect::Printer::new(print_options(&a)?);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut write_error = None;
    let mut print = |m: &cbpf::Matched| {
        use std::io::Write;
        if lines && write_error.is_none() {
            let line = printer.line(m.data, m.orig_len, m.linktype, m.timestamp_ns);
            if let Err(e) = writeln!(out, "{}", crate::terminal::escape(&line)) {
                write_error = Some(e);
            }
        }
    };
    // Ctrl-C or SIGTERM: stop reading, finish the output, report.
    let stop = Some(crate::signals::stop_on_signals());
    let report = spec.run_each(stop, &mut print).map_err(|e| match e {
        // The interpreter runs any program libpcap compiles (as
        // libpcap's bpf_filter: no length limit, backward jumps).
        engine::Error::FilterRun(cbpf::FilterError::Engine { .. }) => {
            format!("{e} (`--engine interp` runs it)")
        }
        e => e.to_string(),
    });
    {
        use std::io::Write;
        let flushed = out.flush();
        if let Some(e) = write_error.or(flushed.err()) {
            return Err(format!(
                "writing standard output: {}",
                crate::report::io_cause(&e)
            ));
        }
    }
    let report = report?;
    if a.json {
        print_json(&report)?;
    } else {
        let mut text = format!(
            "{} packets read, {} matched `{}` ({} engine){}\n",
            report.read,
            report.matched,
            report.expression,
            report.engine,
            report
                .written
                .as_ref()
                .map(|w| format!(", written to {w}"))
                .unwrap_or_default()
        );
        for (why, n) in &report.interpreter_reasons {
            text += &format!("{n} packets decided by the interpreter: {why}\n");
        }
        if report.stopped {
            text += "stopped by a signal\n";
        }
        crate::report::print_text(&text)?;
    }
    // As tcpdump: the packets before a cut or corrupt record are filtered
    // and written, and the exit status is 1.
    Ok(crate::report::input_ended(
        report.capture_error.as_deref(),
        report.read,
        false,
    ))
}
