//! Network namespaces of a test's own, with veth pairs: made by the test,
//! deleted when dropped (also when the test fails), traffic never leaving
//! them. Built on the production `kernel::netns` (`sluice tc --netns` and
//! the differential tc runs use it too), so there is one way to make one.
//! The kernel's counters of a namespace's devices (drops among them) are
//! read by namespace name, so that any test's namespaces can be asked.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::process::Command;

/// A namespace `sluice-TAG-PID` with IPv6 off (no router solicitations or
/// neighbour discovery among the frames under test) and loopback up;
/// deleted, with every interface in it, on drop. It derefs to its name,
/// which is what `ip -n` and `sluice --netns` take.
#[derive(Debug)]
pub struct Netns(kernel::netns::Netns);

impl Netns {
    pub fn new(tag: &str) -> Netns {
        Netns(kernel::netns::Netns::create(tag).unwrap_or_else(|e| panic!("namespace {tag}: {e}")))
    }

    /// A namespace with the veth pair `a`-`b` in it, both up.
    pub fn with_veth(tag: &str, a: &str, b: &str) -> Netns {
        let ns = Netns::new(tag);
        ns.veth(a, b);
        ns
    }

    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// The production namespace underneath.
    pub fn kernel(&self) -> &kernel::netns::Netns {
        &self.0
    }

    /// Adds a veth pair `a`-`b` inside, both up.
    pub fn veth(&self, a: &str, b: &str) {
        self.0
            .veth(a, b)
            .unwrap_or_else(|e| panic!("veth {a}-{b} in {}: {e}", self.name()))
    }

    /// Adds veth `here` in this namespace with its peer `there` in `peer`,
    /// both up; with `queues` RX and TX queues on each end, or as many as
    /// the kernel gives a veth by default (one per possible CPU).
    pub fn veth_to(&self, here: &str, peer: &Netns, there: &str, queues: Option<u32>) {
        let q = queues.map(|q| q.to_string());
        let end = |dev, ns| {
            let mut args = vec![dev, "netns", ns];
            if let Some(q) = &q {
                args.extend(["numtxqueues", q.as_str(), "numrxqueues", q.as_str()]);
            }
            args
        };
        let mut ip = Command::new("ip");
        ip.args(["link", "add"])
            .args(end(here, self.name()))
            .args(["type", "veth", "peer", "name"])
            .args(end(there, peer.name()));
        kernel::netns::run_command(&mut ip, None).unwrap_or_else(|e| panic!("{e}"));
        self.must(&["ip", "link", "set", here, "up"]);
        peer.must(&["ip", "link", "set", there, "up"]);
    }

    /// Runs `args` inside: its standard output, or (as the error) just
    /// what it wrote to standard error, for comparing with sluice's words.
    pub fn run(&self, args: &[&str]) -> Result<String, CommandFailed> {
        let out = in_ns(self.name(), args);
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(CommandFailed {
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            })
        }
    }

    /// Runs `args` inside, which must succeed: its standard output.
    pub fn must(&self, args: &[&str]) -> String {
        self.run(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// The index of interface `dev` inside.
    pub fn ifindex(&self, dev: &str) -> u32 {
        self.0.ifindex(dev).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs `f` on a thread inside the namespace (sockets opened there stay
    /// there, and so do threads it spawns).
    pub fn enter<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|s| {
            s.spawn(|| {
                kernel::netdev::enter_netns(self.name()).unwrap();
                f()
            })
            .join()
            .unwrap()
        })
    }

    /// Sends `frames` out of interface `dev` inside (a packet socket
    /// through the qdisc layer), a few dozen at a time so that the peer's
    /// backlog never overflows, then waits for them to land.
    pub fn send_frames(&self, dev: &str, frames: &[Vec<u8>]) {
        let index = self.ifindex(dev);
        self.enter(|| {
            let sock = kernel::PacketSocket::through_qdisc(index).unwrap();
            for (i, f) in frames.iter().enumerate() {
                assert!(sock.send(f).unwrap(), "frame {i} refused by {dev}");
                if i % 50 == 49 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

impl Deref for Netns {
    type Target = str;

    fn deref(&self) -> &str {
        self.name()
    }
}

impl AsRef<std::ffi::OsStr> for Netns {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.name().as_ref()
    }
}

impl fmt::Display for Netns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Two namespaces joined by a veth pair: `a` holds the sending end, `b`
/// the receiving one; no addresses (no ARP), so only the test's own
/// frames cross.
#[derive(Debug)]
pub struct Pair {
    pub a: Netns,
    pub b: Netns,
}

impl Pair {
    /// Namespaces `sluice-TAGa-PID` with veth `va` and `sluice-TAGb-PID`
    /// with its peer `vb`, as many queues as a veth gets by default.
    pub fn new(tag: &str, va: &str, vb: &str) -> Pair {
        Pair::make(tag, va, vb, None)
    }

    /// The same, with `queues` RX and TX queues on each end.
    pub fn with_queues(tag: &str, va: &str, vb: &str, queues: u32) -> Pair {
        Pair::make(tag, va, vb, Some(queues))
    }

    fn make(tag: &str, va: &str, vb: &str, queues: Option<u32>) -> Pair {
        let a = Netns::new(&format!("{tag}a"));
        let b = Netns::new(&format!("{tag}b"));
        a.veth_to(va, &b, vb, queues);
        Pair { a, b }
    }
}

/// Runs `args` in namespace `ns` (any test's, by name), which must start:
/// its output, whatever its status.
pub fn in_ns(ns: &str, args: &[&str]) -> std::process::Output {
    Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("ip netns exec {ns} {args:?}: {e}"))
}

/// Counter `name` of `/sys/class/net/DEV/statistics` in `ns` (`ip netns
/// exec` mounts the namespace's own /sys): `rx_dropped`, `tx_dropped`
/// (frames a veth end could not hand to its peer)...
pub fn dev_stat(ns: &str, dev: &str, name: &str) -> u64 {
    let out = in_ns(
        ns,
        &["cat", &format!("/sys/class/net/{dev}/statistics/{name}")],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{name} of {dev} in {ns}: {out:?}"))
}

/// Frames a veth pair dropped: the receiving end's `rx_dropped` and the
/// sending end's `tx_dropped`, both in `ns`.
pub fn veth_drops(ns: &str, rx: &str, tx: &str) -> u64 {
    dev_stat(ns, rx, "rx_dropped") + dev_stat(ns, tx, "tx_dropped")
}

/// A veth end's counters (`ethtool -S`): name to value.
pub fn veth_stats(ns: &str, dev: &str) -> BTreeMap<String, u64> {
    let out = in_ns(ns, &["ethtool", "-S", dev]);
    assert!(out.status.success(), "ethtool -S {dev} in {ns}: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// The sum over a veth end's queues of its `ethtool -S` counter
/// `{prefix}N{suffix}` (`tx_queue_`, `_xdp_xmit_errors`).
pub fn queue_sum(ns: &str, dev: &str, prefix: &str, suffix: &str) -> u64 {
    veth_stats(ns, dev)
        .iter()
        .filter(|(k, _)| {
            k.strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(suffix))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(|(_, v)| v)
        .sum()
}

/// Frames sent into veth end `dev` as XDP frames (`sluice gen --method
/// live` redirects them there) that its peer refused because the peer's
/// XDP ring was full: the kernel's `tx_queue_N_xdp_xmit_errors`.
pub fn xmit_refused(ns: &str, dev: &str) -> u64 {
    queue_sum(ns, dev, "tx_queue_", "_xdp_xmit_errors")
}

/// A command run in a namespace that exited with a failure: what it wrote
/// to standard error (its `Display`), to compare with sluice's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandFailed {
    pub stderr: String,
}

impl std::fmt::Display for CommandFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.stderr)
    }
}

impl std::error::Error for CommandFailed {}
