//! Objects whose maps declare hundreds of megabytes, as production load
//! balancers do: a replay uses memory for the entries written, and its
//! report lists them without reading the rest.

use std::process::{Command, Stdio};

const SOURCE: &str = include_str!("programs/huge_array.c");

/// Runs `cmd` to success: its stdout and its peak resident memory in KiB.
#[allow(clippy::zombie_processes)] // reaped by `wait4`, for its resource usage
fn run_measured(cmd: &mut Command) -> (String, u64) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let out = {
        use std::io::Read;
        let mut s = String::new();
        child.stdout.unwrap().read_to_string(&mut s).unwrap();
        s
    };
    let mut status = 0;
    // SAFETY: rusage is plain data, filled in by wait4 for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a child of this process, valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{out}"
    );
    (out, usage.ru_maxrss as u64)
}

#[test]
fn a_400_mb_array_replays_in_the_memory_it_touches() {
    let obj = programs::compile::compile("huge_array", SOURCE);
    let dir = std::env::temp_dir().join(format!("sluice-huge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("huge_array.o");
    std::fs::write(&path, obj).unwrap();
    let (json, peak_kib) = run_measured(
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("run")
            .arg(&path)
            .args([
                "--gen",
                "udp,count=100,size=64",
                "--gen",
                "udp,count=3,size=1400",
            ])
            .arg("--json"),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let per_len = v["maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "per_len")
        .unwrap();
    assert_eq!(per_len["max_entries"], 50_000_000);
    // The two entries the packets' lengths pick, and nothing else.
    let entries: Vec<(String, String)> = per_len["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap().into(),
                e["value"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [("4200", "3"), ("14000192", "100")].map(|(k, v)| (k.to_string(), v.to_string()));
    assert_eq!(entries, want);
    assert_eq!(per_len["zero_entries"], 50_000_000 - 2);
    // The map's 400 MB were never committed.
    assert!(
        peak_kib < 100 * 1024,
        "peak RSS {peak_kib} KiB for a 400 MB map of which 2 entries are used"
    );
}

/// The differential run of the same object agrees with the kernel, says
/// how the huge map is compared, and never commits the map's memory.
#[test]
fn a_400_mb_array_is_diffed_by_what_changed() {
    if !testkit::kernel_available("sluice diff of a 400 MB array") {
        return;
    }
    let obj = programs::compile::compile("huge_array", SOURCE);
    let dir = std::env::temp_dir().join(format!("sluice-huge-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("huge_array.o");
    std::fs::write(&path, obj).unwrap();
    let (json, peak_kib) = run_measured(
        Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("diff")
            .arg(&path)
            .args([
                "--gen",
                "udp,count=50,size=64",
                "--gen",
                "udp,count=3,size=1400",
            ])
            .arg("--json"),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["packets"], 53, "{json}");
    assert_eq!(v["compared"], 53, "{json}");
    assert_eq!(v["divergences"], 0, "{json}");
    assert!(
        v["notes"][0].as_str().unwrap().contains("per_len"),
        "{json}"
    );
    assert!(peak_kib < 100 * 1024, "peak RSS {peak_kib} KiB");
}
