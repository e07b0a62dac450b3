use std::path::PathBuf;
use std::process::ExitCode;

/// Assemble FILE.s into raw little-endian bytecode.
#[derive(clap::Args)]
pub struct Args {
    /// Assembly source (conformance-suite syntax, e.g. `mov32 %r0, 0`)
    file: PathBuf,
    /// Output file [default: FILE with the extension .bin]
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let text = crate::files::text(&a.file)?;
    let insns = isa::assemble(&text).map_err(|e| format!("{}: {e}", a.file.display()))?;
    let out = a.output.unwrap_or_else(|| a.file.with_extension("bin"));
    let bytes = isa::encode(&insns);
    std::fs::write(&out, &bytes).map_err(|e| format!("{}: {e}", out.display()))?;
    say!(
        "{}: {} instructions, {} bytes",
        out.display(),
        insns.len(),
        bytes.len()
    );
    Ok(ExitCode::SUCCESS)
}
