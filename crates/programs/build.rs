//! Compiles `programs/*.c` (the examples), `programs/tools/*.c` (the
//! programs sluice's own tools load, such as `sluice gen`'s frame source)
//! and `programs/probes/*.c` (context probes for differential tests)
//! with clang for `-target bpf`, into OUT_DIR (for `include_bytes!`) and
//! into `target/bpf/<name>.o` (for scripts and docs).

use std::path::{Path, PathBuf};
use std::process::Command;

fn clang() -> String {
    for c in ["clang-19", "clang"] {
        if Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return c.to_string();
        }
    }
    panic!("clang-19 (or clang) is needed to build the example programs: run ./dev.sh setup");
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../programs");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    // OUT_DIR is <target>/<profile>/build/programs-<hash>/out.
    let target_bpf = out.ancestors().nth(4).map(|t| t.join("bpf"));
    println!("cargo:rerun-if-changed={}", root.display());
    println!("cargo:rerun-if-env-changed=SLUICE_CLANG");
    let clang = std::env::var("SLUICE_CLANG").unwrap_or_else(|_| clang());
    let multiarch = format!("/usr/include/{}-linux-gnu", std::env::consts::ARCH);

    let mut table = String::new();
    for (dir, constant, what) in [
        (root.clone(), "PROGRAMS", "Every example program"),
        (
            root.join("tools"),
            "TOOLS",
            "The programs of sluice's tools",
        ),
        (
            root.join("probes"),
            "PROBES",
            "Programs that read every context field (for differential tests)",
        ),
    ] {
        println!("cargo:rerun-if-changed={}", dir.display());
        table.push_str(&format!(
            "/// {what}: name, object bytes, C source.\npub const {constant}: &[(&str, &[u8], &str)] = &[\n"
        ));
        for name in sources(&dir) {
            let src = dir.join(format!("{name}.c"));
            let obj = out.join(format!("{name}.o"));
            let status = Command::new(&clang)
                .args([
                    "-target", "bpf", "-O2", "-g", "-mcpu=v3", "-Wall", "-Werror",
                ])
                .arg("-I")
                .arg(root.join("include"))
                .arg("-I")
                .arg(&multiarch)
                .arg("-c")
                .arg(&src)
                .arg("-o")
                .arg(&obj)
                .status()
                .unwrap_or_else(|e| panic!("running {clang}: {e}"));
            assert!(status.success(), "{clang} failed on {}", src.display());
            if let Some(dir) = &target_bpf {
                std::fs::create_dir_all(dir).unwrap();
                std::fs::copy(&obj, dir.join(format!("{name}.o"))).unwrap();
            }
            table.push_str(&format!(
                "    ({name:?}, include_bytes!({:?}), include_str!({:?})),\n",
                obj.display().to_string(),
                Path::new(&src)
                    .canonicalize()
                    .unwrap()
                    .display()
                    .to_string()
            ));
        }
        table.push_str("];\n");
    }
    // The xPF examples are assembly: embedded as text.
    let xpf = root.join("xpf");
    println!("cargo:rerun-if-changed={}", xpf.display());
    table.push_str("/// The xPF programs: name, assembly.\npub const XPF: &[(&str, &str)] = &[\n");
    for name in stems(&xpf, "s") {
        let src = xpf.join(format!("{name}.s")).canonicalize().unwrap();
        table.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            src.display().to_string()
        ));
    }
    table.push_str("];\n");
    std::fs::write(out.join("programs.rs"), table).unwrap();
}

/// The stems of the `.c` files in `dir`, sorted.
fn sources(dir: &Path) -> Vec<String> {
    stems(dir, "c")
}

/// The stems of the files in `dir` ending in `.ext`, sorted.
fn stems(dir: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
