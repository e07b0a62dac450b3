//! Finding clang and compiling the generated C, as crates/programs'
//! build script does: `SLUICE_CLANG`, else `clang-19`, else `clang`;
//! `-O2 -g -target bpf -mcpu=v3`.

use std::path::PathBuf;
use std::process::Command;

/// Why the generated C was not compiled.
#[derive(Debug, thiserror::Error)]
pub enum ClangError {
    #[error(
        "no clang: tc compile needs clang-19 (or clang, or SLUICE_CLANG) on PATH to build the object; --emit-c still writes the C"
    )]
    NoClang,
    /// A temporary file or directory could not be made, written or read.
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `clang` could not be started.
    #[error("running {clang}: {source}")]
    Run {
        clang: String,
        source: std::io::Error,
    },
    /// `clang` refused the C; `stderr` is what it said.
    #[error("{clang} failed on the generated C:\n{stderr}")]
    Failed { clang: String, stderr: String },
}

/// The clang to use, or an error naming what is missing.
pub fn clang() -> Result<String, ClangError> {
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
    Err(ClangError::NoClang)
}

/// Compiles C source into an eBPF ELF object.
pub fn compile_c(source: &str) -> Result<Vec<u8>, ClangError> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let clang = clang()?;
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sluice-tccompile-{}-{n}", std::process::id()));
    let file = |path: &PathBuf| {
        let path = path.clone();
        move |source| ClangError::File { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(file(&dir))?;
    let (src, out) = (dir.join("tc.c"), dir.join("tc.o"));
    let result = (|| {
        std::fs::write(&src, source).map_err(file(&src))?;
        let o = Command::new(&clang)
            .args(["-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-c"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .output()
            .map_err(|source| ClangError::Run {
                clang: clang.clone(),
                source,
            })?;
        if !o.status.success() {
            return Err(ClangError::Failed {
                clang: clang.clone(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            });
        }
        std::fs::read(&out).map_err(file(&out))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_clang_and_the_file() {
        let e = ClangError::Failed {
            clang: "clang-19".into(),
            stderr: "tc.c:1: error".into(),
        };
        assert_eq!(
            e.to_string(),
            "clang-19 failed on the generated C:\ntc.c:1: error"
        );
        let e = ClangError::File {
            path: "/nowhere/tc.c".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert!(e.to_string().starts_with("/nowhere/tc.c: "), "{e}");
        assert!(ClangError::NoClang.to_string().starts_with("no clang: "));
    }
}
