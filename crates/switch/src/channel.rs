//! OpenFlow connections over TCP: passive (`ptcp:PORT[:IP]`, loopback
//! unless told otherwise, for `ovs-ofctl`) and active (`tcp:IP[:PORT]`, to
//! a controller, reconnecting with back-off). Sockets are non-blocking and
//! polled by the control thread; each whole message goes to its
//! [`Session`], replies and asynchronous messages go back out.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use openflow::{Message, frame_len};

use crate::agent::{RoleState, Session, hello};
use crate::core::{Core, Transmit};

/// The IANA port of OpenFlow.
pub const DEFAULT_PORT: u16 = 6653;

/// Quiet time before the switch probes a connection with an echo, and
/// after which a silent peer is dropped.
const PROBE_AFTER: Duration = Duration::from_secs(5);
const DROP_AFTER: Duration = Duration::from_secs(15);
/// Reconnection back-off: from the first to the largest wait.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(8);

/// Where to listen or connect, in Open vSwitch's syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Listen(SocketAddr),
    Connect(SocketAddr),
}

impl std::str::FromStr for Endpoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Endpoint, String> {
        let bad = |why: &str| format!("{s}: {why} (expected ptcp:PORT[:IP] or tcp:IP[:PORT])");
        if let Some(rest) = s.strip_prefix("ptcp:") {
            let (port, ip) = match rest.split_once(':') {
                Some((p, ip)) => (
                    p,
                    ip.parse::<IpAddr>().map_err(|_| bad("not an IP address"))?,
                ),
                None => (rest, IpAddr::V4(Ipv4Addr::LOCALHOST)),
            };
            let port = if port.is_empty() {
                DEFAULT_PORT
            } else {
                port.parse().map_err(|_| bad("not a port number"))?
            };
            Ok(Endpoint::Listen(SocketAddr::new(ip, port)))
        } else if let Some(rest) = s.strip_prefix("tcp:") {
            let (ip, port) = match rest.rsplit_once(':') {
                Some((ip, p)) if !ip.contains(':') || ip.starts_with('[') => (
                    ip.trim_matches(|c| c == '[' || c == ']'),
                    p.parse().map_err(|_| bad("not a port number"))?,
                ),
                _ => (rest, DEFAULT_PORT),
            };
            let ip = ip.parse::<IpAddr>().map_err(|_| bad("not an IP address"))?;
            Ok(Endpoint::Connect(SocketAddr::new(ip, port)))
        } else {
            Err(bad("unknown connection method"))
        }
    }
}

struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    input: Vec<u8>,
    output: Vec<u8>,
    session: Session,
    heard: Instant,
    probed: bool,
    /// The index of the connector that made it.
    connector: Option<usize>,
}

struct Connector {
    addr: SocketAddr,
    backoff: Duration,
    next_try: Instant,
    connected: bool,
}

/// What happened on the channel, for logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChannelEvent {
    Connected(SocketAddr),
    Disconnected(SocketAddr, String),
}

/// Every OpenFlow connection of a switch.
pub struct Channel {
    listeners: Vec<TcpListener>,
    connectors: Vec<Connector>,
    conns: Vec<Conn>,
    roles: RoleState,
    pub events: Vec<ChannelEvent>,
}

impl Channel {
    /// Listens and connects where `endpoints` say (listening at once; a
    /// port already taken is an error).
    pub fn open(endpoints: &[Endpoint]) -> std::io::Result<Channel> {
        let mut ch = Channel {
            listeners: Vec::new(),
            connectors: Vec::new(),
            conns: Vec::new(),
            roles: RoleState::default(),
            events: Vec::new(),
        };
        for e in endpoints {
            match e {
                Endpoint::Listen(a) => {
                    let l = TcpListener::bind(a)?;
                    l.set_nonblocking(true)?;
                    ch.listeners.push(l);
                }
                Endpoint::Connect(a) => ch.connectors.push(Connector {
                    addr: *a,
                    backoff: BACKOFF_FIRST,
                    next_try: Instant::now(),
                    connected: false,
                }),
            }
        }
        Ok(ch)
    }

    /// The addresses listened on (the port chosen for port 0).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Accepts, connects, reads and answers what is there, and sends the
    /// switch's asynchronous messages; whether anything happened.
    pub fn poll(&mut self, core: &Core, tx: &mut dyn Transmit) -> bool {
        let mut busy = self.accept() | self.connect();
        let events = core.take_events();
        for i in 0..self.conns.len() {
            busy |= self.serve(i, core, tx);
            let c = &mut self.conns[i];
            for m in &events {
                if c.session.wants(m) {
                    c.output.extend_from_slice(&m.encode(0));
                }
            }
        }
        let now = Instant::now();
        let mut i = 0;
        while i < self.conns.len() {
            let c = &mut self.conns[i];
            let gone = flush(c)
                .err()
                .or_else(|| c.session.closing.then(|| "HELLO failed".to_string()))
                .or_else(|| {
                    let quiet = now.duration_since(c.heard);
                    if quiet > DROP_AFTER {
                        Some(format!("no answer for {} s", quiet.as_secs()))
                    } else {
                        if quiet > PROBE_AFTER && !c.probed {
                            c.output
                                .extend_from_slice(&Message::EchoRequest(Vec::new()).encode(0));
                            c.probed = true;
                        }
                        None
                    }
                });
            match gone {
                Some(why) => self.drop_conn(i, why),
                None => i += 1,
            }
        }
        busy
    }

    fn drop_conn(&mut self, i: usize, why: String) {
        let c = self.conns.swap_remove(i);
        if let Some(k) = c.connector {
            let k = &mut self.connectors[k];
            k.connected = false;
            k.next_try = Instant::now() + k.backoff;
            k.backoff = (k.backoff * 2).min(BACKOFF_MAX);
        }
        self.events.push(ChannelEvent::Disconnected(c.peer, why));
    }

    fn accept(&mut self) -> bool {
        let mut any = false;
        for l in &self.listeners {
            while let Ok((stream, peer)) = l.accept() {
                if let Some(c) = new_conn(stream, peer, None) {
                    self.events.push(ChannelEvent::Connected(peer));
                    self.conns.push(c);
                    any = true;
                }
            }
        }
        any
    }

    fn connect(&mut self) -> bool {
        let now = Instant::now();
        let mut any = false;
        for (k, con) in self.connectors.iter_mut().enumerate() {
            if con.connected || now < con.next_try {
                continue;
            }
            match TcpStream::connect_timeout(&con.addr, Duration::from_millis(200)) {
                Ok(stream) => {
                    if let Some(c) = new_conn(stream, con.addr, Some(k)) {
                        con.connected = true;
                        con.backoff = BACKOFF_FIRST;
                        self.events.push(ChannelEvent::Connected(con.addr));
                        self.conns.push(c);
                        any = true;
                    }
                }
                Err(_) => {
                    con.next_try = now + con.backoff;
                    con.backoff = (con.backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
        any
    }

    /// Reads connection `i` and answers every whole message in it.
    fn serve(&mut self, i: usize, core: &Core, tx: &mut dyn Transmit) -> bool {
        let c = &mut self.conns[i];
        let mut buf = [0u8; 16384];
        let mut any = false;
        loop {
            match c.stream.read(&mut buf) {
                Ok(0) => {
                    c.session.closing = true;
                    break;
                }
                Ok(n) => {
                    c.input.extend_from_slice(&buf[..n]);
                    c.heard = Instant::now();
                    c.probed = false;
                    any = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    c.session.closing = true;
                    break;
                }
            }
        }
        let mut replies = Vec::new();
        let mut became_master = false;
        loop {
            let c = &mut self.conns[i];
            match frame_len(&c.input) {
                Ok(Some(n)) if c.input.len() >= n => {
                    let frame: Vec<u8> = c.input.drain(..n).collect();
                    let fx = c
                        .session
                        .handle(core, &mut self.roles, tx, &frame, &mut replies);
                    became_master |= fx.became_master;
                    for r in replies.drain(..) {
                        self.conns[i].output.extend_from_slice(&r);
                    }
                }
                Ok(_) => break,
                Err(e) => {
                    // A length below the header's: the stream cannot be
                    // framed any more. Say so, then close.
                    let head: Vec<u8> = c.input.iter().take(64).copied().collect();
                    c.output
                        .extend_from_slice(&Message::Error(e.reply(&head)).encode(0));
                    c.input.clear();
                    c.session.closing = true;
                    break;
                }
            }
        }
        if became_master {
            for (j, other) in self.conns.iter_mut().enumerate() {
                if j != i && other.session.role == openflow::role::MASTER {
                    other.session.role = openflow::role::SLAVE;
                }
            }
        }
        any
    }
}

fn new_conn(stream: TcpStream, peer: SocketAddr, connector: Option<usize>) -> Option<Conn> {
    stream.set_nonblocking(true).ok()?;
    let _ = stream.set_nodelay(true);
    Some(Conn {
        stream,
        peer,
        input: Vec::new(),
        output: hello(),
        session: Session::default(),
        heard: Instant::now(),
        probed: false,
        connector,
    })
}

/// Writes what the socket takes now; an error names why the connection
/// is lost.
fn flush(c: &mut Conn) -> Result<(), String> {
    while !c.output.is_empty() {
        match c.stream.write(&c.output) {
            Ok(0) => return Err("connection closed".into()),
            Ok(n) => {
                c.output.drain(..n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_as_in_open_vswitch() {
        let l = |s: &str| s.parse::<Endpoint>();
        assert_eq!(
            l("ptcp:6653"),
            Ok(Endpoint::Listen("127.0.0.1:6653".parse().unwrap()))
        );
        assert_eq!(
            l("ptcp:"),
            Ok(Endpoint::Listen("127.0.0.1:6653".parse().unwrap()))
        );
        assert_eq!(
            l("ptcp:7000:0.0.0.0"),
            Ok(Endpoint::Listen("0.0.0.0:7000".parse().unwrap()))
        );
        assert_eq!(
            l("tcp:127.0.0.1"),
            Ok(Endpoint::Connect("127.0.0.1:6653".parse().unwrap()))
        );
        assert_eq!(
            l("tcp:10.0.0.1:6633"),
            Ok(Endpoint::Connect("10.0.0.1:6633".parse().unwrap()))
        );
        assert_eq!(
            l("tcp:[::1]:6633"),
            Ok(Endpoint::Connect("[::1]:6633".parse().unwrap()))
        );
        assert!(
            l("unix:/x")
                .unwrap_err()
                .contains("unknown connection method")
        );
        assert!(l("ptcp:x").unwrap_err().contains("not a port number"));
    }
}
