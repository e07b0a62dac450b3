//! The network transports: UDP to a collector and a TCP stream to a
//! collector (the file of messages is `file.rs`). Each owns an
//! [`Encoder`]; a collector that cannot be reached is an [`Error`] naming
//! it.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::{Duration, SystemTime};

use crate::encode::{Encoder, MAX_MESSAGE, Refresh};
use crate::error::Error;
use crate::flow::Flow;

/// What one export sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    pub messages: usize,
    pub records: usize,
    pub bytes: usize,
}

/// Options of a [`UdpExporter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpOptions {
    /// The observation domain id in every message header.
    pub domain: u32,
    /// The largest message (the UDP payload): 1400 leaves room for IP and
    /// UDP headers (and a tunnel) under a 1500-byte MTU.
    pub max_message: usize,
    /// Templates again after this many messages...
    pub refresh_messages: u32,
    /// ... or this long, whichever comes first.
    pub refresh_interval: Duration,
}

impl Default for UdpOptions {
    fn default() -> UdpOptions {
        UdpOptions {
            domain: 0,
            max_message: 1400,
            refresh_messages: 100,
            refresh_interval: Duration::from_secs(60),
        }
    }
}

/// Exports over UDP to one collector (`HOST:PORT`).
#[derive(Debug)]
pub struct UdpExporter {
    socket: UdpSocket,
    collector: String,
    encoder: Encoder,
}

impl UdpExporter {
    /// A socket connected to `collector`, so that an ICMP port unreachable
    /// for it comes back as an error of a later send.
    pub fn connect(collector: &str, options: UdpOptions) -> Result<UdpExporter, Error> {
        let encoder = Encoder::new(
            options.domain,
            options.max_message,
            Refresh::Periodic {
                messages: options.refresh_messages.max(1),
                interval: options.refresh_interval,
            },
        )?;
        let addr = resolve(collector)?;
        let local: SocketAddr = if addr.is_ipv6() {
            "[::]:0".parse().expect("literal address")
        } else {
            "0.0.0.0:0".parse().expect("literal address")
        };
        let err = |op| move |source| collector_error(collector, op, source);
        let socket = UdpSocket::bind(local).map_err(err("bind a UDP socket"))?;
        socket.connect(addr).map_err(err("connect"))?;
        Ok(UdpExporter {
            socket,
            collector: collector.to_string(),
            encoder,
        })
    }

    /// Sends `flows` now, in as many datagrams as they need.
    pub fn export(&mut self, flows: &[Flow]) -> Result<Sent, Error> {
        self.export_at(flows, SystemTime::now())
    }

    /// Sends `flows` stamped `now`.
    pub fn export_at(&mut self, flows: &[Flow], now: SystemTime) -> Result<Sent, Error> {
        let collector = self.collector.as_str();
        let err = |op| move |source| collector_error(collector, op, source);
        // An ICMP error for an earlier datagram.
        if let Some(e) = self.socket.take_error().map_err(err("socket error"))? {
            return Err(err("send (reported for an earlier datagram)")(e));
        }
        let messages = self.encoder.encode(flows, now)?;
        let mut sent = Sent {
            records: flows.len(),
            ..Sent::default()
        };
        for m in &messages {
            self.socket.send(m).map_err(err("send"))?;
            sent.messages += 1;
            sent.bytes += m.len();
        }
        Ok(sent)
    }

    /// The collector as given.
    pub fn collector(&self) -> &str {
        &self.collector
    }
}

/// Exports over a TCP connection: templates once, at the start.
#[derive(Debug)]
pub struct TcpExporter {
    stream: TcpStream,
    collector: String,
    encoder: Encoder,
}

impl TcpExporter {
    /// Connects to `collector` (`HOST:PORT`) within `timeout`.
    pub fn connect(collector: &str, domain: u32, timeout: Duration) -> Result<TcpExporter, Error> {
        let addr = resolve(collector)?;
        let stream = TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| collector_error(collector, "connect", e))?;
        TcpExporter::new(stream, collector, domain)
    }

    /// Exports over a stream already connected to `collector`.
    pub fn new(stream: TcpStream, collector: &str, domain: u32) -> Result<TcpExporter, Error> {
        Ok(TcpExporter {
            stream,
            collector: collector.to_string(),
            encoder: Encoder::new(domain, MAX_MESSAGE, Refresh::Once)?,
        })
    }

    /// Writes `flows` now.
    pub fn export(&mut self, flows: &[Flow]) -> Result<Sent, Error> {
        self.export_at(flows, SystemTime::now())
    }

    /// Writes `flows` stamped `now`.
    pub fn export_at(&mut self, flows: &[Flow], now: SystemTime) -> Result<Sent, Error> {
        let messages = self.encoder.encode(flows, now)?;
        let sent = write_all(&mut self.stream, &messages, flows.len())
            .map_err(|e| collector_error(&self.collector, "send", e))?;
        self.stream
            .flush()
            .map_err(|e| collector_error(&self.collector, "send", e))?;
        Ok(sent)
    }
}

fn write_all(out: &mut impl Write, messages: &[Vec<u8>], records: usize) -> io::Result<Sent> {
    let mut sent = Sent {
        records,
        ..Sent::default()
    };
    for m in messages {
        out.write_all(m)?;
        sent.messages += 1;
        sent.bytes += m.len();
    }
    Ok(sent)
}

fn resolve(collector: &str) -> Result<SocketAddr, Error> {
    let mut addrs = collector
        .to_socket_addrs()
        .map_err(|e| collector_error(collector, "resolve", e))?;
    addrs.next().ok_or_else(|| {
        collector_error(
            collector,
            "resolve",
            io::Error::new(io::ErrorKind::NotFound, "no address"),
        )
    })
}

fn collector_error(collector: &str, op: &'static str, source: io::Error) -> Error {
    Error::Collector {
        collector: collector.to_string(),
        op,
        source,
    }
}
