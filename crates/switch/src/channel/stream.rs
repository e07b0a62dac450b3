//! One OpenFlow connection's byte stream, non-blocking: plain TCP, a
//! unix socket, or TLS over TCP (rustls driven by hand: records read
//! and written as the socket takes them, the handshake on the way).

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

/// The plaintext rustls may hold unsent; the connection's own queue
/// holds the rest (and is the one bounded, `Limits::backlog`).
const TLS_BUFFER: usize = 64 * 1024;

pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<Tls>),
}

pub(crate) struct Tls {
    conn: rustls::Connection,
    sock: TcpStream,
}

impl Stream {
    /// A TLS stream over `sock`, its handshake still to come.
    pub(crate) fn tls(mut conn: rustls::Connection, sock: TcpStream) -> Stream {
        conn.set_buffer_limit(Some(TLS_BUFFER));
        Stream::Tls(Box::new(Tls { conn, sock }))
    }

    /// Bytes from the peer; 0 at the end of the stream; `WouldBlock` when
    /// none are there yet.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf).map_err(tls_error),
        }
    }

    /// Bytes to the peer, as many as can go now (`WouldBlock` if none).
    pub(crate) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf).map_err(tls_error),
        }
    }

    /// Sends the TLS records waiting (handshake, alerts, data).
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(t) => t.flush_records().map_err(tls_error),
            _ => Ok(()),
        }
    }
}

/// Says that an error (but waiting) is the TLS session's.
fn tls_error(e: io::Error) -> io::Error {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::Interrupted => e,
        kind => io::Error::new(kind, format!("TLS: {e}")),
    }
}

impl Tls {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if self.conn.read_tls(&mut self.sock)? == 0 {
                return Ok(0);
            }
            if let Err(e) = self.conn.process_new_packets() {
                // Tell the peer why (an alert), then give up.
                let _ = self.flush_records();
                return Err(io::Error::new(ErrorKind::InvalidData, e));
            }
            self.flush_records()?;
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.flush_records()?;
        let n = self.conn.writer().write(buf)?;
        self.flush_records()?;
        if n == 0 {
            return Err(ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    fn flush_records(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
