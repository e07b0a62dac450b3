//! The tools sluice is compared with: tcpdump, tshark, nfdump and nfcapd,
//! ovs-ofctl; genhtml, which draws coverage. Whether one is there (if not, an attempt to install it, then
//! a loud skip, or a failure under `SLUICE_REQUIRE_KERNEL=1`), running it
//! with a clear message when it is missing, and a time limit so that a
//! test never hangs on a tool.

use std::ffi::OsStr;
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::root::require_kernel;

/// A program the tests run, and the Debian package that installs it
/// (`./dev.sh setup` installs them all).
#[derive(Clone, Copy, Debug)]
pub struct Tool {
    pub program: &'static str,
    pub package: &'static str,
}

pub const TCPDUMP: Tool = Tool {
    program: "tcpdump",
    package: "tcpdump",
};
pub const TSHARK: Tool = Tool {
    program: "tshark",
    package: "tshark",
};
pub const NFDUMP: Tool = Tool {
    program: "nfdump",
    package: "nfdump",
};
pub const NFCAPD: Tool = Tool {
    program: "nfcapd",
    package: "nfdump",
};
pub const OVS_OFCTL: Tool = Tool {
    program: "ovs-ofctl",
    package: "openvswitch-common",
};
pub const GENHTML: Tool = Tool {
    program: "genhtml",
    package: "lcov",
};

impl Tool {
    /// Whether the tool is there for test `what` (see [`tools_for_test`]).
    pub fn available(self, what: &str) -> bool {
        tools_for_test(what, &[self.program], &[self.package])
    }

    /// A command running the tool.
    pub fn command(self) -> Command {
        Command::new(self.program)
    }

    /// Runs the tool with `args` to its end: its output, whatever its
    /// status; a failure naming the package when it is not installed.
    pub fn output<S: AsRef<OsStr>>(self, args: impl IntoIterator<Item = S>) -> Output {
        output(self.command().args(args))
    }

    /// Runs the tool with `args`, which must succeed: its standard output.
    pub fn stdout<S: AsRef<OsStr>>(self, args: impl IntoIterator<Item = S>) -> String {
        let mut cmd = self.command();
        cmd.args(args);
        let out = output(&mut cmd);
        assert!(
            out.status.success(),
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The tools above, to name a missing one's package.
const KNOWN: [Tool; 6] = [TCPDUMP, TSHARK, NFDUMP, NFCAPD, OVS_OFCTL, GENHTML];

/// Runs `cmd` (a tool with its arguments, environment, input) to its end:
/// its output, whatever its status; when it does not start, a failure
/// naming the program and the package that installs it.
pub fn output(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| {
        let program = cmd.get_program().to_string_lossy().into_owned();
        let package = KNOWN
            .iter()
            .find(|t| t.program == program)
            .map_or(program.as_str(), |t| t.package);
        panic!("{program} does not run ({e}): install {package} (./dev.sh setup installs it)")
    })
}

/// Whether every program in `bins` is on PATH; if not, try to install
/// `packages` through apt-get. Skips loudly when they are still missing,
/// and fails instead under `SLUICE_REQUIRE_KERNEL=1`, as the kernel tests
/// do.
pub fn tools_for_test(what: &str, bins: &[&str], packages: &[&str]) -> bool {
    let have = |b: &&str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {b}"))
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !bins.iter().all(have) {
        let _ = Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=300", "install", "-y", "-q"])
            .arg("--no-install-recommends")
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status();
    }
    let missing: Vec<&str> = bins.iter().filter(|b| !have(b)).copied().collect();
    if missing.is_empty() {
        return true;
    }
    eprintln!(
        "SKIPPED {what}: {} not installed (apt-get install {})",
        missing.join(", "),
        packages.join(" ")
    );
    assert!(
        !require_kernel(),
        "SLUICE_REQUIRE_KERNEL=1 but {what} cannot run: {} missing",
        missing.join(", ")
    );
    false
}

/// Runs `cmd`, killing it after `limit`: a test never hangs on a tool.
pub fn run_with_timeout(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?} does not start: {e}"));
    // Drain the pipes in threads so that a chatty tool cannot block.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the tool") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let s = child.wait().expect("reap the tool");
            panic!("{cmd:?} took more than {limit:?}; killed ({s})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

/// `ovs-ofctl ofp-print` of an OpenFlow message: its text (the test fails
/// when the tool does).
pub fn ofp_print(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let out = run_with_timeout(
        OVS_OFCTL.command().args(["ofp-print", &hex]),
        Duration::from_secs(20),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ovs-ofctl ofp-print {hex} failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}
