//! `sluice xpf`: xPF programs (classic BPF with persistent memory, bank
//! switching, indexed memory and bounded loops; docs/xpf.md): assemble
//! and check them, and run them over a capture or generated traffic on any
//! engine, printing the instance's memory.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ::xpf::{XpfEngine, XpfRunOptions, XpfRunner, run_xpf};
use cbpf::xpf::{self, Form, Switch, XpfOptions};
use engine::SourceSpec;
use serde::Serialize;

use crate::report::print_json;

/// xPF: classic BPF with persistent memory and bounded loops (docs/xpf.md)
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Assemble and check an xPF program; print it as `tcpdump -d` would, or write its bytes
    Asm(AsmArgs),
    /// Run an xPF program over packets and print its persistent memory
    Run(RunArgs),
    /// Attach an xPF program to an interface as XDP, its memory pinned in bpffs (needs root)
    Load(LoadArgs),
    /// Read, write, allocate and switch the memory of a loaded instance, while it runs (needs root)
    Mem(MemArgs),
    /// Detach a loaded instance and remove its pins (needs root)
    Unload {
        /// The instance's bpffs directory (`load --pin`)
        dir: PathBuf,
    },
}

#[derive(clap::Args)]
struct LoadArgs {
    /// The program: xPF assembly, or its bytes
    file: PathBuf,
    /// The interface whose received frames it filters (XDP; a frame it returns 0 for is dropped)
    #[arg(long, value_name = "IF")]
    dev: String,
    /// bpffs directory for the program and its memory maps
    #[arg(long, value_name = "DIR")]
    pin: PathBuf,
    /// XDP mode: native (in the driver) or skb (generic, any device)
    #[arg(long, value_enum, default_value_t = ModeArg::Native)]
    mode: ModeArg,
    #[command(flatten)]
    instance: InstanceArgs,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum ModeArg {
    Native,
    Skb,
}

#[derive(clap::Args)]
struct MemArgs {
    /// The instance's bpffs directory (`load --pin`)
    dir: PathBuf,
    #[command(subcommand)]
    op: MemOp,
}

#[derive(clap::Subcommand)]
enum MemOp {
    /// Every allocated block's words (the nonzero ones), the active one marked
    Show {
        /// Every word, not only the nonzero ones
        #[arg(long)]
        all_words: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Words of a block (mread)
    Read {
        block: u32,
        /// First word
        #[arg(long, default_value_t = 0)]
        at: u32,
        /// Number of words (default: to the end of the block)
        #[arg(long)]
        count: Option<u32>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Write words into a block from word AT (mwrite)
    Write {
        block: u32,
        at: u32,
        #[arg(required = true)]
        values: Vec<u32>,
    },
    /// Allocate a zeroed block; prints its handle (malloc)
    Malloc,
    /// Give a block back; not the active one
    Free { block: u32 },
    /// Make a block active, kept, zeroed or a copy of the active one; prints the block that was (mswitch)
    Switch {
        block: u32,
        #[arg(value_enum)]
        how: SwitchArg,
    },
}

/// The instance an xPF program runs in.
#[derive(clap::Args, Clone, Copy)]
struct InstanceArgs {
    /// 32-bit words in each persistent block
    #[arg(long, default_value_t = XpfOptions::default().words)]
    words: u32,
    /// Persistent blocks the instance may own
    #[arg(long, default_value_t = XpfOptions::default().blocks)]
    blocks: u32,
    /// Body instructions a packet may run before the exception handler takes over
    #[arg(long, default_value_t = XpfOptions::default().budget)]
    budget: u32,
}

impl InstanceArgs {
    fn options(&self) -> XpfOptions {
        XpfOptions {
            words: self.words,
            blocks: self.blocks,
            budget: self.budget,
        }
    }
}

#[derive(clap::Args)]
struct AsmArgs {
    /// The program: xPF assembly (bpf_asm syntax plus bss, bsp, exc, M[x + k], ja back)
    file: PathBuf,
    /// Write the program's bytes (struct sock_filter, 8 per instruction) here
    #[arg(short = 'o', long)]
    output: Option<PathBuf>,
    /// Print the program as decimal `code jt jf k` lines (as tcpdump -ddd) instead of mnemonics
    #[arg(long)]
    decimal: bool,
    #[command(flatten)]
    instance: InstanceArgs,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum EngineArg {
    /// The xPF interpreter
    Interp,
    /// The eBPF translation in sluice's VM interpreter
    Vm,
    /// The eBPF translation in sluice's JIT, after sluice's verifier
    Jit,
    /// The eBPF translation in the kernel, each packet through BPF_PROG_TEST_RUN (needs root)
    Kernel,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum FormArg {
    /// A tc classifier with ld_abs; the result is the filter's value
    Socket,
    /// An XDP program reading the frame directly; XDP_PASS or XDP_DROP
    Xdp,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum SwitchArg {
    Keep,
    Zero,
    Copy,
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["pcap", "gen"])))]
struct RunArgs {
    /// The program: xPF assembly, or its bytes (struct sock_filter)
    file: PathBuf,
    /// Capture to read (pcap or pcapng): a file, a FIFO, or - for standard input
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Generated traffic, e.g. udp,flows=100,count=10000 (repeat to mix streams)
    #[arg(long)]
    r#gen: Vec<String>,
    /// Where the program runs
    #[arg(long, value_enum, default_value_t = EngineArg::Interp)]
    engine: EngineArg,
    /// Form of the eBPF translation (engines vm, jit, kernel)
    #[arg(long, value_enum, default_value_t = FormArg::Socket)]
    form: FormArg,
    /// Stop after this many packets
    #[arg(short = 'c', long = "count", value_name = "N")]
    count: Option<u64>,
    /// Every N packets, switch to a spare block (double buffering) and print the retired one
    #[arg(long, value_name = "N")]
    switch_every: Option<u64>,
    /// How the spare block is prepared at each switch
    #[arg(long, value_enum, default_value_t = SwitchArg::Zero, requires = "switch_every")]
    switch_mode: SwitchArg,
    /// Print every word of each block, not only the nonzero ones
    #[arg(long)]
    all_words: bool,
    /// Print JSON
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    instance: InstanceArgs,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    match a.command {
        Command::Asm(a) => asm(a),
        Command::Run(a) => run_program(a),
        Command::Load(a) => load(a),
        Command::Mem(a) => mem(a),
        Command::Unload { dir } => {
            let devs = ::xpf::xpf_detach(&dir).map_err(|e| e.to_string())?;
            out!(
                "{}: unloaded{}",
                dir.display(),
                if devs.is_empty() {
                    String::new()
                } else {
                    format!(", detached from {}", devs.join(", "))
                }
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn load(a: LoadArgs) -> Result<ExitCode, String> {
    let prog = read_program(&a.file)?;
    let mode = match a.mode {
        ModeArg::Native => kernel::attach::XdpMode::Native,
        ModeArg::Skb => kernel::attach::XdpMode::Skb,
    };
    let opts = a.instance.options();
    ::xpf::xpf_attach(&prog, opts, &a.dev, mode, &a.pin)
        .map_err(|e| format!("{}: {e}", a.file.display()))?;
    out!(
        "{} attached to {} ({} blocks of {} words, budget {}); memory in {}",
        a.file.display(),
        a.dev,
        opts.blocks,
        opts.words,
        opts.budget,
        a.pin.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn switch_mode(s: SwitchArg) -> Switch {
    match s {
        SwitchArg::Keep => Switch::Keep,
        SwitchArg::Zero => Switch::Zero,
        SwitchArg::Copy => Switch::Copy,
    }
}

#[derive(Serialize)]
struct Shown {
    words_per_block: u32,
    blocks: Vec<Block>,
}

fn mem(a: MemArgs) -> Result<ExitCode, String> {
    let mut m = ::xpf::xpf_open(&a.dir).map_err(|e| e.to_string())?;
    let words = m.words();
    match a.op {
        MemOp::Show { all_words, json } => {
            let active = m.active();
            let mut blocks = Vec::new();
            for h in m.handles() {
                let w = m.mread(h, 0, words as usize).map_err(|e| e.to_string())?;
                blocks.push(Block {
                    block: h.0,
                    active: h == active,
                    words: listed(&w, all_words),
                });
            }
            let shown = Shown {
                words_per_block: words,
                blocks,
            };
            if json {
                print_json(&shown)?;
            } else {
                for b in &shown.blocks {
                    out!(
                        "block {}{} ({words} words):",
                        b.block,
                        if b.active { " (active)" } else { "" }
                    );
                    print_words(&b.words);
                }
            }
        }
        MemOp::Read {
            block,
            at,
            count,
            json,
        } => {
            let n = count.unwrap_or(words.saturating_sub(at));
            let w = m
                .mread(xpf::Handle(block), at, n as usize)
                .map_err(|e| e.to_string())?;
            if json {
                print_json(&w)?;
            } else {
                let listed: Vec<(u32, u32)> = w
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (at + i as u32, *v))
                    .collect();
                print_words(&listed);
            }
        }
        MemOp::Write { block, at, values } => {
            m.mwrite(xpf::Handle(block), at, &values)
                .map_err(|e| e.to_string())?;
        }
        MemOp::Malloc => out!("{}", m.malloc().map_err(|e| e.to_string())?),
        MemOp::Free { block } => m.free(xpf::Handle(block)).map_err(|e| e.to_string())?,
        MemOp::Switch { block, how } => {
            let old = m
                .mswitch(xpf::Handle(block), switch_mode(how))
                .map_err(|e| e.to_string())?;
            out!("{old}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The program in `path`: assembly text, or `struct sock_filter` bytes.
fn read_program(path: &Path) -> Result<Vec<cbpf::Insn>, String> {
    let bytes = crate::files::object(path)?;
    let name = path.display();
    match std::str::from_utf8(&bytes) {
        Ok(text) if !text.contains('\0') => xpf::assemble(text).map_err(|e| format!("{name}: {e}")),
        _ => cbpf::decode(&bytes).map_err(|e| format!("{name}: {e}")),
    }
}

fn asm(a: AsmArgs) -> Result<ExitCode, String> {
    let prog = read_program(&a.file)?;
    xpf::check(&prog, &a.instance.options()).map_err(|e| format!("{}: {e}", a.file.display()))?;
    if let Some(out) = &a.output {
        std::fs::write(out, cbpf::encode(&prog)).map_err(|e| format!("{}: {e}", out.display()))?;
        say!(
            "{}: {} instructions, {} bytes",
            out.display(),
            prog.len(),
            prog.len() * 8
        );
    } else if a.decimal {
        out_part!("{}", cbpf::image_decimal(&prog));
    } else {
        out_part!("{}", xpf::image(&prog));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct Block {
    block: u32,
    active: bool,
    /// `[word, value]` pairs (the nonzero ones unless every word was asked).
    words: Vec<(u32, u32)>,
}

#[derive(Serialize)]
struct Retired {
    after_packets: u64,
    block: u32,
    words: Vec<(u32, u32)>,
}

#[derive(Serialize)]
struct Report {
    program: String,
    engine: &'static str,
    form: &'static str,
    packets: u64,
    accepted: u64,
    /// Frames the engine could not run (the kernel's test run refuses
    /// them): not run, not counted in `packets`.
    #[serde(skip_serializing_if = "is_zero")]
    refused: u64,
    /// Packets over budget (the interpreter counts them).
    #[serde(skip_serializing_if = "Option::is_none")]
    exceptions: Option<u64>,
    words_per_block: u32,
    blocks: Vec<Block>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    retired: Vec<Retired>,
    /// Stopped by SIGINT or SIGTERM (the packets read before it all ran).
    stopped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_error: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn listed(words: &[u32], all: bool) -> Vec<(u32, u32)> {
    words
        .iter()
        .enumerate()
        .filter(|(_, w)| all || **w != 0)
        .map(|(i, w)| (i as u32, *w))
        .collect()
}

fn run_program(a: RunArgs) -> Result<ExitCode, String> {
    let prog = read_program(&a.file)?;
    let (engine, engine_name) = match a.engine {
        EngineArg::Interp => (XpfEngine::Interp, "interp"),
        EngineArg::Vm => (XpfEngine::Vm, "vm"),
        EngineArg::Jit => (XpfEngine::Jit, "jit"),
        EngineArg::Kernel => (XpfEngine::Kernel, "kernel"),
    };
    let (form, form_name) = match a.form {
        FormArg::Socket => (Form::Socket, "socket"),
        FormArg::Xdp => (Form::Xdp, "xdp"),
    };
    let mut runner = XpfRunner::new(&prog, a.instance.options(), engine, form)
        .map_err(|e| format!("{}: {e}", a.file.display()))?;
    let spec = match &a.pcap {
        Some(path) => SourceSpec::capture(path),
        None => SourceSpec::generated(a.r#gen.clone()),
    };
    // Ctrl-C or SIGTERM: the capture (or the generated traffic) ends after
    // what was read; the memory blocks are reported as they are.
    let mut source = spec
        .open(Some(crate::signals::stop_on_signals()))
        .map_err(|e| e.to_string())?;
    let how = switch_mode(a.switch_mode);
    let opts = XpfRunOptions {
        limit: a.count,
        switch_every: a.switch_every.map(|n| (n, how)),
    };
    let summary = run_xpf(&mut runner, source.as_mut(), &opts).map_err(|e| e.to_string())?;
    crate::report::warn_skipped(&engine::Skipped::of(source.as_ref()), "");
    let mem = runner.memory();
    let active = mem.active();
    let mut blocks = Vec::new();
    for h in mem.handles() {
        let words = mem
            .mread(h, 0, mem.words() as usize)
            .map_err(|e| e.to_string())?;
        blocks.push(Block {
            block: h.0,
            active: h == active,
            words: listed(&words, a.all_words),
        });
    }
    let report = Report {
        program: a.file.display().to_string(),
        engine: engine_name,
        form: form_name,
        packets: summary.packets,
        accepted: summary.accepted,
        refused: summary.refused,
        exceptions: summary.exceptions,
        words_per_block: mem.words(),
        blocks,
        retired: summary
            .retired
            .iter()
            .map(|r| Retired {
                after_packets: r.after,
                block: r.block.0,
                words: listed(&r.words, a.all_words),
            })
            .collect(),
        stopped: crate::signals::stop_requested(),
        source_error: summary.source_error,
    };
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(crate::report::input_ended(
        report.source_error.as_deref(),
        report.packets,
        false,
    ))
}

fn print_words(words: &[(u32, u32)]) {
    if words.is_empty() {
        out!("    (all zero)");
        return;
    }
    out!("    {:>8}  {:>10}  {:>10}", "word", "value", "hex");
    for (i, w) in words {
        out!("    {i:>8}  {w:>10}  {:#010x}", w);
    }
}

fn print_text(r: &Report) {
    let exceptions = r
        .exceptions
        .map_or(String::new(), |n| format!(", {n} over budget"));
    out!(
        "{}: {} packets, {} accepted{exceptions} ({} engine, {} form)",
        r.program,
        r.packets,
        r.accepted,
        r.engine,
        r.form
    );
    if r.refused > 0 {
        say!(
            "sluice: {} frames the kernel's test run refuses (under 14 bytes, over a page, or an IP header cut short) were not run",
            r.refused
        );
    }
    for t in &r.retired {
        out!(
            "block {} retired after packet {}:",
            t.block,
            t.after_packets
        );
        print_words(&t.words);
    }
    for b in &r.blocks {
        out!(
            "block {}{} ({} words):",
            b.block,
            if b.active { " (active)" } else { "" },
            r.words_per_block
        );
        print_words(&b.words);
    }
    if r.stopped {
        say!("sluice: stopped by a signal after {} packets", r.packets);
    }
}
