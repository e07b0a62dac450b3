//! Finding clang and compiling the generated C, as crates/programs'
//! build script does: `SLUICE_CLANG`, else `clang-19`, else `clang`;
//! `-O2 -g -target bpf -mcpu=v3`.

use std::process::Command;

/// The clang to use, or an error naming what is missing.
pub fn clang() -> Result<String, String> {
    if let Ok(c) = std::env::var("SLUICE_CLANG") {
        return Ok(c);
    }
    for c in ["clang-19", "clang"] {
        if Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Ok(c.to_string());
        }
    }
    Err("no clang: tc compile needs clang-19 (or clang, or SLUICE_CLANG) on PATH to build the object; --emit-c still writes the C".into())
}

/// Compiles C source into an eBPF ELF object.
pub fn compile_c(source: &str) -> Result<Vec<u8>, String> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let clang = clang()?;
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sluice-tccompile-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (src, out) = (dir.join("tc.c"), dir.join("tc.o"));
    let result = (|| {
        std::fs::write(&src, source).map_err(|e| format!("{}: {e}", src.display()))?;
        let o = Command::new(&clang)
            .args(["-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-c"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .output()
            .map_err(|e| format!("running {clang}: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "{clang} failed on the generated C:\n{}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        std::fs::read(&out).map_err(|e| format!("{}: {e}", out.display()))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}
