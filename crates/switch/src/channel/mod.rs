//! OpenFlow connections, in Open vSwitch's syntax (`endpoint.rs`):
//! passive `punix:PATH` (a socket file only its owner may connect to),
//! `pssl:PORT[:IP]` (TLS, clients need a certificate the CA signed) and
//! `ptcp:PORT[:IP]` (loopback unless told otherwise: every local user
//! gets in), and active `unix:`, `ssl:` and `tcp:` to a controller,
//! reconnecting with back-off. Sockets are non-blocking and polled by the
//! control thread; each whole message goes to its [`Session`], replies
//! and asynchronous messages go back out.
//!
//! A peer cannot make the switch grow without bound (`Limits`): while a
//! connection has `backlog` bytes unsent the switch stops reading it and
//! drops the asynchronous messages it would queue there (as Open vSwitch
//! stops reading a controller with 100 replies queued and drops its
//! packet-ins); a connection that stays that far behind for
//! `slow_reader` is closed, and the drop logged.

mod endpoint;
mod error;
mod stream;
mod tls;
pub(crate) mod unix;

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use openflow::{Message, frame_len};

use crate::agent::{RoleState, Session, hello};
use crate::core::{Core, Transmit};

pub use endpoint::{Endpoint, EndpointError};
pub use error::ChannelError;
pub use tls::TlsFiles;

use stream::Stream;
use tls::TlsConfig;
use unix::SocketFile;

/// A silent peer is dropped after this many probe intervals without a
/// word (the first interval ends with an echo request).
const PROBES_BEFORE_DROP: u32 = 3;
/// Reconnection back-off: from the first to the largest wait.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(8);
/// Channel events kept for [`Channel::take_events`] (the oldest go).
const EVENTS_KEPT: usize = 1024;

/// What one peer may cost the switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Unsent bytes at which the switch stops reading a connection and
    /// drops the asynchronous messages for it.
    pub backlog: usize,
    /// How long a connection may stay at `backlog` or over before it is
    /// closed.
    pub slow_reader: Duration,
    /// Messages handled per connection and poll, so that one busy peer
    /// does not keep the others waiting.
    pub messages_per_poll: usize,
    /// Quiet time after which the switch probes a connection with an echo
    /// request (Open vSwitch's `inactivity_probe`); a peer silent for
    /// three of these is dropped.
    pub inactivity_probe: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            backlog: 1 << 20,
            slow_reader: Duration::from_secs(10),
            messages_per_poll: 50,
            inactivity_probe: Duration::from_secs(5),
        }
    }
}

/// How a channel is set up.
#[derive(Clone, Debug, Default)]
pub struct ChannelOptions {
    /// Key, certificate and CA of `pssl:` and `ssl:` endpoints.
    pub tls: Option<TlsFiles>,
    pub limits: Limits,
    /// Log connections and drops to standard error (as Open vSwitch's
    /// rconn and connmgr log them).
    pub log: bool,
}

enum Listener {
    Tcp(TcpListener),
    Tls(TcpListener),
    Unix(SocketFile),
}

#[derive(Clone)]
enum Target {
    Tcp(SocketAddr),
    Tls(SocketAddr),
    Unix(PathBuf),
}

struct Conn {
    stream: Stream,
    peer: String,
    input: Vec<u8>,
    output: Vec<u8>,
    session: Session,
    heard: Instant,
    probed: bool,
    /// Why the peer's side is gone (end of stream, an error).
    lost: Option<String>,
    /// Since when `output` has been at the backlog limit or over.
    behind_since: Option<Instant>,
    /// Asynchronous messages not queued for it while it was behind.
    async_dropped: u64,
    /// The index of the connector that made it.
    connector: Option<usize>,
}

struct Connector {
    target: Target,
    name: String,
    backoff: Duration,
    next_try: Instant,
    connected: bool,
}

/// What happened on the channel, for logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChannelEvent {
    /// A peer (`tcp:IP:PORT`, `ssl:IP:PORT`, `unix:PATH#N`) connected.
    Connected(String),
    /// A peer went, and why.
    Disconnected(String, String),
}

impl std::fmt::Display for ChannelEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChannelEvent::Connected(p) => write!(f, "{p}: connected"),
            ChannelEvent::Disconnected(p, why) => write!(f, "{p}: disconnected: {why}"),
        }
    }
}

/// Every OpenFlow connection of a switch.
pub struct Channel {
    listeners: Vec<Listener>,
    connectors: Vec<Connector>,
    conns: Vec<Conn>,
    roles: RoleState,
    tls: Option<TlsConfig>,
    limits: Limits,
    log: bool,
    events: Vec<ChannelEvent>,
    /// Numbers the unix-socket peers.
    accepted: u64,
}

impl Channel {
    /// Listens and connects where `endpoints` say, with the default
    /// options (no TLS files).
    pub fn open(endpoints: &[Endpoint]) -> Result<Channel, ChannelError> {
        Channel::open_with(endpoints, &ChannelOptions::default())
    }

    /// Listens and connects where `endpoints` say (listening at once; a
    /// port or socket already taken is an error).
    pub fn open_with(
        endpoints: &[Endpoint],
        options: &ChannelOptions,
    ) -> Result<Channel, ChannelError> {
        let tls = match (&options.tls, endpoints.iter().find(|e| e.is_tls())) {
            (Some(files), Some(_)) => Some(TlsConfig::load(files)?),
            (None, Some(e)) => return Err(ChannelError::TlsFilesMissing(e.to_string())),
            (_, None) => None,
        };
        let mut ch = Channel {
            listeners: Vec::new(),
            connectors: Vec::new(),
            conns: Vec::new(),
            roles: RoleState::default(),
            tls,
            limits: options.limits.clone(),
            log: options.log,
            events: Vec::new(),
            accepted: 0,
        };
        for e in endpoints {
            let io = |source| ChannelError::Io {
                endpoint: e.to_string(),
                source,
            };
            let tcp = |a: &SocketAddr| -> Result<TcpListener, ChannelError> {
                let l = TcpListener::bind(a).map_err(io)?;
                l.set_nonblocking(true).map_err(io)?;
                Ok(l)
            };
            let target = match e {
                Endpoint::Listen(a) => {
                    ch.listeners.push(Listener::Tcp(tcp(a)?));
                    continue;
                }
                Endpoint::ListenTls(a) => {
                    ch.listeners.push(Listener::Tls(tcp(a)?));
                    continue;
                }
                Endpoint::ListenUnix(p) => {
                    ch.listeners.push(Listener::Unix(SocketFile::bind(p)?));
                    continue;
                }
                Endpoint::Connect(a) => Target::Tcp(*a),
                Endpoint::ConnectTls(a) => Target::Tls(*a),
                Endpoint::ConnectUnix(p) => Target::Unix(p.clone()),
            };
            ch.connectors.push(Connector {
                target,
                name: e.to_string(),
                backoff: BACKOFF_FIRST,
                next_try: Instant::now(),
                connected: false,
            });
        }
        Ok(ch)
    }

    /// The TCP addresses listened on (the port chosen for port 0), plain
    /// and TLS.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| match l {
                Listener::Tcp(l) | Listener::Tls(l) => l.local_addr().ok(),
                Listener::Unix(_) => None,
            })
            .collect()
    }

    /// The endpoints listened on, in `--of` syntax (ports as bound).
    pub fn listening(&self) -> Vec<Endpoint> {
        self.listeners
            .iter()
            .filter_map(|l| match l {
                Listener::Tcp(l) => l.local_addr().ok().map(Endpoint::Listen),
                Listener::Tls(l) => l.local_addr().ok().map(Endpoint::ListenTls),
                Listener::Unix(s) => Some(Endpoint::ListenUnix(s.path.clone())),
            })
            .collect()
    }

    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// What happened since the last call (at most the last 1024 events).
    pub fn take_events(&mut self) -> Vec<ChannelEvent> {
        std::mem::take(&mut self.events)
    }

    fn event(&mut self, e: ChannelEvent) {
        if self.log {
            eprintln!("sluice switch: OpenFlow {e}");
        }
        if self.events.len() >= EVENTS_KEPT {
            self.events.remove(0);
        }
        self.events.push(e);
    }

    /// Accepts, connects, reads and answers what is there, and sends the
    /// switch's asynchronous messages; whether anything happened.
    pub fn poll(&mut self, core: &Core, tx: &mut dyn Transmit) -> bool {
        let mut busy = self.accept() | self.connect();
        let events = core.take_events();
        for i in 0..self.conns.len() {
            busy |= self.serve(i, core, tx);
            let backlog = self.limits.backlog;
            let c = &mut self.conns[i];
            for m in &events {
                if c.session.wants(m) {
                    if c.output.len() < backlog {
                        c.output.extend_from_slice(&m.encode(0));
                    } else {
                        c.async_dropped += 1;
                    }
                }
            }
        }
        let now = Instant::now();
        let mut i = 0;
        while i < self.conns.len() {
            match self.check(i, now) {
                Some(why) => self.drop_conn(i, why),
                None => i += 1,
            }
        }
        busy
    }

    /// Sends what connection `i` can take; why it must go, if it must.
    fn check(&mut self, i: usize, now: Instant) -> Option<String> {
        let limits = &self.limits;
        let c = &mut self.conns[i];
        if let Err(e) = flush(c) {
            return Some(e);
        }
        if let Some(why) = c.lost.take() {
            return Some(why);
        }
        if c.session.closing {
            return Some("HELLO failed".into());
        }
        if c.output.len() >= limits.backlog {
            let since = *c.behind_since.get_or_insert(now);
            if now.duration_since(since) >= limits.slow_reader {
                return Some(format!(
                    "excessive sending backlog: {} bytes unsent for {:.1} s, {} asynchronous messages dropped; disconnecting",
                    c.output.len(),
                    now.duration_since(since).as_secs_f64(),
                    c.async_dropped
                ));
            }
            // Not read while behind: its silence is the switch's doing.
            return None;
        }
        c.behind_since = None;
        let quiet = now.duration_since(c.heard);
        if quiet > limits.inactivity_probe * PROBES_BEFORE_DROP {
            return Some(format!("no answer for {} s", quiet.as_secs()));
        }
        if quiet > limits.inactivity_probe && !c.probed {
            c.output
                .extend_from_slice(&Message::EchoRequest(Vec::new()).encode(0));
            c.probed = true;
        }
        None
    }

    fn drop_conn(&mut self, i: usize, why: String) {
        let c = self.conns.swap_remove(i);
        if let Some(k) = c.connector {
            let k = &mut self.connectors[k];
            k.connected = false;
            k.next_try = Instant::now() + k.backoff;
            k.backoff = (k.backoff * 2).min(BACKOFF_MAX);
        }
        self.event(ChannelEvent::Disconnected(c.peer, why));
    }

    fn accept(&mut self) -> bool {
        let mut new = Vec::new();
        let mut accepted = self.accepted;
        for l in &self.listeners {
            loop {
                let (stream, peer) = match l {
                    Listener::Tcp(l) => match l.accept() {
                        Ok((s, a)) => (tcp_stream(s), format!("tcp:{a}")),
                        Err(_) => break,
                    },
                    Listener::Tls(l) => match l.accept() {
                        Ok((s, a)) => {
                            let Some(cfg) = &self.tls else { break };
                            let stream = rustls::ServerConnection::new(cfg.server.clone())
                                .ok()
                                .and_then(|c| Some(Stream::tls(c.into(), nonblocking_tcp(s)?)));
                            (stream, format!("ssl:{a}"))
                        }
                        Err(_) => break,
                    },
                    Listener::Unix(f) => match f.listener.accept() {
                        Ok((s, _)) => {
                            accepted += 1;
                            let peer = format!("unix:{}#{accepted}", f.path.display());
                            (unix_stream(s), peer)
                        }
                        Err(_) => break,
                    },
                };
                if let Some(stream) = stream {
                    new.push(new_conn(stream, peer, None));
                }
            }
        }
        self.accepted = accepted;
        let any = !new.is_empty();
        for c in new {
            self.event(ChannelEvent::Connected(c.peer.clone()));
            self.conns.push(c);
        }
        any
    }

    fn connect(&mut self) -> bool {
        let now = Instant::now();
        let mut new = Vec::new();
        for (k, con) in self.connectors.iter_mut().enumerate() {
            if con.connected || now < con.next_try {
                continue;
            }
            let stream = match &con.target {
                Target::Tcp(a) => connect_tcp(a).and_then(tcp_stream),
                Target::Tls(a) => self.tls.as_ref().and_then(|cfg| {
                    let name = rustls::pki_types::ServerName::IpAddress(a.ip().into());
                    let c = rustls::ClientConnection::new(cfg.client.clone(), name).ok()?;
                    Some(Stream::tls(c.into(), nonblocking_tcp(connect_tcp(a)?)?))
                }),
                Target::Unix(p) => UnixStream::connect(p).ok().and_then(unix_stream),
            };
            match stream {
                Some(stream) => {
                    con.connected = true;
                    con.backoff = BACKOFF_FIRST;
                    new.push(new_conn(stream, con.name.clone(), Some(k)));
                }
                None => {
                    con.next_try = now + con.backoff;
                    con.backoff = (con.backoff * 2).min(BACKOFF_MAX);
                }
            }
        }
        let any = !new.is_empty();
        for c in new {
            self.event(ChannelEvent::Connected(c.peer.clone()));
            self.conns.push(c);
        }
        any
    }

    /// Reads connection `i` and answers the whole messages in it: at most
    /// `messages_per_poll`, and none while its backlog is at the limit.
    fn serve(&mut self, i: usize, core: &Core, tx: &mut dyn Transmit) -> bool {
        let mut buf = [0u8; 16384];
        let mut any = false;
        let mut handled = 0;
        let mut replies = Vec::new();
        let mut became_master = false;
        loop {
            let c = &mut self.conns[i];
            if c.output.len() >= self.limits.backlog
                || handled >= self.limits.messages_per_poll
                || c.lost.is_some()
                || c.session.closing
            {
                break;
            }
            match frame_len(&c.input) {
                Ok(Some(n)) if c.input.len() >= n => {
                    let frame: Vec<u8> = c.input.drain(..n).collect();
                    let fx = c
                        .session
                        .handle(core, &mut self.roles, tx, &frame, &mut replies);
                    became_master |= fx.became_master;
                    for r in replies.drain(..) {
                        c.output.extend_from_slice(&r);
                    }
                    handled += 1;
                    any = true;
                    continue;
                }
                Ok(_) => {}
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
            // No whole message: read more (a frame is at most 64 KiB, so
            // the input never holds more than one and a read).
            match c.stream.read(&mut buf) {
                Ok(0) => {
                    c.lost = Some("connection closed by peer".into());
                }
                Ok(n) => {
                    c.input.extend_from_slice(&buf[..n]);
                    c.heard = Instant::now();
                    c.probed = false;
                    any = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => c.lost = Some(e.to_string()),
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

fn connect_tcp(a: &SocketAddr) -> Option<TcpStream> {
    TcpStream::connect_timeout(a, Duration::from_millis(200)).ok()
}

fn nonblocking_tcp(s: TcpStream) -> Option<TcpStream> {
    s.set_nonblocking(true).ok()?;
    let _ = s.set_nodelay(true);
    Some(s)
}

fn tcp_stream(s: TcpStream) -> Option<Stream> {
    nonblocking_tcp(s).map(Stream::Tcp)
}

fn unix_stream(s: UnixStream) -> Option<Stream> {
    s.set_nonblocking(true).ok()?;
    Some(Stream::Unix(s))
}

fn new_conn(stream: Stream, peer: String, connector: Option<usize>) -> Conn {
    Conn {
        stream,
        peer,
        input: Vec::new(),
        output: hello(),
        session: Session::default(),
        heard: Instant::now(),
        probed: false,
        lost: None,
        behind_since: None,
        async_dropped: 0,
        connector,
    }
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
    c.stream.flush().map_err(|e| e.to_string())
}
