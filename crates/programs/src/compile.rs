//! Building test programs from C source with clang, as the examples are
//! built: for tests and benchmarks (a failure panics with clang's message).

/// Compiles `source` (C, with the examples' include path) with `clang`
/// and `flags` into object bytes.
pub fn compile_with(clang: &str, name: &str, source: &str, flags: &[&str]) -> Vec<u8> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sluice-test-{}-{n}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, out) = (dir.join(format!("{name}.c")), dir.join(format!("{name}.o")));
    std::fs::write(&src, source).unwrap();
    let st = std::process::Command::new(clang)
        .args(["-target", "bpf", "-g"])
        .args(flags)
        .arg("-I")
        .arg(crate::include_dir())
        .arg(format!(
            "-I/usr/include/{}-linux-gnu",
            std::env::consts::ARCH
        ))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{clang}: {e} (the set-up installs clang-14 and clang-19)"));
    assert!(
        st.status.success(),
        "{clang} {flags:?} {name}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    bytes
}

/// [`compile_with`] with clang-19, `-O2 -mcpu=v3`, warnings on.
pub fn compile(name: &str, source: &str) -> Vec<u8> {
    compile_with(
        "clang-19",
        name,
        source,
        &["-O2", "-mcpu=v3", "-Wall", "-Wno-unused-variable"],
    )
}
