//! Assembles files to raw bytecode: `asm2bin OUT_DIR FILE.s...` writes
//! `OUT_DIR/FILE` (the name without `.s`) for each file that assembles and
//! skips the others. `./dev.sh fuzz` seeds the bytecode fuzz targets with
//! it from the conformance suite's programs.

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((out, files)) = args.split_first() else {
        eprintln!("usage: asm2bin OUT_DIR FILE.s...");
        std::process::exit(2);
    };
    std::fs::create_dir_all(out).expect("the output directory");
    let mut written = 0;
    for f in files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let Ok(insns) = isa::assemble(&text) else {
            continue;
        };
        let stem = Path::new(f).file_stem().unwrap_or_default();
        std::fs::write(Path::new(out).join(stem), isa::encode(&insns)).expect("write");
        written += 1;
    }
    println!("{written} of {} assembled", files.len());
}
