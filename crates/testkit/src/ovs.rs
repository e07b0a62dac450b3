//! Open vSwitch in a sandbox of its own, as OVS's `ovs-sandbox` runs it:
//! `ovsdb-server` and `ovs-vswitchd` on a scratch directory, one bridge
//! `br0` on the dummy datapath (no kernel module, no traffic anywhere),
//! ports `p1..pN` that are only names with OpenFlow numbers 1..N. Tests
//! give it the flows they give sluice and compare what it does:
//! `ofproto/trace` of a frame (which also runs `learn`), frames received
//! on a port (`netdev-dummy/receive`), the datapath's flows. Both daemons
//! are ended when it is dropped (asked to exit, then killed by the PIDs
//! their pidfiles give).

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::Scratch;
use crate::tool::{Tool, run_with_timeout, tools_for_test};

/// `ovs-vswitchd`, the switch itself.
pub const OVS_VSWITCHD: Tool = Tool {
    program: "ovs-vswitchd",
    package: "openvswitch-switch",
};

/// A running sandboxed Open vSwitch.
pub struct OvsSandbox {
    dir: Scratch,
}

/// What `ofproto/trace` said of a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The `Datapath actions:` line's actions (`drop`, `pop_vlan,3,4`).
    pub actions: String,
    /// The `Megaflow:` line's match.
    pub megaflow: String,
    /// The whole output, for messages.
    pub text: String,
}

impl OvsSandbox {
    /// Starts OVS with `ports` dummy ports, or `None` (a loud skip, a
    /// failure under `SLUICE_REQUIRE_KERNEL=1`) when it is not installed.
    pub fn start(what: &str, ports: u32) -> Option<OvsSandbox> {
        if !tools_for_test(
            what,
            &["ovs-vswitchd", "ovsdb-server", "ovs-vsctl", "ovs-appctl"],
            &["openvswitch-switch"],
        ) {
            return None;
        }
        // One directory per sandbox: tests of one binary run side by side.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sandbox = OvsSandbox {
            dir: Scratch::new(&format!("ovs{n}")),
        };
        let d = sandbox.dir.path().display().to_string();
        sandbox.run(
            "ovsdb-tool",
            &[
                "create",
                &format!("{d}/conf.db"),
                "/usr/share/openvswitch/vswitch.ovsschema",
            ],
        );
        sandbox.run(
            "ovsdb-server",
            &[
                "--detach",
                "--no-chdir",
                &format!("--pidfile={d}/ovsdb-server.pid"),
                &format!("--remote=punix:{d}/db.sock"),
                &format!("--log-file={d}/ovsdb-server.log"),
                &format!("{d}/conf.db"),
            ],
        );
        sandbox.run("ovs-vsctl", &["--no-wait", "init"]);
        sandbox.run(
            "ovs-vswitchd",
            &[
                "--detach",
                "--no-chdir",
                &format!("--pidfile={d}/ovs-vswitchd.pid"),
                &format!("--log-file={d}/ovs-vswitchd.log"),
                "--enable-dummy=override",
                "-vconsole:off",
                &format!("unix:{d}/db.sock"),
            ],
        );
        let mut vsctl = vec![
            "add-br".to_string(),
            "br0".into(),
            "--".into(),
            "set".into(),
            "bridge".into(),
            "br0".into(),
            "datapath_type=dummy".into(),
            "fail-mode=secure".into(),
        ];
        for p in 1..=ports {
            vsctl.extend([
                "--".to_string(),
                "add-port".into(),
                "br0".into(),
                format!("p{p}"),
                "--".into(),
                "set".into(),
                "interface".into(),
                format!("p{p}"),
                "type=dummy".into(),
                format!("ofport_request={p}"),
            ]);
        }
        let args: Vec<&str> = vsctl.iter().map(String::as_str).collect();
        sandbox.run("ovs-vsctl", &args);
        Some(sandbox)
    }

    /// A command with the sandbox's directories in its environment.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        for var in ["OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR", "OVS_SYSCONFDIR"] {
            c.env(var, self.dir.path());
        }
        c
    }

    /// Runs `program args` in the sandbox, which must succeed: its output.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        let out = self.output(program, args);
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `program args` in the sandbox: its output, whatever its status.
    pub fn output(&self, program: &str, args: &[&str]) -> Output {
        run_with_timeout(self.command(program).args(args), Duration::from_secs(30))
    }

    /// Adds flows (`ovs-ofctl add-flows` text, one per line) to br0, in
    /// whatever protocol `ovs-ofctl` finds can say them (some need OVS's
    /// own NXM: `strip_vlan` where the match does not say a tag is there).
    pub fn add_flows(&self, flows: &[&str]) {
        let file = self.dir.join("flows.txt");
        std::fs::write(&file, flows.join("\n")).expect("writing the flows file");
        self.run(
            "ovs-ofctl",
            &["add-flows", "br0", &file.display().to_string()],
        );
    }

    /// `ofproto/trace` of `frame` arriving on OpenFlow port `in_port`
    /// (it runs `learn` actions, as a real packet would).
    pub fn trace(&self, in_port: u32, frame: &[u8]) -> Trace {
        let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
        let text = self.run(
            "ovs-appctl",
            &["ofproto/trace", "br0", &format!("in_port={in_port}"), &hex],
        );
        let line = |head: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(head))
                .map(|l| l.trim().to_string())
                .unwrap_or_default()
        };
        Trace {
            actions: line("Datapath actions:"),
            megaflow: line("Megaflow:"),
            text: text.clone(),
        }
    }

    /// `frame` received on port `p{port}` by the datapath.
    pub fn receive(&self, port: u32, frame: &[u8]) {
        let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();
        self.run(
            "ovs-appctl",
            &["netdev-dummy/receive", &format!("p{port}"), &hex],
        );
    }

    /// The datapath's flows (`dpctl/dump-flows`), one per line.
    pub fn datapath_flows(&self) -> Vec<String> {
        self.run("ovs-appctl", &["dpctl/dump-flows"])
            .lines()
            .filter(|l| l.contains("actions:"))
            .map(str::to_string)
            .collect()
    }

    fn pid(&self, daemon: &str) -> Option<i32> {
        std::fs::read_to_string(self.dir.join(format!("{daemon}.pid")))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The sandbox's directory (logs, database, sockets).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for OvsSandbox {
    fn drop(&mut self) {
        for daemon in ["ovs-vswitchd", "ovsdb-server"] {
            let pid = self.pid(daemon);
            let _ = self.output("ovs-appctl", &["-t", daemon, "exit"]);
            let Some(pid) = pid else { continue };
            // Asked to exit; killed if it has not within a second.
            // SAFETY: signal 0 only asks whether the process exists.
            let alive = || unsafe { libc::kill(pid, 0) } == 0;
            for _ in 0..20 {
                if !alive() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if alive() {
                // SAFETY: a daemon this sandbox started, named by its pidfile.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}
