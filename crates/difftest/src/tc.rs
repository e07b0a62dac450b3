//! A tc configuration in the kernel and in sluice, over the same frames:
//! the configuration's `tc` lines go to the real `tc` in a network
//! namespace of this run's own, where each device the lines name is one
//! end of a veth pair (its peer `DEV.p`); the frames go into the arrival
//! device's hook (sent from the peer for ingress, from the device itself,
//! through its qdisc, for egress) and, the same ones, through the
//! configuration in sluice ([`tc::Runner`]). Then both sides'
//! `tc -s filter show` are read, counter by counter (every `Sent N bytes
//! M pkt` line in show order: actions, and the rules that count), and the
//! clsact qdiscs' packet and drop counts. Needs root.

use std::time::Duration;

use kernel::PacketSocket;
use kernel::netns::Netns;
use kernel::tc::peer;
use runtime::{PacketHook, PacketMeta, TcAction, Verdict};
use serde::Serialize;
use tc::{ClsactHook, Config, Runner, ShowOptions};

use crate::error::DiffError;

/// Frames sent before a pause, and the pause: the veth peer's backlog
/// (`netdev_max_backlog`) must not overflow, or the kernel would never see
/// some frames.
const BURST: usize = 32;
const PAUSE: Duration = Duration::from_millis(2);

/// Packets and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    pub packets: u64,
    pub bytes: u64,
}

/// One counter of one hook's show output, on both sides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counter {
    /// The rule (`pref P HANDLE`) and the line it counts for (the
    /// action's or rule's line above it).
    pub what: String,
    pub kernel: Count,
    pub sluice: Count,
}

/// One device's hook with filters.
#[derive(Clone, Debug, Serialize)]
pub struct HookDiff {
    pub dev: String,
    pub hook: &'static str,
    pub counters: Vec<Counter>,
    /// `tc -s filter show` of each side, times and program ids left out.
    pub kernel_show: String,
    pub sluice_show: String,
}

/// What the kernel and sluice did with the same frames.
#[derive(Clone, Debug, Serialize)]
pub struct TcDiff {
    pub namespace: String,
    /// Frames sent (and run in sluice).
    pub frames: u64,
    /// Frames neither side saw: under 14 bytes or over the link's size.
    pub unsendable: u64,
    pub hooks: Vec<HookDiff>,
    /// The arrival device's clsact qdisc: (packets, drops).
    pub kernel_qdisc: (u64, u64),
    pub sluice_qdisc: (u64, u64),
}

impl TcDiff {
    /// Every counter and the qdisc counts agree, and both sides show the
    /// filters alike.
    pub fn agrees(&self) -> bool {
        self.kernel_qdisc == self.sluice_qdisc
            && self.differing().next().is_none()
            && self.hooks.iter().all(|h| h.kernel_show == h.sluice_show)
    }

    /// The counters that differ, with their hook.
    pub fn differing(&self) -> impl Iterator<Item = (&HookDiff, &Counter)> {
        self.hooks.iter().flat_map(|h| {
            h.counters
                .iter()
                .filter(|c| c.kernel != c.sluice)
                .map(move |c| (h, c))
        })
    }
}

/// Runs `frames` into `dev`'s `hook` under the configuration `lines` (tc
/// command lines, as `sluice tc` keeps them), in the kernel and in sluice.
pub fn tc_diff(
    lines: &str,
    dev: &str,
    hook: ClsactHook,
    frames: &[Vec<u8>],
) -> Result<TcDiff, DiffError> {
    if !kernel::privileged() {
        return Err(DiffError::NotRoot);
    }
    // Every device a line names (mirred's targets among them): the
    // namespace will have each, so sluice's check knows them all first.
    let mut names = vec![dev.to_string()];
    for l in lines.lines() {
        let w = tc::words(l.split('#').next().unwrap_or(""));
        for pair in w.windows(2) {
            if pair[0] == "dev" && !names.contains(&pair[1]) {
                names.push(pair[1].clone());
            }
        }
    }
    let mut probe = Config::default();
    for n in &names {
        probe.devices.index(n);
    }
    probe.run_batch(lines, ShowOptions::default())?;
    if let Some(long) = names.iter().find(|n| n.len() > 13) {
        return Err(DiffError::LongDeviceName(long.clone()));
    }
    let ns = Netns::create("tcdiff")?;
    let largest = frames.iter().map(Vec::len).max().unwrap_or(0);
    let mtu = largest.saturating_sub(14).clamp(1500, 65535);
    let mut config = Config::default();
    for n in &names {
        ns.veth(n, &peer(n))?;
        for d in [n.clone(), peer(n)] {
            ns.exec(&["ip", "link", "set", &d, "mtu", &mtu.to_string()], None)?;
        }
        config.devices.set(n, ns.ifindex(n)?);
    }
    config.run_batch(lines, ShowOptions::default())?;
    kernel::tc::batch(&ns, lines)?;

    let sender = match hook {
        ClsactHook::Ingress => peer(dev),
        ClsactHook::Egress => dev.to_string(),
    };
    let sender = ns.ifindex(&sender)?;
    let sent = send(ns.name(), sender, frames, mtu)?;
    std::thread::sleep(Duration::from_millis(300));

    let mut runner = Runner::new(config, dev, hook);
    let (mut packets, mut drops) = (0, 0);
    for (i, &f) in sent.iter().enumerate() {
        let meta = PacketMeta {
            timestamp_ns: i as u64,
            ..PacketMeta::default()
        };
        let out = runner.run(f, &meta)?;
        packets += 1;
        drops += u64::from(out.verdict == Verdict::Tc(TcAction::Shot));
    }
    let mut config = runner.into_config();
    let mut hooks = Vec::new();
    for (d, _) in probe.qdiscs() {
        for h in [ClsactHook::Ingress, ClsactHook::Egress] {
            let words = ["filter", "show", "dev", d, h.name()];
            let sluice = config.run(
                &words,
                ShowOptions {
                    stats: true,
                    json: false,
                },
            )?;
            if sluice.trim().is_empty() {
                continue;
            }
            let kernel = ns.exec(&["tc", "-s", "filter", "show", "dev", d, h.name()], None)?;
            hooks.push(hook_diff(d, h, &kernel, &sluice));
        }
    }
    let qdisc = ns.exec(
        &["tc", "-s", "qdisc", "show", "dev", dev, hook.name()],
        None,
    )?;
    Ok(TcDiff {
        namespace: ns.name().to_string(),
        frames: sent.len() as u64,
        unsendable: (frames.len() - sent.len()) as u64,
        hooks,
        kernel_qdisc: qdisc_counts(&qdisc)?,
        sluice_qdisc: (packets, drops),
    })
}

/// Sends the frames one at a time from `ifindex` inside `ns`; the ones
/// that left (not those under 14 bytes or too long for the link).
fn send<'f>(
    ns: &str,
    ifindex: u32,
    frames: &'f [Vec<u8>],
    mtu: usize,
) -> Result<Vec<&'f [u8]>, DiffError> {
    let sendable: Vec<&[u8]> = frames
        .iter()
        .map(Vec::as_slice)
        .filter(|f| f.len() >= 14 && f.len() <= mtu + 18)
        .collect();
    let ns = ns.to_string();
    std::thread::scope(|s| {
        s.spawn(|| -> Result<Vec<&'f [u8]>, DiffError> {
            kernel::netdev::enter_netns(&ns)?;
            let sock = PacketSocket::through_qdisc(ifindex)?;
            let mut left = Vec::new();
            for (i, f) in sendable.iter().enumerate() {
                if sock.send(f)? {
                    left.push(*f);
                }
                if i % BURST == BURST - 1 {
                    std::thread::sleep(PAUSE);
                }
            }
            Ok(left)
        })
        .join()
        .map_err(|_| DiffError::Sender)?
    })
}

/// A show output without what is each side's own: times since install
/// and use, and program ids and tags.
fn normalized(show: &str) -> String {
    show.lines()
        .map(|l| {
            let l = match l.find(" not_in_hw id ") {
                Some(at) => &l[..at],
                None => l,
            };
            let l = match l.find(" installed ") {
                Some(at) => &l[..at],
                None => l,
            };
            l.trim_end().to_string()
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `Sent B bytes P pkt` lines with the nearest line above that is not a
/// counter line.
fn counters(show: &str) -> Vec<(String, Count)> {
    let mut out = Vec::new();
    let (mut rule, mut what) = (String::new(), String::new());
    for l in show.lines() {
        let t = l.trim();
        if t.starts_with("filter ") {
            // `... pref P KIND chain C fh H ...`: the rule its actions follow.
            let w: Vec<&str> = t.split_whitespace().collect();
            let after = |k: &str| w.iter().position(|x| *x == k).and_then(|i| w.get(i + 1));
            if let (Some(p), Some(h)) = (after("pref"), after("fh").or(after("handle"))) {
                rule = format!("pref {p} {h}: ");
            }
            what = t.to_string();
        } else if let Some(rest) = t.strip_prefix("Sent ") {
            let w: Vec<&str> = rest.split_whitespace().collect();
            if let [bytes, "bytes", pkts, "pkt", ..] = w.as_slice()
                && let (Ok(b), Ok(p)) = (bytes.parse(), pkts.parse())
            {
                out.push((
                    what.clone(),
                    Count {
                        packets: p,
                        bytes: b,
                    },
                ));
            }
        } else if !t.is_empty()
            && !["backlog", "Action statistics", "index "]
                .iter()
                .any(|p| t.starts_with(p))
        {
            what = format!("{rule}{t}");
        }
    }
    out
}

fn hook_diff(dev: &str, hook: ClsactHook, kernel: &str, sluice: &str) -> HookDiff {
    let (k, s) = (counters(kernel), counters(sluice));
    let n = k.len().max(s.len());
    let counters = (0..n)
        .map(|i| {
            let what = s
                .get(i)
                .or(k.get(i))
                .map(|c| c.0.clone())
                .unwrap_or_default();
            Counter {
                what,
                kernel: k.get(i).map_or(Count::default(), |c| c.1),
                sluice: s.get(i).map_or(Count::default(), |c| c.1),
            }
        })
        .collect();
    HookDiff {
        dev: dev.to_string(),
        hook: hook.name(),
        counters,
        kernel_show: normalized(kernel),
        sluice_show: normalized(sluice),
    }
}

/// The `Sent B bytes P pkt (dropped D, ...)` of a qdisc: (P, D).
fn qdisc_counts(text: &str) -> Result<(u64, u64), DiffError> {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("Sent "))
        .ok_or_else(|| DiffError::NoQdiscCounters(text.to_string()))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let num = |i: usize| -> Result<u64, DiffError> {
        w.get(i)
            .and_then(|s| s.trim_end_matches(',').parse().ok())
            .ok_or_else(|| DiffError::QdiscCounters(line.to_string()))
    };
    Ok((num(3)?, num(6)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_pair_with_the_line_above() {
        let show = "filter protocol ip pref 1 u32 chain 0 fh 800::800 order 2048 key ht 800 bkt 0 terminal flowid ??? not_in_hw\n  match 00060000/00ff0000 at 8\n\taction order 1: mirred (Egress Mirror to device vc) pipe\n \tindex 1 ref 1 bind 1 installed 3 sec used 2 sec\n \tAction statistics:\n\tSent 120 bytes 2 pkt (dropped 0, overlimits 0 requeues 0)\n\tbacklog 0b 0p requeues 0\n";
        let c = counters(show);
        assert_eq!(
            c,
            vec![(
                "pref 1 800::800: action order 1: mirred (Egress Mirror to device vc) pipe"
                    .to_string(),
                Count {
                    packets: 2,
                    bytes: 120
                }
            )]
        );
        assert!(!normalized(show).contains("installed"));
    }

    #[test]
    fn qdisc_counts_read_packets_and_drops() {
        let q = "qdisc clsact ffff: parent ffff:fff1\n Sent 4242 bytes 40 pkt (dropped 3, overlimits 0 requeues 0)\n";
        assert_eq!(qdisc_counts(q).unwrap(), (40, 3));
        assert!(matches!(
            qdisc_counts("qdisc clsact"),
            Err(DiffError::NoQdiscCounters(_))
        ));
    }
}
