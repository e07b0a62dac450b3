//! The OpenFlow channel of a running `sluice switch` (a replay kept up
//! by `--duration`) under a hostile peer: a client that floods 64-KB
//! ECHO_REQUESTs and never reads its replies must not make the switch
//! grow (its RSS is read from /proc) and is dropped, logged, while the
//! switch goes on serving others.

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The switch's RSS may grow by this much over its idle size (the
/// flood offered 3,000 x 64 KB, 196 MB, of which it used to keep every
/// reply).
const RSS_GROWTH_MAX_KB: u64 = 32 * 1024;

struct Switch {
    child: Child,
    dir: PathBuf,
}

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A switch over one capture port (an output only, so the replay is over
/// at once), serving `punix:DIR/s.mgmt` for `secs` seconds.
fn start(tag: &str, secs: u32) -> (Switch, PathBuf) {
    let dir = std::env::temp_dir().join(format!("sluice-swch-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("s.mgmt");
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["switch", "--duration", &secs.to_string(), "--port"])
        .arg(format!("pcap::{}", dir.join("out.pcap").display()))
        .arg("--of")
        .arg(format!("punix:{}", sock.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sw = Switch { child, dir };
    let deadline = Instant::now() + Duration::from_secs(30);
    while UnixStream::connect(&sock).is_err() {
        assert!(
            Instant::now() < deadline,
            "the switch never listened at {sock:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (sw, sock)
}

fn vm_rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// An OpenFlow 1.3 message: header then body.
fn message(kind: u8, xid: u32, body: &[u8]) -> Vec<u8> {
    let mut m = vec![4, kind];
    m.extend_from_slice(&((8 + body.len()) as u16).to_be_bytes());
    m.extend_from_slice(&xid.to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// A well-behaved client: HELLO and an ECHO, the reply read back.
fn echo_round_trip(sock: &Path) -> Result<(), String> {
    let mut s = UnixStream::connect(sock).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&message(0, 1, &[]))
        .map_err(|e| e.to_string())?;
    s.write_all(&message(2, 77, b"still there?"))
        .map_err(|e| e.to_string())?;
    loop {
        let mut h = [0u8; 8];
        s.read_exact(&mut h).map_err(|e| e.to_string())?;
        let mut body = vec![0u8; (u16::from_be_bytes([h[2], h[3]]) as usize).saturating_sub(8)];
        s.read_exact(&mut body).map_err(|e| e.to_string())?;
        if h[1] == 3 && h[4..8] == 77u32.to_be_bytes() {
            return if body == b"still there?" {
                Ok(())
            } else {
                Err(format!("echo reply {body:?}"))
            };
        }
    }
}

#[test]
fn a_client_that_never_reads_is_dropped_and_the_switch_stays_small() {
    let (mut sw, sock) = start("flood", 120);
    let pid = sw.child.id();
    assert!(echo_round_trip(&sock).is_ok());
    let base = vm_rss_kb(pid);

    // The flood, from a thread: 3,000 ECHO_REQUESTs of 64 KB, never a read.
    let flood_sock = sock.clone();
    let flood = std::thread::spawn(move || -> (usize, String) {
        let mut s = UnixStream::connect(&flood_sock).unwrap();
        s.set_write_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let echo = message(2, 5, &vec![0x5a; 65535 - 8]);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut stream = message(0, 1, &[]);
        for n in 0..3000 {
            stream.extend_from_slice(&echo);
            let mut off = 0;
            while off < stream.len() {
                match s.write(&stream[off..]) {
                    Ok(k) => off += k,
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        if Instant::now() > deadline {
                            return (n, "still connected after 60 s".into());
                        }
                    }
                    Err(e) => return (n, e.to_string()),
                }
            }
            stream.clear();
        }
        (3000, "every request taken".into())
    });
    let mut peak = base;
    while !flood.is_finished() {
        peak = peak.max(vm_rss_kb(pid));
        std::thread::sleep(Duration::from_millis(50));
    }
    let (sent, end) = flood.join().unwrap();
    peak = peak.max(vm_rss_kb(pid));
    eprintln!(
        "flood: {sent} requests sent before `{end}`; switch RSS {base} kB idle, {peak} kB at most"
    );
    assert!(
        sent < 3000 && !end.contains("still connected"),
        "the switch took the flood without dropping the client: {sent} requests, {end}"
    );
    assert!(
        peak - base < RSS_GROWTH_MAX_KB,
        "the switch grew from {base} kB to {peak} kB under the flood"
    );
    // It serves the next client.
    echo_round_trip(&sock).expect("a client after the flood");

    // The drop is logged, as Open vSwitch logs it.
    // SAFETY: a signal to the child this test started, by its pid.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let mut err = String::new();
    sw.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = sw.child.wait().unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(
        err.contains("excessive sending backlog") && err.contains("disconnecting"),
        "{err}"
    );
    assert!(!sock.exists(), "the socket file is removed at the end");
}
