//! Flow accounting against tshark, frame by frame and flow by flow, on
//! every capture of tcpdump's test suite: each frame made Ethernet as
//! sluice's pipeline makes it (`capture::to_ethernet`: raw IP, BSD loopback,
//! Linux cooked, 802.11 data), then `observe`d. For each frame tshark
//! dissects as IPv4 or IPv6 right behind those link layers (VLAN tags
//! allowed), the flow key and IP length are tshark's; a frame tshark does
//! not dissect so gives `observe` nothing; the per-flow packet and byte
//! totals of a [`FlowTable`] are the sums of tshark's frames. Frames
//! tshark calls malformed are counted and left out on both sides.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use testkit::captures;

use monitor::{FlowKey, FlowTable, Observed, TableOptions, observe};

mod common;
use common::field;

/// tshark's view of each frame: its number, whether it is malformed, and
/// its facts when it dissects IP right behind the link layers sluice
/// converts.
fn tshark(path: &std::path::Path) -> Vec<(u64, bool, Option<Observed>)> {
    common::lines(path)
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let number: u64 = field(&f, "frame.number")?.parse().ok()?;
            let malformed = field(&f, "_ws.malformed").is_some();
            Some((number, malformed, facts(&f)))
        })
        .collect()
}

fn num<T: std::str::FromStr>(s: Option<&str>) -> Option<T> {
    let s = s?;
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok()?.to_string().parse().ok(),
        None => s.parse().ok(),
    }
}

fn facts(f: &[&str]) -> Option<Observed> {
    let get = |name: &str| field(f, name);
    let chain: Vec<&str> = get("frame.protocols")?.split(':').collect();
    // (link layers sluice converts)* then ip or ipv6, with at most two
    // VLAN tags.
    const LINK: &[&str] = &[
        "eth",
        "ethertype",
        "vlan",
        "sll",
        "null",
        "raw",
        "wlan",
        "wlan_radio",
        "radiotap",
        "llc",
        "prism",
        "ppp",
        "chdlc",
        "ipnet",
    ];
    let i = chain.iter().position(|p| *p == "ip" || *p == "ipv6")?;
    if !chain[..i].iter().all(|p| LINK.contains(p))
        || chain[..i].iter().filter(|p| **p == "vlan").count() > 2
    {
        return None;
    }
    let v4 = chain[i] == "ip";
    let mut i = i + 1;
    while chain.get(i).is_some_and(|p| p.starts_with("ipv6.")) {
        i += 1;
    }
    let next = chain.get(i).copied();
    let (src, dst, bytes): (IpAddr, IpAddr, u32) = if v4 {
        (
            get("ip.src")?.parse().ok()?,
            get("ip.dst")?.parse().ok()?,
            num(get("ip.len"))?,
        )
    } else {
        (
            get("ipv6.src")?.parse().ok()?,
            get("ipv6.dst")?.parse().ok()?,
            num::<u32>(get("ipv6.plen"))? + 40,
        )
    };
    // The transport's fields where the capture holds them (else 0, as a
    // header cut short gives no ports).
    let ports = |p: &str| -> (u16, u16) {
        match (
            num(get(&format!("{p}.srcport"))),
            num(get(&format!("{p}.dstport"))),
        ) {
            (Some(s), Some(d)) => (s, d),
            _ => (0, 0),
        }
    };
    let icmp = |p: &str| -> u16 {
        match (
            num::<u16>(get(&format!("{p}.type"))),
            num::<u16>(get(&format!("{p}.code"))),
        ) {
            (Some(t), Some(c)) => t << 8 | c,
            _ => 0,
        }
    };
    let (protocol, src_port, dst_port, tcp_flags) = match next {
        Some("tcp") => {
            let (s, d) = ports("tcp");
            (6, s, d, num(get("tcp.flags")).unwrap_or(0))
        }
        Some("udp") => {
            let (s, d) = ports("udp");
            (17, s, d, 0)
        }
        Some("sctp") => {
            let (s, d) = ports("sctp");
            (132, s, d, 0)
        }
        Some("icmp") if v4 => (1, 0, icmp("icmp"), 0),
        Some("icmpv6") if !v4 => (58, 0, icmp("icmpv6"), 0),
        // Another protocol (or a fragment tshark leaves as data): the
        // number IPv4 gives; IPv6's after its extension headers is not
        // a field, so leave the frame out.
        _ if v4 => (num(get("ip.proto"))?, 0, 0, 0),
        _ => return None,
    };
    Some(Observed {
        key: FlowKey {
            src,
            dst,
            protocol,
            src_port,
            dst_port,
        },
        bytes,
        tcp_flags,
    })
}

#[test]
fn flows_agree_with_tshark_on_every_capture() {
    let (mut frames, mut compared, mut flows, mut malformed) = (0u64, 0u64, 0u64, 0u64);
    let mut disagreements = Vec::new();
    // tshark over every capture, on every core (its start-up dominates).
    let dissected: std::collections::HashMap<PathBuf, Vec<(u64, bool, Option<Observed>)>> =
        testkit::on_every_capture(tshark);
    for path in captures() {
        let Ok(mut src) = capture::PcapSource::open(&path) else {
            continue;
        };
        let theirs = &dissected[&path];
        let mut ours = Vec::new();
        while let Some(Ok(r)) = src.next_raw() {
            let (frame, kind) = capture::to_ethernet(r.linktype, r.data);
            let o = match kind {
                capture::LinkKind::Foreign(_) => None,
                _ => observe(&frame),
            };
            ours.push((o, r.timestamp_ns, r.linktype));
        }
        let mut table = FlowTable::new(TableOptions {
            capacity: usize::MAX,
            idle_timeout_ns: u64::MAX,
            active_timeout_ns: u64::MAX,
        });
        let mut ended = Vec::new();
        let mut want: BTreeMap<FlowKey, (u64, u64)> = BTreeMap::new();
        for (n, bad, t) in theirs {
            let Some((o, ts, linktype)) = ours.get(*n as usize - 1) else {
                continue;
            };
            frames += 1;
            if *bad {
                malformed += 1;
                continue;
            }
            match (o, t) {
                (Some(o), Some(t)) if o.key == t.key && o.bytes == t.bytes => {
                    compared += 1;
                    let w = want.entry(t.key).or_default();
                    w.0 += 1;
                    w.1 += u64::from(t.bytes);
                    table.account(o, *ts, &mut ended);
                }
                (None, None) => {}
                // IPv6 whose transport tshark does not name: left out.
                (Some(o), None) if o.key.src.is_ipv6() => {}
                // IP over ARCNET, which tshark does not decode (tcpdump
                // does: crates/capture/tests/ip_links.rs compares with it).
                (Some(_), None) if matches!(linktype, 7 | 129) => {}
                _ => disagreements.push(format!(
                    "{} frame {n}: sluice {o:?}, tshark {t:?}",
                    path.display()
                )),
            }
        }
        table.flush(&mut ended);
        let mut got: BTreeMap<FlowKey, (u64, u64)> = BTreeMap::new();
        for e in ended {
            let g = got.entry(e.flow.key).or_default();
            g.0 += e.flow.packets;
            g.1 += e.flow.bytes;
        }
        assert_eq!(got, want, "{}", path.display());
        flows += want.len() as u64;
    }
    println!(
        "{frames} frames of {} captures: {compared} IP frames alike in sluice and tshark, \
         {flows} flows with the same packet and byte totals; {malformed} frames tshark calls \
         malformed left out; {} frames disagree",
        captures().len(),
        disagreements.len()
    );
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    assert!(compared > 1500, "{compared}");
}
