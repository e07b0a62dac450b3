//! Builds the fallback CO-RE target (`btf/uapi_types.c`) with clang: the
//! Linux UAPI packet and context types as BTF, for machines whose kernel
//! has no `/sys/kernel/btf/vmlinux`.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("btf/uapi_types.c");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("uapi_types.o");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-env-changed=SLUICE_CLANG");
    let clang = std::env::var("SLUICE_CLANG").ok().unwrap_or_else(|| {
        ["clang-19", "clang"]
            .into_iter()
            .find(|c| {
                Command::new(c)
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success())
            })
            .expect("clang-19 (or clang) is needed to build the bundled BTF: run ./dev.sh setup")
            .to_string()
    });
    let status = Command::new(&clang)
        .args(["-target", "bpf", "-g", "-O2", "-c"])
        .arg(format!(
            "-I/usr/include/{}-linux-gnu",
            std::env::consts::ARCH
        ))
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("running {clang}: {e}"));
    assert!(status.success(), "{clang} failed on {}", src.display());
}
