//! The `sluice` command: a thin layer over the crates.

#[macro_use]
mod terminal;
mod args;
mod cmd;
mod contents;
mod files;
mod hooks;
mod input;
mod out_table;
mod plotfont;
mod progress;
mod report;
mod settings;
mod signals;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// sluice: write an eBPF packet program once; verify, replay, profile and run it.
#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about,
    propagate_version = true,
    after_help = "Environment:\n  SLUICE_MAX_FILE_SIZE=BYTES  the largest file read whole (objects, flows, routes, tc \
                  configurations: 256 MiB by default; 64K, 512M, 1G); devices such as /dev/zero are refused"
)]
struct Cli {
    /// Run in this network namespace (a name from `ip netns`, or a path), like `ip -n`
    #[arg(long, global = true, value_name = "NAME")]
    netns: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Assemble a text program into raw bytecode
    Asm(cmd::asm::Args),
    /// Disassemble raw bytecode or an ELF object into assembly text
    Disasm(cmd::disasm::Args),
    /// Run packets (a capture, generated traffic or a live interface) through a program in the VM or JIT, or through a tc configuration: verdicts, costs, maps
    Run(Box<cmd::run::Args>),
    /// Filter a capture with a tcpdump expression (classic BPF in the interpreter, JIT or kernel) and print or write the matches, or print its program
    Filter(cmd::filter::Args),
    /// In-filter monitoring: flow accounting (IPFIX export), trajectory sampling, passive RTT; by sluice's table, an eBPF or an xPF program, over captures or live
    Monitor(cmd::monitor::Args),
    /// tc command lines (clsact; u32, flower, matchall, bpf; gact, mirred, police, skbedit, pedit, vlan, csum) against a sluice configuration file; tc compile makes a hook one eBPF object
    Tc(cmd::tc::Args),
    /// An OpenFlow 1.3 switch with Open vSwitch's caches, on interfaces (AF_XDP, AF_PACKET; needs root) or capture ports; stats and dump-flows ask a running one
    Switch(cmd::switch::Args),
    /// xPF: classic BPF with persistent memory and bounded loops: assemble, run over packets, load onto an interface and work on its memory while it runs
    Xpf(cmd::xpf::Args),
    /// Capture frames from an interface through a tcpdump expression the kernel runs (needs root)
    Capture(cmd::capture::Args),
    /// Plan captures as shards (whole small files, byte ranges of large ones) and check that the ranges read every record once
    Shards(cmd::shards::Args),
    /// Check that programs are safe, as the kernel's verifier would, and explain why not
    Verify(cmd::verify::Args),
    /// Compare the VM with the kernel packet by packet (BPF_PROG_TEST_RUN), or a tc configuration with the real tc (needs root)
    Diff(cmd::diff::Args),
    /// Load an object into the kernel and pin its programs and maps (needs root)
    Load(cmd::kernel::LoadArgs),
    /// Attach a program to an interface: XDP or tc (needs root)
    Attach(cmd::kernel::AttachArgs),
    /// Detach sluice's program from an interface (needs root)
    Detach(cmd::kernel::DetachArgs),
    /// Show what is attached to every interface (needs root)
    Status(cmd::kernel::StatusArgs),
    /// Dump, update or delete the entries of maps pinned in bpffs (needs root)
    Map(cmd::kernel::MapArgs),
    /// Send generated traffic out of an interface: XDP live frames or AF_PACKET (needs root)
    Gen(cmd::trafficgen::Args),
    /// AF_XDP datapath benchmarks on an interface: rxdrop, txonly, l2fwd (needs root)
    Xsk(cmd::xsk::Args),
    /// Run an XDP program or a tc configuration in user space on AF_XDP ports; the datapath carries out the verdicts (needs root)
    Datapath(cmd::datapath::Args),
    /// Per-packet cost of a program (instructions, branches, helper calls, memory accesses), its linear model and the delay it predicts
    Profile(cmd::profile::Args),
    /// The paper's network in simulation: a flow's RTT and throughput with and without the router's processing delay
    Sim(cmd::sim::Args),
    /// Run a program once in the interpreter and report r0 and its cost
    Exec(cmd::exec::Args),
    /// ns per packet in sluice's interpreter and JIT beside the kernel and rbpf; bench tc: the tc classifiers by rule count
    Bench(cmd::bench::Args),
    /// Run the DDoS filter example over generated traffic (no root needed)
    Demo(cmd::demo::Args),
    /// Run the BPF ISA conformance suite through the interpreter or the JIT
    Conformance(cmd::conformance::SuiteArgs),
    /// Speak the bpf_conformance plugin protocol (program as hex on stdin)
    #[command(name = "conformance-plugin")]
    ConformancePlugin(cmd::conformance::PluginArgs),
}

/// `println!` panics when stdout cannot be written (a full disk, `>
/// /dev/full`); the commands that print through it then end with one line
/// saying so and exit status 1, as for any error, not a panic's report.
fn stdout_errors_are_errors() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        match msg.strip_prefix("failed printing to stdout: ") {
            Some(cause) => {
                let cause = cause.split(" (os error").next().unwrap_or(cause);
                say!("sluice: writing standard output: {cause}");
                std::process::exit(1);
            }
            None => default(info),
        }
    }));
}

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`sluice ... | head`), as C tools do.
    // SAFETY: setting a signal disposition before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    stdout_errors_are_errors();
    let cli = Cli::parse();
    if let Some(ns) = &cli.netns
        && let Err(e) = kernel::netdev::enter_netns(ns)
    {
        say!("sluice: {e}");
        return ExitCode::FAILURE;
    }
    let result = match cli.command {
        Command::Asm(a) => cmd::asm::run(a),
        Command::Disasm(a) => cmd::disasm::run(a),
        Command::Run(a) => cmd::run::run(*a),
        Command::Filter(a) => cmd::filter::run(a),
        Command::Capture(a) => cmd::capture::run(a),
        Command::Shards(a) => cmd::shards::run(a),
        Command::Xpf(a) => cmd::xpf::run(a),
        Command::Monitor(a) => cmd::monitor::run(a),
        Command::Tc(a) => cmd::tc::run(a),
        Command::Switch(a) => cmd::switch::run(a),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Diff(a) => cmd::diff::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Load(a) => cmd::kernel::load(a),
        Command::Attach(a) => cmd::kernel::attach(a),
        Command::Detach(a) => cmd::kernel::detach(a),
        Command::Status(a) => cmd::kernel::status(a),
        Command::Map(a) => cmd::kernel::map(a),
        Command::Gen(a) => cmd::trafficgen::run(a),
        Command::Xsk(a) => cmd::xsk::run(a),
        Command::Datapath(a) => cmd::datapath::run(a),
        Command::Exec(a) => cmd::exec::run(a),
        Command::Profile(a) => cmd::profile::run(a),
        Command::Sim(a) => cmd::sim::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Conformance(a) => cmd::conformance::run_suite(a),
        Command::ConformancePlugin(a) => cmd::conformance::run_plugin(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            say!("sluice: {e}");
            ExitCode::FAILURE
        }
    }
}
