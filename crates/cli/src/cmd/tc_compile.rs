//! `sluice tc compile`: one clsact hook of a `sluice tc` configuration
//! as an eBPF object (the `tccompile` crate; docs/tc.md, "tc compile"):
//! `sluice tc compile [--config F] [--dev DEV] [--hook ingress|egress]
//! -o OUT.o [--emit-c FILE.c] [--no-xdp] [--ifindex DEV=N]`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Compile a hook's flower/u32/matchall chains (gact, mirred actions) into one eBPF object: a tc direct-action program (section tc) and an XDP program (section xdp)
#[derive(Parser)]
#[command(name = "sluice tc compile")]
struct Args {
    /// The configuration (default: sluice tc's --config)
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The device whose hook to compile (default: the only one with a clsact qdisc)
    #[arg(long)]
    dev: Option<String>,
    /// ingress or egress
    #[arg(long, default_value = "ingress")]
    hook: String,
    /// The object to write
    #[arg(short = 'o', value_name = "OUT.o")]
    out: Option<PathBuf>,
    /// Also write the generated C
    #[arg(long, value_name = "FILE.c")]
    emit_c: Option<PathBuf>,
    /// Make the tc program only (mirror and redirect to ingress need it)
    #[arg(long)]
    no_xdp: bool,
    /// A device's interface index for mirred (DEV=N), over the configuration's
    #[arg(long, value_name = "DEV=N")]
    ifindex: Vec<String>,
}

/// Runs `sluice tc compile WORDS...`; `config` is sluice tc's `--config`,
/// read as `sluice tc` reads it (its checks on owner and mode).
pub(crate) fn run(config: &std::path::Path, words: &[String]) -> Result<ExitCode, String> {
    let a = match Args::try_parse_from(
        std::iter::once("sluice tc compile".to_string()).chain(words.iter().cloned()),
    ) {
        Ok(a) => a,
        // --help is an answer, not an error: on stdout, exit 0.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
            out_part!("{e}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.to_string()),
    };
    let path = a.config.as_deref().unwrap_or(config);
    let tc = tc::Config::load_saved(path).map_err(|e| e.to_string())?;
    let hook = match a.hook.as_str() {
        "ingress" => tc::ClsactHook::Ingress,
        "egress" => tc::ClsactHook::Egress,
        h => return Err(format!("--hook {h}: ingress or egress")),
    };
    let dev = match a.dev {
        Some(d) => d,
        None => {
            let devs: Vec<&str> = tc.qdiscs().map(|(d, _)| d).collect();
            match devs.as_slice() {
                [d] => d.to_string(),
                [] => return Err(format!("{}: no device has a clsact qdisc", path.display())),
                _ => {
                    return Err(format!(
                        "give --dev: {} have clsact qdiscs",
                        devs.join(", ")
                    ));
                }
            }
        }
    };
    if tc.clsact(&dev).is_none() {
        return Err(format!("{}: {dev} has no clsact qdisc", path.display()));
    }
    let mut opts = tccompile::CompileOptions {
        xdp: !a.no_xdp,
        ..tccompile::CompileOptions::default()
    };
    for i in &a.ifindex {
        let (d, n) = i
            .split_once('=')
            .and_then(|(d, n)| Some((d, n.parse::<u32>().ok()?)))
            .ok_or_else(|| format!("--ifindex {i}: DEV=N"))?;
        opts.ifindex.insert(d.to_string(), n);
    }
    let (c, manifest) = tccompile::generate(&tc, &dev, hook, &opts)
        .map_err(|r| format!("{dev} {}: not compiled:\n{r}", hook.name()))?;
    if let Some(f) = &a.emit_c {
        std::fs::write(f, &c).map_err(|e| format!("{}: {e}", f.display()))?;
        out!("wrote the C to {}", f.display());
    }
    let Some(out) = &a.out else {
        if a.emit_c.is_none() {
            return Err("give -o OUT.o (and/or --emit-c FILE.c)".into());
        }
        return Ok(ExitCode::SUCCESS);
    };
    let object = tccompile::compile_c(&c).map_err(|e| e.to_string())?;
    std::fs::write(out, &object).map_err(|e| format!("{}: {e}", out.display()))?;
    let chains = tc
        .clsact(&dev)
        .map(|q| match hook {
            tc::ClsactHook::Ingress => q.ingress.chains().count(),
            tc::ClsactHook::Egress => q.egress.chains().count(),
        })
        .unwrap_or(0);
    out!(
        "compiled {dev} {}: {} rule(s) in {chains} chain(s), {} action(s) -> {} (sections: tc{})",
        hook.name(),
        manifest.rules.len(),
        manifest.actions.len(),
        out.display(),
        if opts.xdp { ", xdp" } else { "" }
    );
    out_part!("{}", manifest.describe());
    out!("load it:");
    out!(
        "  tc qdisc add dev {dev} clsact; tc filter add dev {dev} {} bpf da obj {} sec tc",
        hook.name(),
        out.display()
    );
    if opts.xdp {
        out!("  ip link set dev {dev} xdp obj {} sec xdp", out.display());
    }
    out!(
        "counters: maps {} and {} (bpftool map dump name {}), slots as listed above",
        tccompile::RULE_MAP,
        tccompile::ACTION_MAP,
        tccompile::RULE_MAP
    );
    Ok(ExitCode::SUCCESS)
}
