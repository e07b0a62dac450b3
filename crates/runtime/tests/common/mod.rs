//! Building test programs from C source with clang, as the examples are.

/// Compiles `source` (C, `-target bpf`) to an object's bytes.
pub fn compile(name: &str, source: &str) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("sluice-runtime-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, out) = (dir.join(format!("{name}.c")), dir.join(format!("{name}.o")));
    std::fs::write(&src, source).unwrap();
    let clang = std::env::var("SLUICE_CLANG").unwrap_or_else(|_| "clang-19".into());
    let st = std::process::Command::new(&clang)
        .args(["-target", "bpf", "-O2", "-g", "-mcpu=v3", "-Wall", "-I"])
        .arg(programs::include_dir())
        .arg(format!(
            "-I/usr/include/{}-linux-gnu",
            std::env::consts::ARCH
        ))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{clang}: {e} (the set-up installs clang-19)"));
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    bytes
}
