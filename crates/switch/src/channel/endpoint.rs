//! Where an OpenFlow channel listens or connects, in Open vSwitch's
//! syntax: `ptcp:PORT[:IP]` / `tcp:IP[:PORT]` (plain TCP),
//! `pssl:PORT[:IP]` / `ssl:IP[:PORT]` (TLS with certificates) and
//! `punix:PATH` / `unix:PATH` (a unix socket file).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

/// The IANA port of OpenFlow.
pub const DEFAULT_PORT: u16 = 6653;

/// Where to listen or connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `ptcp:`: plain TCP, every local user (or host, off loopback) may
    /// connect.
    Listen(SocketAddr),
    /// `tcp:`: plain TCP to a controller.
    Connect(SocketAddr),
    /// `pssl:`: TLS; clients must show a certificate signed by the CA.
    ListenTls(SocketAddr),
    /// `ssl:`: TLS to a controller whose certificate the CA signed.
    ConnectTls(SocketAddr),
    /// `punix:`: a socket file, mode 0600: only its owner (and root)
    /// may connect.
    ListenUnix(PathBuf),
    /// `unix:`: a socket file a controller listens on.
    ConnectUnix(PathBuf),
}

const EXPECTED: &str = "expected ptcp:PORT[:IP], pssl:PORT[:IP], punix:PATH, tcp:IP[:PORT], ssl:IP[:PORT] or unix:PATH";

impl Endpoint {
    /// Whether it needs `--private-key`, `--certificate` and `--ca-cert`.
    pub fn is_tls(&self) -> bool {
        matches!(self, Endpoint::ListenTls(_) | Endpoint::ConnectTls(_))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Listen(a) => write!(f, "ptcp:{}:{}", a.port(), a.ip()),
            Endpoint::ListenTls(a) => write!(f, "pssl:{}:{}", a.port(), a.ip()),
            Endpoint::Connect(a) => write!(f, "tcp:{a}"),
            Endpoint::ConnectTls(a) => write!(f, "ssl:{a}"),
            Endpoint::ListenUnix(p) => write!(f, "punix:{}", p.display()),
            Endpoint::ConnectUnix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// An endpoint that does not parse: what was given and why not.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}: {why} ({EXPECTED})", spec.escape_debug())]
pub struct EndpointError {
    pub spec: String,
    pub why: &'static str,
}

impl std::str::FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(s: &str) -> Result<Endpoint, EndpointError> {
        let bad = |why: &'static str| EndpointError {
            spec: s.to_string(),
            why,
        };
        let (method, rest) = s
            .split_once(':')
            .ok_or_else(|| bad("no connection method"))?;
        let path = |rest: &str| {
            if rest.is_empty() {
                Err(bad("no socket path"))
            } else {
                Ok(PathBuf::from(rest))
            }
        };
        match method {
            "ptcp" => Ok(Endpoint::Listen(passive(rest, &bad)?)),
            "pssl" => Ok(Endpoint::ListenTls(passive(rest, &bad)?)),
            "tcp" => Ok(Endpoint::Connect(active(rest, &bad)?)),
            "ssl" => Ok(Endpoint::ConnectTls(active(rest, &bad)?)),
            "punix" => Ok(Endpoint::ListenUnix(path(rest)?)),
            "unix" => Ok(Endpoint::ConnectUnix(path(rest)?)),
            _ => Err(bad("unknown connection method")),
        }
    }
}

/// `PORT[:IP]`: loopback unless an address is given.
fn passive(
    rest: &str,
    bad: &dyn Fn(&'static str) -> EndpointError,
) -> Result<SocketAddr, EndpointError> {
    let (port, ip) = match rest.split_once(':') {
        Some((p, ip)) => (
            p,
            ip.trim_matches(|c| c == '[' || c == ']')
                .parse::<IpAddr>()
                .map_err(|_| bad("not an IP address"))?,
        ),
        None => (rest, IpAddr::V4(Ipv4Addr::LOCALHOST)),
    };
    let port = if port.is_empty() {
        DEFAULT_PORT
    } else {
        port.parse().map_err(|_| bad("not a port number"))?
    };
    Ok(SocketAddr::new(ip, port))
}

/// `IP[:PORT]` (an IPv6 address in brackets when a port follows).
fn active(
    rest: &str,
    bad: &dyn Fn(&'static str) -> EndpointError,
) -> Result<SocketAddr, EndpointError> {
    let (ip, port) = match rest.rsplit_once(':') {
        Some((ip, p)) if !ip.contains(':') || ip.starts_with('[') => (
            ip.trim_matches(|c| c == '[' || c == ']'),
            p.parse().map_err(|_| bad("not a port number"))?,
        ),
        _ => (rest, DEFAULT_PORT),
    };
    let ip = ip.parse::<IpAddr>().map_err(|_| bad("not an IP address"))?;
    Ok(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_as_in_open_vswitch() {
        let l = |s: &str| s.parse::<Endpoint>();
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(l("ptcp:6653"), Ok(Endpoint::Listen(a("127.0.0.1:6653"))));
        assert_eq!(l("ptcp:"), Ok(Endpoint::Listen(a("127.0.0.1:6653"))));
        assert_eq!(
            l("ptcp:7000:0.0.0.0"),
            Ok(Endpoint::Listen(a("0.0.0.0:7000")))
        );
        assert_eq!(
            l("tcp:127.0.0.1"),
            Ok(Endpoint::Connect(a("127.0.0.1:6653")))
        );
        assert_eq!(
            l("tcp:10.0.0.1:6633"),
            Ok(Endpoint::Connect(a("10.0.0.1:6633")))
        );
        assert_eq!(l("tcp:[::1]:6633"), Ok(Endpoint::Connect(a("[::1]:6633"))));
        assert_eq!(l("pssl:"), Ok(Endpoint::ListenTls(a("127.0.0.1:6653"))));
        assert_eq!(l("pssl:6000:::1"), Ok(Endpoint::ListenTls(a("[::1]:6000"))));
        assert_eq!(
            l("ssl:10.0.0.1"),
            Ok(Endpoint::ConnectTls(a("10.0.0.1:6653")))
        );
        assert_eq!(
            l("punix:/run/sluice/br0.mgmt"),
            Ok(Endpoint::ListenUnix("/run/sluice/br0.mgmt".into()))
        );
        assert_eq!(l("unix:x.sock"), Ok(Endpoint::ConnectUnix("x.sock".into())));
        assert!(
            l("punix:")
                .unwrap_err()
                .to_string()
                .contains("no socket path")
        );
        assert!(
            l("udp:1")
                .unwrap_err()
                .to_string()
                .contains("unknown connection method")
        );
        assert!(
            l("ptcp:x")
                .unwrap_err()
                .to_string()
                .contains("not a port number")
        );
        assert!(
            l("6653")
                .unwrap_err()
                .to_string()
                .contains("no connection method")
        );
        // Input quoted in a message is escaped.
        assert!(
            l("\x1b[2J")
                .unwrap_err()
                .to_string()
                .starts_with("\\u{1b}[2J")
        );
        for s in [
            "ptcp:7000:0.0.0.0",
            "pssl:6653:127.0.0.1",
            "punix:/a/b",
            "ssl:[::1]:1",
        ] {
            assert_eq!(l(s).unwrap().to_string(), s);
        }
    }
}
