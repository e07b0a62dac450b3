//! Unbounded and never-ending inputs: every command that reads a whole
//! file (objects, flows, routes, tc configurations) refuses a device such
//! as `/dev/zero` by name and reads a FIFO only up to its format's limit,
//! in bounded memory; and a command waiting for a FIFO's writer (a capture
//! read with `--pcap FIFO` or `-r FIFO`) ends on SIGTERM or SIGINT.
//!
//! Signals go only to the processes these tests started, by PID; a process
//! still running when its test fails is killed by PID.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::Scratch;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn bpf(name: &str) -> String {
    testkit::object_path(name)
}

/// A scratch directory `sluice-inputs-NAME-PID`, removed when the test ends.
fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("inputs-{name}"))
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

/// A child killed by PID when dropped, if it still runs (a failed test
/// leaves nothing behind).
struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0
            && c.try_wait().ok().flatten().is_none()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// How a process ended: its status, stderr and peak memory (KiB).
struct Ended {
    status: libc::c_int,
    stderr: String,
    max_rss_kib: i64,
    took: Duration,
}

impl Ended {
    fn code(&self) -> Option<i32> {
        libc::WIFEXITED(self.status).then(|| libc::WEXITSTATUS(self.status))
    }
}

/// Waits for `child` (at most `limit`, else kills it and fails) and
/// takes its resource usage from `wait4`.
fn wait_bounded(mut running: Running, limit: Duration, started: Instant) -> Ended {
    let child = running.0.as_mut().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).unwrap();
        s
    });
    loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is valid (plain integers).
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child, with valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            // Reaped: nothing left for the guard to kill.
            running.0 = None;
            return Ended {
                status,
                stderr: reader.join().unwrap(),
                max_rss_kib: usage.ru_maxrss,
                took: started.elapsed(),
            };
        }
        assert!(
            started.elapsed() < limit,
            "still running after {limit:?} (killed)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn(args: &[&str], env: Option<(&str, &str)>) -> (Running, Instant) {
    let mut cmd = sluice();
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    (Running(Some(cmd.spawn().unwrap())), started)
}

/// Every whole-file reader on `/dev/zero`: a prompt refusal naming the
/// file and what it is, in little memory (before: 1 GB/s without end).
#[test]
fn whole_file_readers_refuse_dev_zero_by_name() {
    let pcap = &testkit::capture("mptcp-v0.pcap").display().to_string();
    let port = format!("pcap:{pcap}");
    let routes = [bpf("fwd_radix")];
    let cases: Vec<Vec<&str>> = vec![
        vec!["verify", "/dev/zero"],
        vec!["disasm", "/dev/zero"],
        vec![
            "tc",
            "--config",
            "/dev/zero",
            "filter",
            "show",
            "dev",
            "eth0",
        ],
        vec!["switch", "--port", &port, "--flows", "/dev/zero"],
        vec![
            "run",
            &routes[0],
            "--routes",
            "/dev/zero",
            "--gen",
            "udp,count=1",
        ],
        vec![
            "profile",
            &routes[0],
            "--routes",
            "/dev/zero",
            "--gen",
            "udp,count=1",
        ],
    ];
    for args in cases {
        let (child, t0) = spawn(&args, None);
        let end = wait_bounded(child, Duration::from_secs(20), t0);
        assert_eq!(end.code(), Some(1), "{args:?}: {}", end.stderr);
        // tc's configuration may have a reader of its own (refusing
        // symlinks and foreign owners too), which says it its way.
        assert!(
            end.stderr
                .contains("/dev/zero: a character device, not a file")
                || (args[0] == "tc" && end.stderr.contains("/dev/zero: not a regular file")),
            "{args:?}: {}",
            end.stderr
        );
        assert!(
            end.max_rss_kib < 200 << 10,
            "{args:?}: {} KiB",
            end.max_rss_kib
        );
        eprintln!(
            "{args:?}: refused in {:?}, peak {} MiB",
            end.took,
            end.max_rss_kib >> 10
        );
    }
}

/// A FIFO that never ends (zeros, faster than any object) is read up to
/// the limit (`SLUICE_MAX_FILE_SIZE` here, to keep the test short) and
/// refused past it, naming the limit and how to change it.
#[test]
fn a_fifo_without_end_is_read_up_to_the_limit() {
    let dir = scratch("endless");
    let fifo = dir.join("zeros");
    mkfifo(&fifo);
    for (args, what) in [
        (vec!["verify"], "an ELF object or bytecode"),
        (
            vec!["switch", "--port", "pcap:/dev/null", "--flows"],
            "a text file",
        ),
    ] {
        let writer_path = fifo.clone();
        // The writer stops when the reader closes its end (EPIPE).
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&writer_path)
                .unwrap();
            let zeros = vec![0u8; 1 << 16];
            let mut sent = 0u64;
            while f.write_all(&zeros).is_ok() {
                sent += zeros.len() as u64;
                if sent > 1 << 30 {
                    break;
                }
            }
            sent
        });
        let mut all = args.clone();
        let f = fifo.display().to_string();
        all.push(&f);
        let (child, t0) = spawn(&all, Some(("SLUICE_MAX_FILE_SIZE", "16M")));
        let end = wait_bounded(child, Duration::from_secs(30), t0);
        let sent = writer.join().unwrap();
        assert_eq!(end.code(), Some(1), "{all:?}: {}", end.stderr);
        let want = format!(
            "larger than 16777216 bytes (16 MiB), the limit for {what} (set SLUICE_MAX_FILE_SIZE=BYTES to change it)"
        );
        assert!(end.stderr.contains(&want), "{all:?}: {}", end.stderr);
        assert!(sent < 1 << 30, "the reader read on past its limit");
        assert!(
            end.max_rss_kib < 120 << 10,
            "{all:?}: {} KiB",
            end.max_rss_kib
        );
    }
}

/// `run --pcap FIFO` and `filter -r FIFO` with no writer: SIGTERM (and
/// SIGINT) end them within a couple of seconds (before: the handlers
/// restarted the blocked `open`, and `timeout 10` left one running).
#[test]
fn a_fifo_with_no_writer_does_not_swallow_sigterm() {
    let dir = scratch("nowriter");
    let fifo = dir.join("capture");
    mkfifo(&fifo);
    let f = fifo.display().to_string();
    let pass = bpf("xdp_pass");
    for (args, sig) in [
        (vec!["run", &pass, "--pcap", &f], libc::SIGTERM),
        (vec!["filter", "-r", &f, "tcp"], libc::SIGTERM),
        (vec!["run", &pass, "--pcap", &f], libc::SIGINT),
        (vec!["filter", "-r", &f, "tcp"], libc::SIGINT),
        (vec!["monitor", "flows", "--pcap", &f], libc::SIGTERM),
    ] {
        let (child, t0) = spawn(&args, None);
        std::thread::sleep(Duration::from_millis(500));
        let pid = child.0.as_ref().unwrap().id() as libc::pid_t;
        let sent = Instant::now();
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(pid, sig) };
        let end = wait_bounded(child, Duration::from_secs(15), t0);
        let after = sent.elapsed();
        assert!(
            after < Duration::from_secs(3),
            "{args:?}: ended {after:?} after the signal"
        );
        assert_eq!(end.code(), Some(1), "{args:?}: {}", end.stderr);
        assert!(
            end.stderr
                .contains("stopped by a signal before the capture's header was read"),
            "{args:?}: {}",
            end.stderr
        );
    }
}
