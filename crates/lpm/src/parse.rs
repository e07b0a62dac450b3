//! Route tables from text: `ip -4 route` output and RIB dumps (`prefix
//! nexthop` lines, or `bgpdump -m` lines).

use std::net::Ipv4Addr;

use crate::{Prefix, RouteTable};

/// Bad input: which line (from 1), what it said, and why it was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}: {text:?}")]
pub struct ParseError {
    pub line: usize,
    pub text: String,
    pub reason: String,
}

fn error(line: usize, text: &str, reason: impl Into<String>) -> ParseError {
    ParseError {
        line,
        text: text.to_string(),
        reason: reason.into(),
    }
}

/// Route types of `ip route` that forward nothing: skipped.
const NOT_FORWARDING: &[&str] = &[
    "unreachable",
    "blackhole",
    "prohibit",
    "throw",
    "local",
    "broadcast",
    "anycast",
    "multicast",
    "nat",
];

/// Words of `ip route` output that stand alone (no value follows).
const FLAGS: &[&str] = &[
    "onlink",
    "linkdown",
    "dead",
    "pervasive",
    "offload",
    "trap",
    "rt_offload",
    "rt_trap",
    "rt_offload_failed",
    "notify",
];

/// The gateway and device of a route of `ip route`.
type Hop = (Option<Ipv4Addr>, Option<String>);

impl RouteTable {
    /// Parses `ip -4 route` output: `[unicast] PREFIX|default [via ADDR]
    /// [dev NAME] [key value | flag]...`, and a multipath route's `nexthop
    /// via ADDR dev NAME weight N` lines (its first next hop is taken).
    /// Unreachable, blackhole, local and other non-unicast routes are
    /// skipped, as are IPv6 routes (`ip route show table all` lists both
    /// families; the forwarding programs are IPv4's); a prefix already
    /// seen keeps its first route.
    pub fn parse_ip_route(text: &str) -> Result<RouteTable, ParseError> {
        let mut t = RouteTable::new();
        // A multipath route waits for its first `nexthop` line.
        let mut pending: Option<(usize, Prefix)> = None;
        // The `nexthop` lines of a skipped IPv6 route are skipped too.
        let mut in_v6 = false;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if in_v6 && line.starts_with("nexthop ") {
                continue;
            }
            in_v6 = is_ipv6_route(line);
            if in_v6 {
                continue;
            }
            if let Some(rest) = line.strip_prefix("nexthop ") {
                let (gw, dev) = route_words(n, raw, rest.split_whitespace())?;
                if gw.is_none() && dev.is_none() {
                    return Err(error(n, raw, "a nexthop line without via or dev"));
                }
                if let Some((_, prefix)) = pending.take() {
                    add(&mut t, prefix, gw, dev.as_deref());
                }
                continue;
            }
            if let Some((at, prefix)) = pending.take() {
                return Err(error(
                    at,
                    &prefix.to_string(),
                    "a route without via or dev and no nexthop lines",
                ));
            }
            let mut words = line.split_whitespace().peekable();
            let first = *words.peek().unwrap();
            if NOT_FORWARDING.contains(&first) {
                continue;
            }
            if first == "unicast" {
                words.next();
            }
            let Some(dest) = words.next() else {
                return Err(error(n, raw, "no destination"));
            };
            let prefix = if dest == "default" {
                Prefix::DEFAULT
            } else {
                dest.parse::<Prefix>().map_err(|e| error(n, raw, e))?
            };
            let (gw, dev) = route_words(n, raw, words)?;
            if gw.is_none() && dev.is_none() {
                pending = Some((n, prefix));
                continue;
            }
            add(&mut t, prefix, gw, dev.as_deref());
        }
        if let Some((at, prefix)) = pending {
            return Err(error(
                at,
                &prefix.to_string(),
                "a route without via or dev and no nexthop lines",
            ));
        }
        Ok(t)
    }

    /// Parses either format, told apart by the first line that is not a
    /// comment: a `bgpdump -m` line or `PREFIX ADDRESS` is a RIB dump,
    /// anything else `ip route` output.
    pub fn parse_text(text: &str) -> Result<RouteTable, ParseError> {
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'));
        let rib = first.is_some_and(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            l.starts_with("TABLE_DUMP") || (w.len() == 2 && w[1].parse::<Ipv4Addr>().is_ok())
        });
        if rib {
            RouteTable::parse_rib(text)
        } else {
            RouteTable::parse_ip_route(text)
        }
    }

    /// Parses a RIB dump: per line either `PREFIX NEXTHOP` (whitespace
    /// between; `#` comments) or a `bgpdump -m` line
    /// `TABLE_DUMP2|time|B|peer|peer_as|PREFIX|as_path|origin|NEXTHOP|...`
    /// (also `TABLE_DUMP`). IPv6 prefixes are skipped; a prefix seen
    /// before keeps its first next hop. Next hops have no device
    /// (ifindex 0: see [`crate::NextHop`]).
    pub fn parse_rib(text: &str) -> Result<RouteTable, ParseError> {
        let mut t = RouteTable::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (prefix, hop) = if line.starts_with("TABLE_DUMP") {
                let f: Vec<&str> = line.split('|').collect();
                if f.len() < 9 {
                    return Err(error(
                        n,
                        raw,
                        format!("{} fields, a bgpdump -m line has at least 9", f.len()),
                    ));
                }
                (f[5], f[8])
            } else {
                let mut w = line.split_whitespace();
                match (w.next(), w.next(), w.next()) {
                    (Some(p), Some(h), None) => (p, h),
                    _ => return Err(error(n, raw, "expected PREFIX NEXTHOP")),
                }
            };
            if prefix.contains(':') {
                continue;
            }
            let prefix = prefix.parse::<Prefix>().map_err(|e| error(n, raw, e))?;
            let gw: Ipv4Addr = hop
                .parse()
                .map_err(|_| error(n, raw, format!("next hop {hop:?} is not an IPv4 address")))?;
            add(&mut t, prefix, Some(gw), None);
        }
        Ok(t)
    }
}

/// Whether a line of `ip route` output is an IPv6 route: its destination
/// is an IPv6 prefix, or it is a default route through an IPv6 gateway
/// (`default via fe80::1 dev eth0`; an IPv4 route through an IPv6 gateway
/// reads `via inet6 fe80::1`, and is refused where it is parsed).
fn is_ipv6_route(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    let dest = words
        .iter()
        .find(|w| !NOT_FORWARDING.contains(w) && **w != "unicast" && **w != "nexthop");
    dest.is_some_and(|d| d.contains(':'))
        || (dest == Some(&"default")
            && words
                .windows(2)
                .any(|w| w[0] == "via" && w[1].contains(':')))
}

/// Adds a route unless its prefix is there (its next hop too).
fn add(t: &mut RouteTable, prefix: Prefix, gw: Option<Ipv4Addr>, dev: Option<&str>) {
    if t.get(prefix).is_none() {
        let id = t.nexthop(gw, dev);
        t.insert(prefix, id);
    }
}

/// The `via` and `dev` of a route's words after the destination.
fn route_words<'a>(
    n: usize,
    raw: &str,
    words: impl Iterator<Item = &'a str>,
) -> Result<Hop, ParseError> {
    let mut words = words;
    let (mut gw, mut dev) = (None, None);
    while let Some(w) = words.next() {
        if FLAGS.contains(&w) {
            continue;
        }
        let Some(v) = words.next() else {
            return Err(error(n, raw, format!("{w:?} without a value")));
        };
        match w {
            "via" => {
                let v = if v == "inet" {
                    words
                        .next()
                        .ok_or_else(|| error(n, raw, "via inet without an address"))?
                } else if v == "inet6" {
                    return Err(error(n, raw, "an IPv6 next hop"));
                } else {
                    v
                };
                gw = Some(
                    v.parse::<Ipv4Addr>()
                        .map_err(|_| error(n, raw, format!("via {v:?} is not an IPv4 address")))?,
                );
            }
            "dev" => dev = Some(v.to_string()),
            _ => {}
        }
    }
    Ok((gw, dev))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP_ROUTE: &str = "\
default via 10.0.0.1 dev eth0 proto dhcp src 10.0.0.5 metric 100
10.0.0.0/24 dev eth0 proto kernel scope link src 10.0.0.5 metric 100
10.1.0.0/16 via 192.0.2.1 dev eth1 proto static
10.2.0.0/24 dev eth1 proto kernel scope link src 10.2.0.1
blackhole 10.9.0.0/16 proto static
192.0.2.0/24 dev eth1 proto kernel scope link src 192.0.2.10 linkdown
198.51.100.7 via 192.0.2.1 dev eth1 onlink
203.0.113.0/24 proto static metric 20
\tnexthop via 192.0.2.1 dev eth1 weight 1
\tnexthop via 10.0.0.1 dev eth0 weight 1
default via 10.0.0.2 dev eth0 metric 200
";

    /// `ip route show table all` on a host with both families (this
    /// machine's, with a multipath IPv6 route added).
    const TABLE_ALL: &str = "default via 192.0.2.1 dev eth0
192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2
local 127.0.0.0/8 dev lo table local proto kernel scope host src 127.0.0.1
broadcast 192.0.2.255 dev eth0 table local proto kernel scope link src 192.0.2.2
fd00::/64 dev eth0 proto kernel metric 256 pref medium
2001:db8::/32 metric 1024 pref medium
\tnexthop via fd00::1 dev eth0 weight 1
\tnexthop via fd00::3 dev eth0 weight 1
default via fd00::1 dev eth0 metric 1024 pref medium
local ::1 dev lo table local proto kernel metric 0 pref medium
multicast ff00::/8 dev eth0 table local proto kernel metric 256 pref medium
";

    #[test]
    fn ipv6_routes_of_table_all_are_skipped() {
        let t = RouteTable::parse_text(TABLE_ALL).unwrap();
        assert_eq!(t.len(), 2, "the two IPv4 routes");
        let d = t.hop(t.get(Prefix::DEFAULT).unwrap()).unwrap();
        assert_eq!(d.gateway, Some(Ipv4Addr::new(192, 0, 2, 1)));
    }

    #[test]
    fn ip_route_output() {
        let t = RouteTable::parse_ip_route(IP_ROUTE).unwrap();
        let p = |s: &str| s.parse::<Prefix>().unwrap();
        let hop = |s: &str| t.hop(t.get(p(s)).unwrap()).unwrap().clone();
        assert_eq!(t.len(), 7);
        let d = hop("0.0.0.0/0");
        assert_eq!(d.gateway, Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!((d.dev.as_deref(), d.ifindex), (Some("eth0"), 1));
        let c = hop("10.2.0.0/24");
        assert_eq!(
            (c.gateway, c.dev.as_deref(), c.ifindex),
            (None, Some("eth1"), 2)
        );
        assert_eq!(
            hop("10.1.0.0/16").gateway,
            Some(Ipv4Addr::new(192, 0, 2, 1))
        );
        assert_eq!(hop("198.51.100.7/32").ifindex, 2);
        assert_eq!(
            hop("203.0.113.0/24").gateway,
            Some(Ipv4Addr::new(192, 0, 2, 1))
        );
        assert!(t.get(p("10.9.0.0/16")).is_none());
        // Shared next hops: default, 10.0.0.0/24, 10.1/16, 10.2/24.
        assert_eq!(t.nexthops().len(), 4);
    }

    #[test]
    fn bad_ip_route_lines_are_named() {
        let e = RouteTable::parse_ip_route("default via 10.0.0.1 dev eth0\n10.1.0.1/16 dev eth1\n")
            .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("host bits"), "{e}");
        let e = RouteTable::parse_ip_route("10.1.0.0/16 via fe80::1 dev eth1").unwrap_err();
        assert!(e.reason.contains("not an IPv4 address"), "{e}");
        let e = RouteTable::parse_ip_route("10.1.0.0/16 via").unwrap_err();
        assert!(e.reason.contains("without a value"), "{e}");
        let e = RouteTable::parse_ip_route("\n\n10.1.0.0/16 proto static\n").unwrap_err();
        assert_eq!(e.line, 3);
        let e = RouteTable::parse_ip_route("10.1.0.0/40 dev x").unwrap_err();
        assert!(e.reason.contains("prefix length"), "{e}");
        let e = RouteTable::parse_ip_route("10.0.0.0/8 via inet6 fe80::1 dev x").unwrap_err();
        assert!(e.reason.contains("IPv6"), "{e}");
        // Found by the `routes` fuzz target: a multipath route's next hop
        // that names neither a gateway nor a device.
        let e = RouteTable::parse_ip_route("10.0.0.0/8 proto static\n\tnexthop weight 1\n")
            .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.reason.contains("without via or dev"), "{e}");
    }

    #[test]
    fn rib_dumps() {
        let text = "\
# prefix nexthop
10.0.0.0/8 192.0.2.1
10.1.0.0/16 192.0.2.2
TABLE_DUMP2|1136073600|B|195.66.224.175|5459|3.0.0.0/8|5459 701 703 80|IGP|195.66.224.175|0|0|5459:2000|NAG||
TABLE_DUMP2|1136073600|B|195.66.224.76|5413|3.0.0.0/8|5413 701 703 80|IGP|195.66.224.76|0|0||NAG||
TABLE_DUMP2|1136073600|B|2001:7f8:4::1|5459|2001:db8::/32|5459|IGP|2001:7f8:4::1|0|0||NAG||
";
        let t = RouteTable::parse_rib(text).unwrap();
        assert_eq!(t.len(), 3);
        let h = t.hop(t.get("3.0.0.0/8".parse().unwrap()).unwrap()).unwrap();
        assert_eq!(h.gateway, Some(Ipv4Addr::new(195, 66, 224, 175)));
        assert_eq!(h.ifindex, 0);
        for (bad, why) in [
            ("10.0.0.0/8\n", "expected PREFIX NEXTHOP"),
            ("10.0.0.0/8 1.2.3.4 x\n", "expected PREFIX NEXTHOP"),
            ("10.0.0.0/8 nowhere\n", "not an IPv4 address"),
            ("TABLE_DUMP2|1|B|x\n", "fields"),
            ("ten/8 1.2.3.4\n", "not an IPv4 address"),
        ] {
            let e = RouteTable::parse_rib(&format!("1.0.0.0/8 1.1.1.1\n{bad}")).unwrap_err();
            assert_eq!(e.line, 2, "{bad}");
            assert!(e.reason.contains(why), "{bad}: {e}");
        }
    }
}

#[cfg(test)]
mod either_format {
    use crate::RouteTable;

    #[test]
    fn told_apart_by_the_first_line() {
        let ip = RouteTable::parse_text("# routes\ndefault via 10.0.0.1 dev eth0\n").unwrap();
        assert_eq!(ip.hop(ip.routes()[0].1).unwrap().ifindex, 1);
        let rib = RouteTable::parse_text("10.0.0.0/8 192.0.2.1\n").unwrap();
        assert_eq!(rib.hop(rib.routes()[0].1).unwrap().ifindex, 0);
        let dump = "TABLE_DUMP2|1|B|192.0.2.9|65000|10.1.0.0/16|65000 1|IGP|192.0.2.9|0|0||NAG||\n";
        assert_eq!(RouteTable::parse_text(dump).unwrap().len(), 1);
        assert!(RouteTable::parse_text("10.0.0.0/8 via\n").is_err());
    }
}
