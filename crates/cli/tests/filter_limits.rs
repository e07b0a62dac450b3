//! Long tcpdump expressions. The kernel's limit on classic programs
//! (BPF_MAXINSNS, 4,096 instructions) binds the engines that compile the
//! program or run its eBPF translation (`--engine jit`, `ebpf-jit`,
//! `kernel`): a longer program is refused before any compilation,
//! translation or verification, naming the limit and the way
//! out, while the interpreter (libpcap's `bpf_filter` has no such limit)
//! runs it. libpcap's own compiler takes minutes on long `host` chains
//! (tcpdump too): the first SIGINT ends that wait.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A capture of tcpdump's suite, as a command-line argument.
fn capture() -> String {
    testkit::capture("mptcp-v0.pcap").display().to_string()
}

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

/// `len = 1 or len = 2 or ...`: about two instructions a term, and
/// libpcap compiles it in well under a second.
fn len_chain(terms: u32) -> String {
    (1..=terms)
        .map(|i| format!("len = {i}"))
        .collect::<Vec<_>>()
        .join(" or ")
}

#[test]
fn a_program_over_4096_instructions_is_refused_by_the_jit_and_run_by_the_interpreter() {
    let expr = len_chain(2400);
    let t0 = Instant::now();
    let jit = sluice()
        .args(["filter", "--engine", "jit", "-r", &capture(), &expr])
        .output()
        .unwrap();
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&jit.stderr);
    assert_eq!(jit.status.code(), Some(1), "{err}");
    assert!(
        err.contains("instructions, over the 4096 a filter may have"),
        "{err}"
    );
    assert!(err.contains("`--engine interp` runs it"), "{err}");
    // The expression is quoted by its start and length, not in full.
    assert!(
        err.contains(&format!("({} characters)", expr.len())),
        "{err}"
    );
    assert!(err.len() < 600, "{err}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    eprintln!("--engine jit refused in {took:?}: {err}");
    // The interpreter runs it: every packet's length is in the chain.
    let interp = sluice()
        .args(["filter", "--json", "-r", &capture(), &expr])
        .output()
        .unwrap();
    assert!(
        interp.status.success(),
        "{}",
        String::from_utf8_lossy(&interp.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&interp.stdout).unwrap();
    assert!(v["programs"][0][1].as_u64().unwrap() > 4096, "{v}");
    assert_eq!(v["matched"], v["read"], "{v}");
    let tcpdump =
        testkit::tool::output(Command::new("tcpdump").args(["-n", "-r", &capture(), &expr]));
    let n = String::from_utf8_lossy(&tcpdump.stdout).lines().count() as u64;
    assert_eq!(v["matched"].as_u64(), Some(n), "tcpdump matched {n}");
}

/// A kill guard: the child dies with the test, by PID.
struct Guard(std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

#[test]
fn sigint_ends_a_long_libpcap_compile() {
    // 800 `host` terms: libpcap's optimizer takes about a minute on them
    // (tcpdump -d: 24 s for 600, 87 s for 900 on the test machine).
    let expr = (0..800)
        .map(|i| format!("host 10.9.{}.{}", i / 250, i % 250 + 1))
        .collect::<Vec<_>>()
        .join(" or ");
    let child = sluice()
        .args(["filter", "--engine", "jit", "-r", &capture(), &expr])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = Guard(child);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        guard.0.try_wait().unwrap().is_none(),
        "the compile ended before the signal: the test needs a longer expression"
    );
    let sent = Instant::now();
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(guard.0.id() as libc::pid_t, libc::SIGINT) };
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "still compiling 5 s after SIGINT (killed)"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(guard.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("stopped by a signal while libpcap compiled the expression"),
        "{err}"
    );
    eprintln!("ended {:?} after SIGINT", sent.elapsed());
}
