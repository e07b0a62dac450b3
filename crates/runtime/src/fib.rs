//! A user-space forwarding table for `bpf_fib_lookup`, read from a file of
//! `ip link` / `ip neigh` / `ip route` style lines:
//!
//! ```text
//! link eth0 index 2 address 02:00:00:00:00:02 mtu 1500
//! neigh 192.168.1.1 dev eth0 lladdr 02:00:00:00:01:01
//! 10.0.0.0/8 via 192.168.1.1 dev eth0
//! default via 192.168.1.1 dev eth0
//! blackhole 10.66.0.0/16
//! ```

use std::collections::HashMap;
use std::net::IpAddr;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub name: String,
    pub index: u32,
    pub mac: [u8; 6],
    pub mtu: u32,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RouteKind {
    Unicast,
    Blackhole,
    Unreachable,
    Prohibit,
}

/// One route of the table: a prefix, where it leads (a gateway, a device)
/// and its kind (`FibRoute`, not `Route`: `pipeline::Route` is where a
/// verdict sends a packet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FibRoute {
    pub prefix: IpAddr,
    pub len: u8,
    pub via: Option<IpAddr>,
    pub dev: Option<u32>,
    pub kind: RouteKind,
}

#[derive(Clone, Debug, Default)]
pub struct Fib {
    pub links: Vec<Link>,
    pub neighbours: HashMap<IpAddr, [u8; 6]>,
    pub routes: Vec<FibRoute>,
}

/// Why a forwarding-table file cannot be read: the line (from 1) and
/// what is wrong with it.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct FibError {
    pub line: usize,
    pub problem: FibProblem,
}

/// What is wrong with a line of a forwarding-table file.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum FibProblem {
    #[error("link needs a name")]
    LinkName,
    #[error("link needs `index N`")]
    LinkIndex,
    #[error("bad index")]
    BadIndex,
    #[error("link needs `address MAC`")]
    LinkAddress,
    #[error("bad mtu")]
    BadMtu,
    #[error("neigh needs an address")]
    NeighAddress,
    #[error("neigh needs `lladdr MAC`")]
    NeighLladdr,
    #[error("bad MAC address `{0}`")]
    BadMac(String),
    #[error("a route needs a destination")]
    RouteDestination,
    #[error("bad destination `{0}`")]
    BadDestination(String),
    #[error("bad prefix `{0}`")]
    BadPrefix(String),
    #[error("prefix length {0} is too long")]
    PrefixTooLong(u8),
    #[error("bad gateway `{0}`")]
    BadGateway(String),
    /// A `dev` that no `link` line declares (and is no index).
    #[error("unknown device `{0}` (declare it with a `link` line)")]
    UnknownDevice(String),
    #[error("a route needs `dev`")]
    RouteDev,
}

fn parse_mac(s: &str) -> Result<[u8; 6], FibProblem> {
    let bad = || FibProblem::BadMac(s.to_string());
    let parts: Vec<u8> = s
        .split(':')
        .map(|p| u8::from_str_radix(p, 16).map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    parts.try_into().map_err(|_| bad())
}

fn mask(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
            IpAddr::V4((u32::from(a) & m).into())
        }
        IpAddr::V6(a) => {
            let m = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
            IpAddr::V6((u128::from(a) & m).into())
        }
    }
}

impl Fib {
    pub fn parse(text: &str) -> Result<Fib, FibError> {
        let mut fib = Fib::default();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = |problem: FibProblem| FibError {
                line: n + 1,
                problem,
            };
            let words: Vec<&str> = line.split_whitespace().collect();
            let value = |key: &str| {
                words
                    .iter()
                    .position(|w| *w == key)
                    .and_then(|i| words.get(i + 1))
                    .copied()
            };
            match words[0] {
                "link" => {
                    let name = words
                        .get(1)
                        .ok_or_else(|| at(FibProblem::LinkName))?
                        .to_string();
                    let index = value("index")
                        .ok_or_else(|| at(FibProblem::LinkIndex))?
                        .parse()
                        .map_err(|_| at(FibProblem::BadIndex))?;
                    let mac =
                        parse_mac(value("address").ok_or_else(|| at(FibProblem::LinkAddress))?)
                            .map_err(at)?;
                    let mtu = value("mtu")
                        .map_or(Ok(1500), str::parse)
                        .map_err(|_| at(FibProblem::BadMtu))?;
                    fib.links.push(Link {
                        name,
                        index,
                        mac,
                        mtu,
                    });
                }
                "neigh" => {
                    let ip: IpAddr = words
                        .get(1)
                        .and_then(|w| w.parse().ok())
                        .ok_or_else(|| at(FibProblem::NeighAddress))?;
                    let mac =
                        parse_mac(value("lladdr").ok_or_else(|| at(FibProblem::NeighLladdr))?)
                            .map_err(at)?;
                    fib.neighbours.insert(ip, mac);
                }
                _ => {
                    let (kind, rest) = match words[0] {
                        "blackhole" => (RouteKind::Blackhole, &words[1..]),
                        "unreachable" => (RouteKind::Unreachable, &words[1..]),
                        "prohibit" => (RouteKind::Prohibit, &words[1..]),
                        _ => (RouteKind::Unicast, &words[..]),
                    };
                    let dest = rest
                        .first()
                        .ok_or_else(|| at(FibProblem::RouteDestination))?;
                    let (prefix, len) = if *dest == "default" {
                        let v6 = value("via").is_some_and(|v| v.contains(':'));
                        (
                            if v6 {
                                IpAddr::V6(0.into())
                            } else {
                                IpAddr::V4(0.into())
                            },
                            0,
                        )
                    } else {
                        let (addr, len) = dest.split_once('/').unwrap_or((dest, ""));
                        let addr: IpAddr = addr
                            .parse()
                            .map_err(|_| at(FibProblem::BadDestination(dest.to_string())))?;
                        let max = if addr.is_ipv4() { 32 } else { 128 };
                        let len = if len.is_empty() {
                            max
                        } else {
                            len.parse()
                                .map_err(|_| at(FibProblem::BadPrefix(dest.to_string())))?
                        };
                        if len > max {
                            return Err(at(FibProblem::PrefixTooLong(len)));
                        }
                        (mask(addr, len), len)
                    };
                    let via = value("via")
                        .map(|v| {
                            v.parse()
                                .map_err(|_| at(FibProblem::BadGateway(v.to_string())))
                        })
                        .transpose()?;
                    let dev = match value("dev") {
                        Some(d) => Some(
                            fib.ifindex(d)
                                .ok_or_else(|| at(FibProblem::UnknownDevice(d.to_string())))?,
                        ),
                        None => None,
                    };
                    if kind == RouteKind::Unicast && dev.is_none() {
                        return Err(at(FibProblem::RouteDev));
                    }
                    fib.routes.push(FibRoute {
                        prefix,
                        len,
                        via,
                        dev,
                        kind,
                    });
                }
            }
        }
        Ok(fib)
    }

    fn ifindex(&self, dev: &str) -> Option<u32> {
        self.links
            .iter()
            .find(|l| l.name == dev)
            .map(|l| l.index)
            .or_else(|| dev.parse().ok())
    }

    pub fn link(&self, index: u32) -> Option<&Link> {
        self.links.iter().find(|l| l.index == index)
    }

    /// The longest-prefix route for `dst`.
    pub fn lookup(&self, dst: IpAddr) -> Option<&FibRoute> {
        self.routes
            .iter()
            .filter(|r| r.prefix.is_ipv4() == dst.is_ipv4() && mask(dst, r.len) == r.prefix)
            .max_by_key(|r| r.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_looks_up() {
        let fib = Fib::parse(
            "link eth0 index 2 address 02:00:00:00:00:02\nlink eth1 index 3 address 02:00:00:00:00:03 mtu 9000\n\
             neigh 192.168.1.1 dev eth0 lladdr 02:00:00:00:01:01\n10.0.0.0/8 via 192.168.1.1 dev eth0\n\
             10.1.0.0/16 dev eth1\ndefault via 192.168.1.1 dev eth0\nblackhole 10.66.0.0/16\n",
        )
        .unwrap();
        assert_eq!(
            fib.lookup("10.1.2.3".parse().unwrap()).unwrap().dev,
            Some(3)
        );
        assert_eq!(fib.lookup("10.2.2.3".parse().unwrap()).unwrap().len, 8);
        assert_eq!(fib.lookup("8.8.8.8".parse().unwrap()).unwrap().len, 0);
        assert_eq!(
            fib.lookup("10.66.1.1".parse().unwrap()).unwrap().kind,
            RouteKind::Blackhole
        );
        assert!(fib.lookup("2001:db8::1".parse().unwrap()).is_none());
        assert!(
            Fib::parse("10.0.0.0/8 dev nope")
                .unwrap_err()
                .to_string()
                .contains("unknown device")
        );
        assert!(
            Fib::parse("10.0.0.0/40 dev 2")
                .unwrap_err()
                .to_string()
                .contains("too long")
        );
    }

    #[test]
    fn errors_name_the_line_and_the_word() {
        let e = Fib::parse("link e index 2 address 02:00:00:00:00:02\n\n10.0.0.0/8 dev nope")
            .unwrap_err();
        assert_eq!(
            e,
            FibError {
                line: 3,
                problem: FibProblem::UnknownDevice("nope".into())
            }
        );
        assert_eq!(
            e.to_string(),
            "line 3: unknown device `nope` (declare it with a `link` line)"
        );
        let e = Fib::parse("link e index 2 address 02:zz").unwrap_err();
        assert_eq!(e.problem, FibProblem::BadMac("02:zz".into()));
    }
}
