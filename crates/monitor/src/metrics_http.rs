//! The HTTP server of `/metrics` (`--metrics ADDR:PORT`), on a thread of
//! its own, for as long as the [`MetricsServer`] lives.
//!
//! Served by hyper 1 (HTTP/1.1 only) on a current-thread tokio runtime:
//! a scrape must not wait for another client, so every connection is a
//! task of its own, and nothing a client sends may make the server grow.
//! hyper was chosen over tiny_http because tiny_http gives each
//! connection a thread from a pool that grows on demand (1,000 idle
//! clients: 1,000 threads) and has no timeout on reading a request head;
//! hyper bounds the head it buffers (`max_header_size`, `max_buf_size`,
//! answering 431 past them), times out a head that is not complete in
//! time (`header_read_timeout`, also between keep-alive requests) and
//! costs one small task per connection. What hyper does not do is added
//! here: a listen backlog of 1,024 (std's 128 overflowed under a burst of
//! 1,000 clients: dropped SYNs, 1-s retries), a cap on the connections
//! held at once (one past it is closed at
//! accept, and one that cannot be accepted, EMFILE, waits a moment
//! instead of spinning), and a cap on a connection's life (a client that
//! never reads its answers is let go).
//!
//! `GET` (and `HEAD`) `/metrics` answers the text exposition format
//! (`text/plain; version=0.0.4`); another path is 404, another method on
//! `/metrics` 405.

use std::convert::Infallible;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Semaphore, oneshot};

use crate::metrics::Metrics;

/// The whole request head (request line and headers) must come within
/// this; also how long a kept-alive connection may wait for the next.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest request head taken (a scraper sends a few hundred bytes);
/// past it the answer is 431 and the connection is closed.
pub(crate) const MAX_HEADER_BYTES: usize = 16 * 1024;
/// What hyper may buffer for a connection, either way.
const MAX_BUFFER: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;
/// Connections held at once; one more is closed as soon as accepted (an
/// idle one is let go after `HEADER_TIMEOUT`, so a flood holds the
/// door shut for that long at most).
pub(crate) const MAX_CONNECTIONS: usize = 1024;
/// A connection's longest life; then it is closed gracefully (an answer
/// being written gets `GRACE` more).
const LIFETIME: Duration = Duration::from_secs(60);
const GRACE: Duration = Duration::from_secs(5);
/// Connections the kernel completes before the server takes them (a
/// burst of clients is not met with dropped SYNs and 1-s retries; the
/// kernel caps it at `net.core.somaxconn`).
const BACKLOG: u32 = 1024;
/// The pause after `accept` fails (too many open files, say).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Why the metrics server could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("--metrics {spec}: {source}")]
    Address {
        spec: String,
        source: std::io::Error,
    },
    #[error("--metrics {0}: no address")]
    NoAddress(String),
    #[error("--metrics {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("--metrics: starting the server: {0}")]
    Runtime(std::io::Error),
}

impl From<MetricsError> for String {
    fn from(e: MetricsError) -> String {
        e.to_string()
    }
}

/// An HTTP server of `/metrics`; it stops when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// `ADDR:PORT`, or a bare port on loopback.
fn address(spec: &str) -> Result<SocketAddr, MetricsError> {
    let spec = if spec.parse::<u16>().is_ok() {
        format!("127.0.0.1:{spec}")
    } else {
        spec.to_string()
    };
    spec.to_socket_addrs()
        .map_err(|source| MetricsError::Address {
            spec: spec.clone(),
            source,
        })?
        .next()
        .ok_or(MetricsError::NoAddress(spec))
}

impl MetricsServer {
    /// Serves `metrics` on `spec` (`ADDR:PORT`, or a port on loopback).
    pub fn start(spec: &str, metrics: Arc<Metrics>) -> Result<MetricsServer, MetricsError> {
        let addr = address(spec)?;
        let bind = |source| MetricsError::Bind { addr, source };
        raise_fd_limit();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(MetricsError::Runtime)?;
        let listener = {
            let _in = runtime.enter();
            let socket = if addr.is_ipv4() {
                TcpSocket::new_v4()
            } else {
                TcpSocket::new_v6()
            }
            .map_err(bind)?;
            socket.set_reuseaddr(true).map_err(bind)?;
            socket.bind(addr).map_err(bind)?;
            socket.listen(BACKLOG).map_err(bind)?
        };
        let addr = listener.local_addr().map_err(bind)?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || runtime.block_on(serve(listener, metrics, stopped)))
            .map_err(MetricsError::Runtime)?;
        Ok(MetricsServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Raises the soft limit of open files, where the hard one allows, so
/// that `MAX_CONNECTIONS` fit beside the rest of the process (a soft
/// limit of 1,024 is common).
fn raise_fd_limit() {
    let want = (MAX_CONNECTIONS + 256) as libc::rlim_t;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, which lives here.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur >= want {
        return;
    }
    lim.rlim_cur = want.min(lim.rlim_max);
    // SAFETY: setrlimit only reads the struct; a refusal changes nothing.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
}

/// Accepts until `stopped`; each connection a task (the runtime's end,
/// when the thread returns, ends them).
async fn serve(listener: TcpListener, metrics: Arc<Metrics>, mut stopped: oneshot::Receiver<()>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_header_size(MAX_HEADER_BYTES)
        .max_buf_size(MAX_BUFFER)
        .max_headers(MAX_HEADERS);
    loop {
        let accepted = std::future::poll_fn(|cx| {
            if Pin::new(&mut stopped).poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            listener.poll_accept(cx).map(Some)
        })
        .await;
        let stream = match accepted {
            None => return,
            Some(Ok((stream, _))) => stream,
            Some(Err(_)) => {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        // Full: this one is closed at once (dropped), the others go on.
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let metrics = metrics.clone();
        let conn = http.serve_connection(
            TokioIo::new(stream),
            hyper::service::service_fn(move |req| {
                let metrics = metrics.clone();
                async move { Ok::<_, Infallible>(answer(&req, &metrics)) }
            }),
        );
        tokio::spawn(async move {
            let mut conn = std::pin::pin!(conn);
            if tokio::time::timeout(LIFETIME, conn.as_mut()).await.is_err() {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(GRACE, conn).await;
            }
            drop(slot);
        });
    }
}

/// The answer to one request.
fn answer(req: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let (status, body) = if req.uri().path() != "/metrics" {
        (
            StatusCode::NOT_FOUND,
            "not found: GET /metrics\n".to_string(),
        )
    } else if req.method() != Method::GET && req.method() != Method::HEAD {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed: GET /metrics\n".to_string(),
        )
    } else {
        (StatusCode::OK, metrics.render())
    };
    let mut res = Response::new(Full::new(Bytes::from(body)));
    *res.status_mut() = status;
    res.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    if status == StatusCode::METHOD_NOT_ALLOWED {
        res.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
    }
    res
}
