//! The kernel's own tc (iproute2's `tc` command) under a configuration
//! of `tc` command lines, as `sluice tc` keeps them: the lines pushed into
//! the kernel all or nothing ([`push`], `sluice tc --kernel`), run as a
//! batch in a network namespace ([`batch`]), and the kernel's tc timed on
//! a veth pair of a namespace of its own ([`kernel_rate`], `sluice bench
//! --tc`). Choosing a device's lines is the tc crate's (`tc::lines_for`).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};
use crate::netns::{Netns, run_command};
use crate::packet_socket::PacketSocket;

/// The peer of a device in a namespace: `DEV.p`.
pub fn peer(dev: &str) -> String {
    format!("{dev}.p")
}

/// Pushes `lines`, the lines of a configuration for `dev`, into the
/// kernel with the real `tc` (`tc [-n NETNS] -batch -`), all or nothing:
/// a device that has a clsact qdisc already is refused unless `replace`
/// (then it goes first), and when tc refuses a line the qdisc is removed
/// again. The lines pushed.
pub fn push(lines: &[String], dev: &str, netns: Option<&str>, replace: bool) -> Result<usize> {
    if !lines.iter().any(|l| l.trim_start().starts_with("qdisc")) {
        return Err(Error::new(
            ErrorKind::Invalid,
            format!("the configuration has no qdisc for {dev} (qdisc add dev {dev} clsact)"),
        ));
    }
    let tc = |args: &[&str], input: Option<&str>| -> Result<String> {
        let mut cmd = Command::new("tc");
        if let Some(ns) = netns {
            cmd.args(["-n", ns]);
        }
        run_command(cmd.args(args), input)
    };
    let qdiscs = tc(&["qdisc", "show", "dev", dev], None)?;
    if qdiscs.contains("qdisc clsact") {
        if !replace {
            return Err(Error::new(
                ErrorKind::Busy,
                format!(
                    "{dev} has a clsact qdisc in the kernel already: remove it \
                     (tc qdisc del dev {dev} clsact) or give --replace"
                ),
            ));
        }
        tc(&["qdisc", "del", "dev", dev, "clsact"], None)?;
    }
    let batch = lines.join("\n") + "\n";
    if let Err(e) = tc(&["-batch", "-"], Some(&batch)) {
        let _ = tc(&["qdisc", "del", "dev", dev, "clsact"], None);
        return Err(refused(&batch, &e));
    }
    Ok(lines.len())
}

/// Runs the configuration `lines` with the real `tc` inside `ns`
/// (`tc -batch -`); a line tc refuses is named in the error.
pub fn batch(ns: &Netns, lines: &str) -> Result<()> {
    ns.exec(&["tc", "-batch", "-"], Some(lines))
        .map(drop)
        .map_err(|e| refused(lines, &e))
}

/// What [`kernel_rate`] measured: the packets the arrival hook saw and
/// the time per packet of the whole path (the sender's system call, the
/// veth, the backlog, tc at ingress, the stack dropping the frame).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelRate {
    pub packets: u64,
    pub ns_per_packet: f64,
}

/// Sends `frames` round and round for about `time` into `dev`'s ingress
/// under the configuration `lines`, in the kernel (a namespace of its own,
/// `dev` one end of a veth pair), and times it. Needs root.
pub fn kernel_rate(
    lines: &str,
    dev: &str,
    frames: &[Vec<u8>],
    time: Duration,
) -> Result<KernelRate> {
    if !crate::privileged() {
        return Err(Error::new(
            ErrorKind::Permission,
            "timing the kernel's tc needs root",
        ));
    }
    if frames.is_empty() {
        return Err(Error::new(ErrorKind::Invalid, "no frames"));
    }
    let ns = Netns::create("tcbench")?;
    ns.veth(dev, &peer(dev))?;
    batch(&ns, lines)?;
    let sender = ns.ifindex(&peer(dev))?;
    let name = ns.name().to_string();
    let elapsed = std::thread::scope(|s| {
        s.spawn(|| -> Result<Duration> {
            crate::netdev::enter_netns(&name)?;
            let sock = PacketSocket::open(sender)?;
            let burst: Vec<&[u8]> = frames.iter().map(Vec::as_slice).cycle().take(64).collect();
            let start = Instant::now();
            while start.elapsed() < time {
                for _ in 0..16 {
                    sock.send_batch(&burst)?;
                }
            }
            Ok(start.elapsed())
        })
        .join()
        .map_err(|_| Error::new(ErrorKind::Other, "the sending thread failed"))?
    })?;
    // What the device received (a clsact qdisc without filters is not
    // even run, so it counts nothing).
    let rx = ns.exec(
        &[
            "cat",
            &format!("/sys/class/net/{dev}/statistics/rx_packets"),
        ],
        None,
    )?;
    let packets: u64 = rx
        .trim()
        .parse()
        .map_err(|_| Error::new(ErrorKind::Other, format!("{dev}'s rx_packets: {rx}")))?;
    if packets == 0 {
        return Err(Error::new(
            ErrorKind::Other,
            format!("no packet reached {dev}'s ingress"),
        ));
    }
    Ok(KernelRate {
        packets,
        ns_per_packet: elapsed.as_nanos() as f64 / packets as f64,
    })
}

/// tc's error for a batch, with the line it names (`Command failed -:N`).
fn refused(lines: &str, e: &Error) -> Error {
    let said = e.message.as_str();
    let said = said.split_once(": ").map_or(said, |(_, s)| s);
    let line = said
        .rsplit_once("Command failed -:")
        .and_then(|(_, n)| n.trim().parse::<usize>().ok())
        .and_then(|n| lines.lines().nth(n.checked_sub(1)?));
    let said = said
        .lines()
        .filter(|l| !l.starts_with("Command failed"))
        .collect::<Vec<_>>()
        .join("; ");
    let hint =
        if said.contains("Failed to load TC action module") || said.contains("Unknown filter") {
            " (this kernel lacks that classifier or action: its tc has u32, bpf and mirred)"
        } else {
            ""
        };
    let message = match line {
        Some(l) => format!("the kernel's tc refused `{l}`: {said}{hint}"),
        None => format!("the kernel's tc refused the configuration: {said}{hint}"),
    };
    Error::new(ErrorKind::Invalid, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_line_tc_named() {
        let lines = "qdisc add dev a clsact\nfilter add dev a ingress flower action drop\n";
        let said = Error::new(
            ErrorKind::Invalid,
            "tc -batch -: Unknown filter \"flower\", hence option \"action\" is unparsable\nCommand failed -:2",
        );
        assert_eq!(
            refused(lines, &said).to_string(),
            "the kernel's tc refused `filter add dev a ingress flower action drop`: \
             Unknown filter \"flower\", hence option \"action\" is unparsable \
             (this kernel lacks that classifier or action: its tc has u32, bpf and mirred)"
        );
        let vague = Error::new(ErrorKind::Invalid, "tc -batch -: RTNETLINK answers: nope");
        assert_eq!(
            refused(lines, &vague).to_string(),
            "the kernel's tc refused the configuration: RTNETLINK answers: nope"
        );
    }

    #[test]
    fn push_needs_a_qdisc_line() {
        let e = push(
            &["filter add dev a ingress matchall".into()],
            "a",
            None,
            false,
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        assert_eq!(
            e.to_string(),
            "the configuration has no qdisc for a (qdisc add dev a clsact)"
        );
    }
}
