//! Faults survived, nothing lost: captures read from a pipe, a FIFO or
//! standard input; SIGINT and SIGTERM during a replay (outputs whole and
//! agreeing with the summary, read back by our reader and by tcpdump; a
//! second signal ends the process at once); a full file system or an
//! unwritable path (one line naming the file and the cause, no panic, the
//! partial output valid up to its last whole record).
//!
//! Signals go only to processes these tests started, by PID. The tmpfs
//! test needs root (a private mount namespace): without it, it is skipped
//! loudly, or fails under `SLUICE_REQUIRE_KERNEL=1`.

mod common;

use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use testkit::Scratch;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

fn bpf(name: &str) -> PathBuf {
    PathBuf::from(testkit::object_path(name))
}

/// A scratch directory `sluice-faults-NAME-PID`, removed when the test ends.
fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("faults-{name}"))
}

/// Runs `cmd`, which must succeed; its output.
fn succeeds(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Writes a capture of generated traffic to `path` (pcapng by extension).
fn generate(path: &Path, spec: &str) {
    succeeds(
        sluice()
            .arg("run")
            .arg(bpf("xdp_pass"))
            .args(["--gen", spec, "--threads", "1", "--out-pass"])
            .arg(path),
    );
}

/// Two streams, one from a blocked prefix: xdp_ddos passes some packets
/// and drops others (its block list and per-source token buckets).
const MIXED: [&str; 2] = [
    "udp,flows=200,count=N,src=10.1.0.0/16",
    "udp,flows=20,count=M,src=10.66.0.0/16",
];

/// A capture of `n` packets that xdp_ddos splits into passes and drops.
fn mixed_capture(path: &Path, n: u64) {
    let mut cmd = sluice();
    cmd.arg("run").arg(bpf("xdp_pass"));
    cmd.args(["--threads", "1", "--out-pass"]).arg(path);
    let first = n * 3 / 4;
    for (spec, count) in MIXED.iter().zip([first, n - first]) {
        let spec = spec.replace("=N", &format!("={count}"));
        cmd.args(["--gen", &spec.replace("=M", &format!("={count}"))]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `sluice run xdp_ddos.o` with the block list, reading `pcap`, writing
/// passes and drops into `dir`, JSON out.
fn ddos(pcap: &str, pass: &Path, drop: &Path, extra: &[&str]) -> Command {
    let mut cmd = sluice();
    cmd.arg("run")
        .arg(bpf("xdp_ddos"))
        .args(["--pcap", pcap, "--json"])
        .args(["--map-update", "blocklist_v4", "10.66.0.0/16", "0"])
        .arg("--out-pass")
        .arg(pass)
        .arg("--out-drop")
        .arg(drop)
        .args(extra);
    cmd
}

/// Packets in a capture, read by our reader: every record whole.
fn our_count(path: &Path) -> u64 {
    let mut n = 0;
    for f in capture::PcapSource::open(path).unwrap_or_else(|e| panic!("{e}")) {
        f.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    n
}

/// Packets in a capture, read by tcpdump, which must not find it cut.
fn tcpdump_count(path: &Path) -> u64 {
    let out = testkit::tool::output(Command::new("tcpdump").args(["-n", "-q", "-r"]).arg(path));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tcpdump -r {}: {err}", path.display());
    assert!(
        !err.contains("truncated"),
        "tcpdump -r {}: {err}",
        path.display()
    );
    out.stdout.iter().filter(|&&b| b == b'\n').count() as u64
}

/// The JSON report on stdout.
fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The outputs hold exactly the packets the summary counts, for our
/// reader and for tcpdump.
fn outputs_agree(v: &serde_json::Value, pass: &Path, drop: &Path) {
    let verdict = |k: &str| v["verdicts"][k].as_u64().unwrap_or(0);
    assert_eq!(
        verdict("PASS") + verdict("DROP"),
        v["packets"].as_u64().unwrap(),
        "{v}"
    );
    for (path, k) in [(pass, "PASS"), (drop, "DROP")] {
        assert_eq!(
            our_count(path),
            verdict(k),
            "{} against {v}",
            path.display()
        );
        assert_eq!(
            tcpdump_count(path),
            verdict(k),
            "{} against {v}",
            path.display()
        );
    }
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: signalling our own child by its PID.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

/// Bytes waiting in a pipe (either end).
fn pipe_bytes(fd: &impl AsRawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    assert_eq!(r, 0, "FIONREAD: {}", std::io::Error::last_os_error());
    n as usize
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn captures_from_standard_input_a_pipe_and_a_fifo() {
    let dir = scratch("stdin");
    for name in ["in.pcap", "in.pcapng"] {
        let input = dir.join(name);
        mixed_capture(&input, 3000);
        let (pass, drop) = (dir.join("pass.pcap"), dir.join("drop.pcapng"));
        // The file itself, for the counts to compare with.
        let out = ddos(input.to_str().unwrap(), &pass, &drop, &["--threads", "1"])
            .output()
            .unwrap();
        let want = json(&out);
        assert_eq!(want["packets"], 3000, "{want}");

        // Standard input from a pipe, on two threads (read once, handed to
        // the workers): the same verdicts.
        let mut child = ddos("-", &pass, &drop, &["--threads", "2"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let bytes = std::fs::read(&input).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(&bytes));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json(&out);
        assert_eq!(v["source"], "capture from standard input", "{v}");
        assert_eq!(v["verdicts"], want["verdicts"], "{v}");
        assert_ne!(v["stopped"], true, "not stopped: {v}");
        outputs_agree(&v, &pass, &drop);

        // Standard input from the file itself (not a pipe): read once too.
        let out = ddos("-", &pass, &drop, &[])
            .stdin(std::fs::File::open(&input).unwrap())
            .output()
            .unwrap();
        assert_eq!(json(&out)["verdicts"], want["verdicts"]);

        // A FIFO named on the command line (once "not a pcap or pcapng
        // file": every worker opened it again).
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (src, to) = (input.clone(), fifo.clone());
        let writer = std::thread::spawn(move || {
            std::fs::write(&to, std::fs::read(&src).unwrap()).unwrap();
        });
        let out = ddos(fifo.to_str().unwrap(), &pass, &drop, &[])
            .output()
            .unwrap();
        writer.join().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json(&out);
        assert_eq!(v["verdicts"], want["verdicts"], "{v}");
        outputs_agree(&v, &pass, &drop);
    }
}

#[test]
fn tcpdump_writes_into_sluice_through_a_pipe() {
    let dir = scratch("tcpdump");
    let input = dir.join("in.pcap");
    mixed_capture(&input, 2000);
    let mut tcpdump = Command::new("tcpdump")
        .args(["-r"])
        .arg(&input)
        .args(["-w", "-", "-U"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("tcpdump is installed");
    let (pass, drop) = (dir.join("pass.pcap"), dir.join("drop.pcap"));
    let out = ddos("-", &pass, &drop, &[])
        .stdin(tcpdump.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(tcpdump.wait().unwrap().success());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["packets"], 2000, "{v}");
    outputs_agree(&v, &pass, &drop);

    // Every command reading captures goes through the same reader.
    let filter = |args: &[&str]| {
        sluice()
            .args(args)
            .stdin(std::fs::File::open(&input).unwrap())
            .output()
            .unwrap()
    };
    let out = filter(&["filter", "-r", "-", "--json", "udp"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&out)["matched"], 2000);
    let out = filter(&["monitor", "flows", "--pcap", "-", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["packets"], 2000, "{summary}");
}

#[test]
fn a_capture_with_a_header_and_no_packets_is_empty() {
    let dir = scratch("empty");
    for name in ["empty.pcap", "empty.pcapng"] {
        let path = dir.join(name);
        generate(&path, "udp,count=0");
        let header = std::fs::read(&path).unwrap();
        assert!(!header.is_empty());
        let mut child = sluice()
            .arg("run")
            .arg(bpf("xdp_pass"))
            .args(["--pcap", "-", "--json"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&header).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(json(&out)["packets"], 0, "{name}");
    }
    // No header at all is not a capture.
    let out = sluice()
        .arg("run")
        .arg(bpf("xdp_pass"))
        .args(["--pcap", "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("standard input: too short for a capture file"),
        "{err}"
    );
}

/// Runs `cmd` with `input` written into its standard input, a pipe kept
/// open: once sluice has taken every byte, sends `sig`; sluice must end
/// without waiting for the writer. Returns its output.
fn signal_on_open_pipe(cmd: &mut Command, input: &Path, sig: libc::c_int) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&std::fs::read(input).unwrap()).unwrap();
    stdin.flush().unwrap();
    wait_until("sluice to empty the pipe", Duration::from_secs(20), || {
        pipe_bytes(&stdin) == 0
    });
    signal(&child, sig);
    // The pipe stays open (`stdin` lives) until sluice is done.
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "it waited for the writer"
    );
    drop(stdin);
    out
}

/// A pipe kept open: every packet written to it before SIGINT (taken in by
/// sluice, the pipe empty) is counted and in the outputs; the replay ends
/// without waiting for the writer, and says it was stopped.
#[test]
fn sigint_on_a_pipe_kept_open_counts_every_packet_read() {
    let dir = scratch("sigpipe");
    for (name, threads) in [("in.pcap", "2"), ("in.pcapng", "1")] {
        let input = dir.join(name);
        mixed_capture(&input, 5000);
        let (pass, drop) = (dir.join("pass.pcap"), dir.join("drop.pcapng"));
        let mut cmd = ddos("-", &pass, &drop, &["--threads", threads]);
        let out = signal_on_open_pipe(&mut cmd, &input, libc::SIGINT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        assert!(
            err.contains("stopped by a signal after 5000 packets"),
            "{err}"
        );
        let v = json(&out);
        assert_eq!(v["stopped"], true, "{v}");
        assert_eq!(v["packets"], 5000, "{v}");
        outputs_agree(&v, &pass, &drop);
    }

    // The text report too says it was stopped.
    let mut cmd = sluice();
    cmd.arg("run").arg(bpf("xdp_pass")).args(["--pcap", "-"]);
    let out = signal_on_open_pipe(&mut cmd, &dir.join("in.pcap"), libc::SIGTERM);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("packets       5000 in"), "{text}");
    assert!(text.contains("stopped       by a signal"), "{text}");
}

/// `sluice filter -r -` on a pipe kept open: SIGINT ends it without
/// waiting for the writer, every packet written counted, the matches a
/// valid capture holding as many packets as the report says.
#[test]
fn sigint_stops_filter_on_a_pipe_with_its_output_whole() {
    let dir = scratch("sigfilter");
    let input = dir.join("in.pcap");
    mixed_capture(&input, 5000);
    let matches = dir.join("udp.pcap");
    let mut cmd = sluice();
    cmd.args(["filter", "-r", "-", "-w"])
        .arg(&matches)
        .args(["--json", "udp"]);
    let out = signal_on_open_pipe(&mut cmd, &input, libc::SIGINT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v = json(&out);
    assert_eq!(v["stopped"], true, "{v}");
    assert_eq!(v["read"], 5000, "{v}");
    let matched = v["matched"].as_u64().unwrap();
    assert!(matched > 0, "{v}");
    assert_eq!(our_count(&matches), matched);
    assert_eq!(tcpdump_count(&matches), matched);
}

/// SIGTERM in the middle of a large file, on two threads (each worker
/// reading its own copy): the outputs hold exactly the packets counted.
#[test]
fn sigterm_during_a_file_replay_leaves_outputs_that_agree() {
    let dir = scratch("sigfile");
    let input = dir.join("big.pcap");
    const N: u64 = 600_000;
    mixed_capture(&input, N);
    let (pass, drop) = (dir.join("pass.pcap"), dir.join("drop.pcap"));
    let child = ddos(
        input.to_str().unwrap(),
        &pass,
        &drop,
        &["--engine", "interp"],
    )
    .args(["--threads", "2"])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Under way: the drops' first MiB is written.
    wait_until("the replay to write", Duration::from_secs(60), || {
        std::fs::metadata(&drop).is_ok_and(|m| m.len() > 1 << 20)
    });
    signal(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v = json(&out);
    assert_eq!(v["stopped"], true, "{v}");
    let packets = v["packets"].as_u64().unwrap();
    assert!(packets > 0 && packets < N, "not stopped in the middle: {v}");
    outputs_agree(&v, &pass, &drop);
}

/// The first signal asks for a clean stop; while sluice cannot stop (its
/// output is a FIFO nobody reads), a second ends it at once.
#[test]
fn a_second_signal_ends_the_process_at_once() {
    let dir = scratch("second");
    let fifo = dir.join("out.pcap");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Our end, never read: opened first (non-blocking) so sluice's opens.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let mut child = sluice()
        .arg("run")
        .arg(bpf("xdp_pass"))
        .args([
            "--gen",
            "udp,count=100000000",
            "--threads",
            "1",
            "--out-pass",
        ])
        .arg(&fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the FIFO to fill", Duration::from_secs(20), || {
        pipe_bytes(&reader) >= 65536
    });
    signal(&child, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first signal is a clean stop"
    );
    signal(&child, libc::SIGTERM);
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "still running");
        std::thread::sleep(Duration::from_millis(20));
    };
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    drop(reader);
}

use std::os::unix::fs::OpenOptionsExt;

/// Runs `cmd`; its exit status must be 1 and its stderr one line, no panic.
fn one_line_failure(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn a_full_device_or_an_unwritable_path_is_one_line_naming_the_file() {
    let dir = scratch("full");
    let input = dir.join("in.pcap");
    generate(&input, "udp,count=20000");
    let run = |out: &Path| {
        let mut cmd = sluice();
        cmd.arg("run")
            .arg(bpf("xdp_pass"))
            .arg("--pcap")
            .arg(&input);
        cmd.arg("--out-pass").arg(out);
        cmd
    };
    let err = one_line_failure(&mut run(Path::new("/dev/full")));
    assert!(
        err.contains("writing /dev/full: No space left on device"),
        "{err}"
    );
    // pcapng (by the name) on the same device.
    let full_ng = dir.join("full.pcapng");
    std::os::unix::fs::symlink("/dev/full", &full_ng).unwrap();
    let err = one_line_failure(&mut run(&full_ng));
    assert!(
        err.contains(&format!(
            "writing {}: No space left on device",
            full_ng.display()
        )),
        "{err}"
    );
    // A path that cannot be created: a missing directory, a directory.
    let missing = dir.join("no/such/dir/o.pcap");
    let err = one_line_failure(&mut run(&missing));
    assert!(
        err.contains(&format!(
            "creating {}: No such file or directory",
            missing.display()
        )),
        "{err}"
    );
    let err = one_line_failure(&mut run(dir.path()));
    assert!(
        err.contains(&format!(
            "creating {}: Is a directory",
            dir.path().display()
        )),
        "{err}"
    );
    // `sluice filter -w` writes through the same sink.
    let err = one_line_failure(sluice().args(["filter", "-r"]).arg(&input).args([
        "-w",
        "/dev/full",
        "udp",
    ]));
    assert!(
        err.contains("writing /dev/full: No space left on device"),
        "{err}"
    );
    // The report itself, on a full standard output.
    for json in [true, false] {
        let mut cmd = sluice();
        cmd.arg("run")
            .arg(bpf("xdp_pass"))
            .arg("--pcap")
            .arg(&input);
        if json {
            cmd.arg("--json");
        }
        let err = one_line_failure(cmd.stdout(std::fs::File::create("/dev/full").unwrap()));
        assert!(
            err.contains("writing standard output: No space left on device"),
            "{err}"
        );
    }
}

/// A small tmpfs (a private mount namespace, root): the write that finds
/// it full is one line naming the file, and the file is cut back to its
/// last whole record, holding the packets the line says.
#[test]
fn a_full_file_system_leaves_a_valid_partial_capture() {
    if !common::root_available("a full tmpfs") {
        return;
    }
    let dir = scratch("tmpfs");
    let input = dir.join("in.pcap");
    // 40,000 packets of 100 bytes: 4.6 MB of pcap, more than the tmpfs.
    generate(&input, "udp,count=40000,size=100");
    let mnt = dir.join("mnt");
    let kept = dir.join("kept");
    std::fs::create_dir_all(&mnt).unwrap();
    std::fs::create_dir_all(&kept).unwrap();
    for name in ["o.pcap", "o.pcapng"] {
        let inside = mnt.join(name);
        let script = format!(
            "mount -t tmpfs -o size=1536k sluice-faults {mnt} || exit 99; \
             {sluice} run {prog} --pcap {input} --threads 1 --out-pass {inside}; \
             status=$?; cp {inside} {kept}/; exit $status",
            mnt = mnt.display(),
            sluice = env!("CARGO_BIN_EXE_sluice"),
            prog = bpf("xdp_pass").display(),
            input = input.display(),
            inside = inside.display(),
            kept = kept.display(),
        );
        let out = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(99), "mount failed: {err}");
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let want = format!("writing {}: No space left on device (", inside.display());
        assert!(err.contains(&want), "{err}");
        // "(N packets written before it)"
        let n: u64 = err
            .split('(')
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no count in {err}"));
        assert!(n > 1000 && n < 40_000, "{err}");
        let copy = kept.join(name);
        assert_eq!(our_count(&copy), n, "{err}");
        assert_eq!(tcpdump_count(&copy), n, "{err}");
    }
}

/// `sluice xpf run` and `sluice monitor flows` read `--pcap -` from a pipe
/// kept open: SIGINT ends them without waiting for the writer, every packet
/// written counted, and the report says they were stopped.
#[test]
fn sigint_stops_xpf_and_monitor_on_a_pipe_with_every_packet_counted() {
    let dir = scratch("sigmonitor");
    let input = dir.join("in.pcap");
    mixed_capture(&input, 5000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");

    let mut cmd = sluice();
    cmd.args(["xpf", "run", "--json", "--pcap", "-"])
        .arg(root.join("programs/xpf/flows.s"));
    let out = signal_on_open_pipe(&mut cmd, &input, libc::SIGINT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["stopped"], true, "{v}");
    assert_eq!(v["packets"], 5000, "{v}");

    let ipfix = dir.join("flows.ipfix");
    let mut cmd = sluice();
    cmd.args(["monitor", "flows", "--json", "--pcap", "-", "--ipfix-file"])
        .arg(&ipfix);
    let out = signal_on_open_pipe(&mut cmd, &input, libc::SIGTERM);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("stopped by a signal"), "{err}");
    let summary = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("summary").cloned())
        .expect("a summary line");
    assert_eq!(summary["stopped"], true, "{summary}");
    assert_eq!(summary["packets"], 5000, "{summary}");
    // The export file is whole: every flow the summary counts is in it.
    assert_eq!(summary["exported"], summary["flows"], "{summary}");
    let messages = ipfix::Decoder::new()
        .decode_stream(&std::fs::read(&ipfix).unwrap())
        .expect("a whole IPFIX file");
    let flows: usize = messages.iter().map(|m| m.flows.len()).sum();
    assert_eq!(Some(flows as u64), summary["flows"].as_u64(), "{summary}");
}

/// `-w -` and `--out-pass -`: the capture on standard output (the report on
/// standard error), read whole by tcpdump; two outputs on it are refused.
#[test]
fn captures_written_to_standard_output_are_whole() {
    let dir = scratch("wstdout");
    let input = dir.join("in.pcap");
    mixed_capture(&input, 3000);

    let out = succeeds(
        sluice()
            .args(["filter", "-r"])
            .arg(&input)
            .args(["-w", "-", "--json", "udp"]),
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    let piped = dir.join("udp.pcap");
    std::fs::write(&piped, &out.stdout).unwrap();
    let matched = report["matched"].as_u64().unwrap();
    assert_eq!(matched, 3000, "{report}");
    assert_eq!(tcpdump_count(&piped), matched);

    let out = succeeds(
        sluice()
            .arg("run")
            .arg(bpf("xdp_pass"))
            .arg("--pcap")
            .arg(&input)
            .args(["--out-pass", "-"]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("packets       3000 in"), "{err}");
    std::fs::write(&piped, &out.stdout).unwrap();
    assert_eq!(our_count(&piped), 3000);
    assert_eq!(tcpdump_count(&piped), 3000);

    let out = sluice()
        .arg("run")
        .arg(bpf("xdp_pass"))
        .arg("--pcap")
        .arg(&input)
        .args(["--out-pass", "-", "--out-drop", "-"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("only one output"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// Generated traffic too: `monitor flows --gen` and `xpf run --gen` stop
/// cleanly at SIGINT, with a summary of the packets made before it.
#[test]
fn sigint_stops_generated_traffic_in_monitor_and_xpf() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let spec = "udp,flows=64,count=2000000000";
    let mut monitor = sluice();
    monitor.args(["monitor", "flows", "--json", "--gen", spec]);
    let mut xpf = sluice();
    xpf.args(["xpf", "run", "--json", "--gen", spec])
        .arg(root.join("programs/xpf/flows.s"));
    for (name, cmd) in [("monitor", &mut monitor), ("xpf", &mut xpf)] {
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        signal(&child, libc::SIGINT);
        let t0 = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10), "{name} went on");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        // xpf prints one JSON object; monitor a line per flow, then its
        // summary.
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .ok()
            .or_else(|| {
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                    .find_map(|v| v.get("summary").cloned())
            })
            .expect("a JSON report");
        let summary = v.get("summary").unwrap_or(&v);
        assert_eq!(summary["stopped"], true, "{name}: {summary}");
        let packets = summary["packets"].as_u64().unwrap();
        assert!(packets > 0 && packets < 2_000_000_000, "{name}: {summary}");
    }
}
