//! A network namespace of this process's own, with veth pairs in it, for
//! comparing the kernel with sluice on live traffic: created with
//! `ip netns add`, commands run inside with `ip netns exec`, deleted (with
//! every interface in it) when dropped. Traffic never leaves it.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::error::{Error, ErrorKind, Result};

/// A network namespace deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `sluice-TAG-PID` with IPv6 off (no router solicitations or
    /// neighbour discovery among the frames under test) and loopback up.
    pub fn create(tag: &str) -> Result<Netns> {
        let name = format!("sluice-{tag}-{}", std::process::id());
        run_command(Command::new("ip").args(["netns", "add", &name]), None)?;
        let ns = Netns { name };
        ns.exec(
            &[
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ],
            None,
        )?;
        ns.exec(&["ip", "link", "set", "lo", "up"], None)?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds a veth pair `a`-`b`, both up.
    pub fn veth(&self, a: &str, b: &str) -> Result<()> {
        self.exec(
            &["ip", "link", "add", a, "type", "veth", "peer", "name", b],
            None,
        )?;
        for d in [a, b] {
            self.exec(&["ip", "link", "set", d, "up"], None)?;
        }
        Ok(())
    }

    /// Runs `args` inside, with `input` on its standard input; its
    /// standard output, or its standard error as the error.
    pub fn exec(&self, args: &[&str], input: Option<&str>) -> Result<String> {
        run_command(
            Command::new("ip")
                .args(["netns", "exec", &self.name])
                .args(args),
            input,
        )
    }

    /// The index of interface `dev` inside.
    pub fn ifindex(&self, dev: &str) -> Result<u32> {
        let out = self.exec(&["cat", &format!("/sys/class/net/{dev}/ifindex")], None)?;
        out.trim().parse().map_err(|_| {
            Error::new(
                ErrorKind::NotFound,
                format!("no interface {dev} in {}", self.name),
            )
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .stderr(Stdio::null())
            .status();
    }
}

/// Runs a command to its end: its standard output, or an error with the
/// command and what it said.
pub fn run_command(cmd: &mut Command, input: Option<&str>) -> Result<String> {
    let shown = format!("{cmd:?}").replace('"', "");
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::new(ErrorKind::NotFound, format!("{shown}: {e}")))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| Error::new(ErrorKind::Other, format!("{shown}: {e}")))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::new(ErrorKind::Other, format!("{shown}: {e}")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(Error::new(
            ErrorKind::Invalid,
            format!("{shown}: {}", said.trim_end()),
        ))
    }
}
