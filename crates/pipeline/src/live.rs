//! Live interfaces through AF_PACKET sockets: [`Live`] reads the frames
//! arriving on one interface as a [`Source`], [`Port`] sends packets out of
//! one as a [`Sink`]. Both need root or CAP_NET_RAW.
//!
//! [`Live`] receives with `recvmmsg`, up to a batch ([`BATCH`]) per system
//! call, not through a TPACKET_V3 ring: a batch owns its bytes, so every
//! frame is copied out of the kernel once either way, and a ring would add
//! a memory protocol shared with the kernel (block ownership, a block
//! retire timeout that holds back slow traffic by up to its length) to
//! save one system call per batch, little beside running the program on
//! the batch's packets. Frames are received into a buffer of the largest
//! frame a hook takes ([`runtime::MAX_FRAME`]) each and copied into the
//! batch; a larger one (a GRO or GSO super-packet) is cut there and
//! counted ([`LiveStats::truncated`]), never a panic.

use std::cell::Cell;
use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use capture::LinkKind;
use kernel::packet_socket::{PacketSocket, RecvBuffers, SocketError};

use crate::batch::{BATCH, Batch};
use crate::sink::{Sink, SinkError};
use crate::source::{Source, SourceError};

/// How long [`Live`] waits in one `poll` before looking at its stop flag.
const POLL_MS: i32 = 50;

/// Bytes received per frame: the largest frame a hook takes.
const SLOT: usize = runtime::MAX_FRAME;

/// An interface this network namespace does not have; the message lists
/// those it has.
#[derive(Debug, thiserror::Error)]
pub enum InterfaceError {
    /// A name no interface can have.
    #[error("interface `{}`: the name has a NUL byte", name.escape_debug())]
    NulInName { name: String },
    /// No interface has this name.
    #[error("interface `{name}`: {source}; this network namespace has: {}", has.join(", "))]
    NoName {
        name: String,
        source: std::io::Error,
        /// `name (index)` of every interface there is.
        has: Vec<String>,
    },
    /// No interface has this index.
    #[error("interface index {index}: {source}; this network namespace has: {}", has.join(", "))]
    NoIndex {
        index: u32,
        source: std::io::Error,
        /// `name (index)` of every interface there is.
        has: Vec<String>,
    },
}

/// A network interface of the calling thread's network namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub index: u32,
}

impl Interface {
    /// The interface named `name`.
    pub fn by_name(name: &str) -> Result<Interface, InterfaceError> {
        let c = CString::new(name).map_err(|_| InterfaceError::NulInName {
            name: name.to_string(),
        })?;
        // SAFETY: `c` is a valid NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
        if index == 0 {
            return Err(InterfaceError::NoName {
                name: name.to_string(),
                source: std::io::Error::last_os_error(),
                has: interface_names(),
            });
        }
        Ok(Interface {
            name: name.to_string(),
            index,
        })
    }

    /// The interface whose index is `index`.
    pub fn by_index(index: u32) -> Result<Interface, InterfaceError> {
        let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
        // SAFETY: `buf` has the IF_NAMESIZE bytes if_indextoname writes at most.
        let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
        if p.is_null() {
            return Err(InterfaceError::NoIndex {
                index,
                source: std::io::Error::last_os_error(),
                has: interface_names(),
            });
        }
        // SAFETY: if_indextoname wrote a NUL-terminated name into `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        Ok(Interface {
            name: name.to_string_lossy().into_owned(),
            index,
        })
    }

    /// A name, or else a number taken as an interface index.
    pub fn lookup(name_or_index: &str) -> Result<Interface, InterfaceError> {
        match Interface::by_name(name_or_index) {
            Ok(i) => Ok(i),
            Err(e) => match name_or_index.parse::<u32>() {
                Ok(index) if index > 0 => Interface::by_index(index),
                _ => Err(e),
            },
        }
    }
}

/// `name (index)` of every interface of this network namespace.
fn interface_names() -> Vec<String> {
    let mut out = Vec::new();
    // SAFETY: if_nameindex returns an array ended by a zero entry, or null.
    let list = unsafe { libc::if_nameindex() };
    if list.is_null() {
        return out;
    }
    // SAFETY: the array is walked up to its zero entry, then freed once.
    unsafe {
        let mut p = list;
        while (*p).if_index != 0 {
            let name = std::ffi::CStr::from_ptr((*p).if_name).to_string_lossy();
            out.push(format!("{name} ({})", (*p).if_index));
            p = p.add(1);
        }
        libc::if_freenameindex(list);
    }
    out
}

/// `what: errno text`, with a hint where a privilege is missing.
fn os_error(what: &str, e: std::io::Error) -> String {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => " (AF_PACKET sockets need root or CAP_NET_RAW)",
        _ => "",
    };
    format!("{what}: {e}{hint}")
}

/// An AF_PACKET raw socket on `iface`, set up by `configure` before it is
/// bound (to `protocol`, host order; 0 receives nothing), so that no
/// frame arrives before its options hold.
fn packet_socket(
    iface: &Interface,
    protocol: u16,
    configure: impl FnOnce(&PacketSocket) -> Result<(), SocketError>,
) -> Result<PacketSocket, String> {
    PacketSocket::bind(iface.index, protocol, configure)
        .map_err(|e| os_error(&format!("interface `{}`: {}", iface.name, e.what), e.source))
}

/// The wall clock now, in nanoseconds (for frames without a timestamp).
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// What a [`Live`] source has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveStats {
    /// Frames read.
    pub received: u64,
    /// Frames longer than [`runtime::MAX_FRAME`] bytes, cut there.
    pub truncated: u64,
    /// Frames the kernel dropped before they could be read (the socket's
    /// receive buffer was full).
    pub dropped: u64,
}

/// Which frames of an interface a [`Live`] source reads: tcpdump's `-Q`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Direction {
    /// Frames arriving (what an XDP or tc ingress program sees).
    #[default]
    In,
    /// Frames the host sends out of the interface.
    Out,
    /// Both, as tcpdump captures by default. On a loopback interface every
    /// frame is seen once, as it arrives (libpcap drops the outgoing copy).
    InOut,
}

/// Frames arriving on one interface, read live from an AF_PACKET socket
/// (`ETH_P_ALL`, `PACKET_IGNORE_OUTGOING`: what this or any socket sends
/// out of the interface is not seen, unless another [`Direction`] is
/// asked for), with the kernel's receive timestamps
/// (`SO_TIMESTAMPNS`, wall clock). VLAN tags the kernel took off the frame
/// are put back, as they arrived.
///
/// `fill` waits until at least one frame has arrived and returns what has
/// arrived by then (up to a batch). It waits in `poll`s of 50 ms and ends
/// the source (returns an empty batch) once its stop flag is set. Not
/// forkable: a frame can be read once only.
pub struct Live {
    sock: PacketSocket,
    iface: Interface,
    stop: Option<&'static AtomicBool>,
    /// [`BATCH`] slots of [`SLOT`] bytes.
    rx: RecvBuffers,
    direction: Direction,
    seq: u64,
    received: u64,
    truncated: u64,
    dropped: Cell<u64>,
}

impl Live {
    /// Reads interface `name` (or, when no interface has that name and it
    /// is a number, the interface with that index).
    pub fn open(name: &str, stop: Option<&'static AtomicBool>) -> Result<Live, SourceError> {
        let iface = Interface::lookup(name).map_err(|e| SourceError(e.to_string()))?;
        Live::on(iface, stop, None, Direction::In)
    }

    /// Reads interface `name` through a classic BPF filter the kernel runs
    /// (`SO_ATTACH_FILTER`, attached before the socket is bound, so no
    /// frame the filter refuses is ever read): as libpcap captures. The
    /// filter sees the frame from its link-layer header, as the kernel
    /// holds it (a VLAN tag the device took off is not in the bytes: the
    /// ancillary `vlan_avail`/`vlan_tci` loads read it).
    pub fn open_filtered(
        name: &str,
        stop: Option<&'static AtomicBool>,
        filter: &[cbpf::Insn],
    ) -> Result<Live, SourceError> {
        Live::capture(name, stop, Some(filter), Direction::In)
    }

    /// Reads the frames of interface `name` going `direction`, through a
    /// classic BPF filter the kernel runs if one is given: as tcpdump
    /// captures (`-Q`).
    pub fn capture(
        name: &str,
        stop: Option<&'static AtomicBool>,
        filter: Option<&[cbpf::Insn]>,
        direction: Direction,
    ) -> Result<Live, SourceError> {
        if let Some(f) = filter {
            cbpf::check(f).map_err(|e| SourceError(format!("the filter: {e}")))?;
        }
        let iface = Interface::lookup(name).map_err(|e| SourceError(e.to_string()))?;
        Live::on(iface, stop, filter, direction)
    }

    /// Reads the interface whose index is `ifindex`.
    pub fn open_index(
        ifindex: u32,
        stop: Option<&'static AtomicBool>,
    ) -> Result<Live, SourceError> {
        let iface = Interface::by_index(ifindex).map_err(|e| SourceError(e.to_string()))?;
        Live::on(iface, stop, None, Direction::In)
    }

    fn on(
        iface: Interface,
        stop: Option<&'static AtomicBool>,
        filter: Option<&[cbpf::Insn]>,
        direction: Direction,
    ) -> Result<Live, SourceError> {
        let sock = packet_socket(&iface, libc::ETH_P_ALL as u16, |sock| {
            if let Some(prog) = filter {
                let prog: Vec<libc::sock_filter> = prog
                    .iter()
                    .map(|i| libc::sock_filter {
                        code: i.code,
                        jt: i.jt,
                        jf: i.jf,
                        k: i.k,
                    })
                    .collect();
                sock.attach_filter(&prog)
                    .map_err(|e| SocketError::new("attaching the filter", e))?;
            }
            let opt = |level, name, value, what: &str| {
                sock.set_int(level, name, value)
                    .map_err(|e| SocketError::new(what, e))
            };
            if direction == Direction::In {
                opt(
                    libc::SOL_PACKET,
                    libc::PACKET_IGNORE_OUTGOING,
                    1,
                    "setting PACKET_IGNORE_OUTGOING (Linux 4.20 or later)",
                )?;
            }
            opt(
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                1,
                "setting SO_TIMESTAMPNS",
            )?;
            opt(
                libc::SOL_PACKET,
                libc::PACKET_AUXDATA,
                1,
                "setting PACKET_AUXDATA",
            )?;
            // Room for bursts: 8 MiB where privileged, else what the
            // system allows (best effort either way).
            if sock
                .set_int(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20)
                .is_err()
            {
                let _ = sock.set_int(libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20);
            }
            Ok(())
        })
        .map_err(SourceError)?;
        Ok(Live {
            sock,
            iface,
            stop,
            rx: RecvBuffers::new(BATCH, SLOT),
            direction,
            seq: 0,
            received: 0,
            truncated: 0,
            dropped: Cell::new(0),
        })
    }

    /// The interface read.
    pub fn interface(&self) -> &Interface {
        &self.iface
    }

    /// What has been seen so far.
    pub fn stats(&self) -> LiveStats {
        // Reading the statistics resets the kernel's counters, so they
        // are added up.
        if let Ok(drops) = self.sock.drops() {
            self.dropped.set(self.dropped.get() + drops);
        }
        LiveStats {
            received: self.received,
            truncated: self.truncated,
            dropped: self.dropped.get(),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Waits up to [`POLL_MS`] for frames: whether some may be read.
    fn wait(&self) -> Result<bool, SourceError> {
        self.sock
            .wait(POLL_MS)
            .map_err(|e| self.error("waiting for frames", e))
    }

    fn error(&self, what: &str, e: std::io::Error) -> SourceError {
        SourceError(os_error(
            &format!("interface `{}`: {what}", self.iface.name),
            e,
        ))
    }

    /// Reads the frames waiting, up to the room left in `batch`, without
    /// blocking: how many went the way asked for (and are in the batch).
    fn receive(&mut self, batch: &mut Batch) -> Result<usize, SourceError> {
        let room = BATCH - batch.len().min(BATCH);
        if room == 0 {
            return Ok(0);
        }
        let n = self
            .sock
            .receive(&mut self.rx, room)
            .map_err(|e| self.error("receiving", e))?;
        let mut kept = 0;
        for i in 0..n {
            let (frame, m) = self.rx.frame(i);
            if !self.wanted(m.outgoing, m.loopback) {
                continue;
            }
            kept += 1;
            let (ts, vlan, len) = (m.timestamp_ns, m.vlan, m.len);
            let cut = m.truncated || (vlan.is_some() && len + 4 > runtime::MAX_FRAME);
            self.truncated += u64::from(cut);
            self.received += 1;
            self.seq += 1;
            batch.push_with(
                self.seq,
                ts.unwrap_or_else(now_ns),
                LinkKind::Ethernet,
                |b| {
                    match vlan {
                        // The tag goes back after the two addresses.
                        Some(tag) if frame.len() >= 12 => {
                            b.extend_from_slice(&frame[..12]);
                            b.extend_from_slice(&tag);
                            b.extend_from_slice(&frame[12..]);
                        }
                        _ => b.extend_from_slice(frame),
                    }
                    true
                },
            );
        }
        Ok(kept)
    }
}

impl Live {
    /// Whether a frame with this address goes the way asked for (libpcap's
    /// rules: an outgoing frame on a loopback device is never kept, its
    /// incoming copy is).
    fn wanted(&self, outgoing: bool, loopback: bool) -> bool {
        if outgoing && loopback {
            return false;
        }
        match self.direction {
            Direction::In => !outgoing,
            Direction::Out => outgoing,
            Direction::InOut => true,
        }
    }
}

impl Live {
    /// As [`Source::fill`], but returns after one wait of at most 50 ms
    /// when nothing arrived, with the batch empty: a thread with timers
    /// of its own gets to run them (look at the stop flag to tell an idle
    /// interface from the end).
    pub fn fill_or_idle(&mut self, batch: &mut Batch) -> Result<(), SourceError> {
        if !self.stopped() && self.wait()? {
            self.receive(batch)?;
        }
        Ok(())
    }
}

impl Source for Live {
    fn fill(&mut self, batch: &mut Batch) -> Result<(), SourceError> {
        loop {
            if self.stopped() {
                return Ok(());
            }
            if self.wait()? && self.receive(batch)? > 0 {
                return Ok(());
            }
        }
    }

    fn note(&self) -> Option<String> {
        let s = self.stats();
        Some(format!(
            "live on {} (ifindex {}): {} frames received, {} dropped by the kernel, {} cut at {} bytes",
            self.iface.name,
            self.iface.index,
            s.received,
            s.dropped,
            s.truncated,
            runtime::MAX_FRAME
        ))
    }
}

/// What a [`Port`] has sent, shared with whoever wants to know while the
/// port itself belongs to the sinks.
#[derive(Debug, Default)]
pub struct PortCounts {
    sent: AtomicU64,
    dropped: AtomicU64,
    refused: AtomicU64,
}

impl PortCounts {
    /// Frames the kernel took.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Frames dropped because the device stayed busy (`ENOBUFS`).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Frames the interface refused: too long for its MTU, or shorter
    /// than an Ethernet header.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Tries before frames the device has no room for are dropped, a tenth
/// of a millisecond apart.
const BUSY_TRIES: u32 = 200;

/// Sends packets out of one interface through an AF_PACKET socket, as
/// they are: each packet (its fragments after its linear bytes) is one
/// frame. Frames are gathered and sent with `sendmmsg`, a batch at a time:
/// at the end of every batch the pipeline ran, when [`BATCH`] are waiting,
/// and at `finish`.
pub struct Port {
    sock: PacketSocket,
    iface: Interface,
    bytes: Vec<u8>,
    frames: Vec<(usize, usize)>,
    counts: Arc<PortCounts>,
}

impl Port {
    /// Sends out of interface `name` (or, when no interface has that name
    /// and it is a number, the interface with that index).
    pub fn open(name: &str) -> Result<Port, SinkError> {
        let iface = Interface::lookup(name).map_err(|e| SinkError(e.to_string()))?;
        // Bound to protocol 0: the socket receives nothing.
        let sock = packet_socket(&iface, 0, |_| Ok(())).map_err(SinkError)?;
        Ok(Port {
            sock,
            iface,
            bytes: Vec::with_capacity(BATCH * 2048),
            frames: Vec::with_capacity(BATCH),
            counts: Arc::default(),
        })
    }

    /// The interface packets leave by.
    pub fn interface(&self) -> &Interface {
        &self.iface
    }

    /// Its counts, readable after the port has gone to the sinks.
    pub fn counts(&self) -> Arc<PortCounts> {
        self.counts.clone()
    }

    fn error(&self, e: std::io::Error) -> SinkError {
        SinkError(os_error(
            &format!("interface `{}`: sending", self.iface.name),
            e,
        ))
    }

    /// Sends every frame waiting.
    fn send(&mut self) -> Result<(), SinkError> {
        let result = self.send_waiting();
        self.bytes.clear();
        self.frames.clear();
        result.map_err(|e| self.error(e))
    }

    /// Sends the frames waiting, retrying while the device is busy; the
    /// error that stopped it.
    fn send_waiting(&self) -> Result<(), std::io::Error> {
        let frames: Vec<&[u8]> = self
            .frames
            .iter()
            .map(|&(start, len)| &self.bytes[start..start + len])
            .collect();
        let (mut next, mut busy) = (0, 0);
        let c = &self.counts;
        while next < frames.len() {
            let e = match self.sock.send_many(&frames[next..]) {
                Ok(n) if n > 0 => {
                    c.sent.fetch_add(n as u64, Ordering::Relaxed);
                    next += n;
                    busy = 0;
                    continue;
                }
                Ok(_) => std::io::Error::last_os_error(),
                // Nothing sent: the error is the first waiting frame's.
                Err(e) => e,
            };
            match e.raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::ENOBUFS | libc::EAGAIN) if busy < BUSY_TRIES => {
                    busy += 1;
                    std::thread::sleep(Duration::from_micros(100));
                }
                Some(libc::ENOBUFS | libc::EAGAIN) => {
                    c.dropped
                        .fetch_add((frames.len() - next) as u64, Ordering::Relaxed);
                    break;
                }
                Some(libc::EMSGSIZE | libc::EINVAL) => {
                    c.refused.fetch_add(1, Ordering::Relaxed);
                    next += 1;
                }
                _ => return Err(e),
            }
        }
        Ok(())
    }
}

impl Sink for Port {
    fn write(&mut self, packet: &[u8], frags: &[u8], _timestamp_ns: u64) -> Result<(), SinkError> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(packet);
        self.bytes.extend_from_slice(frags);
        self.frames.push((start, packet.len() + frags.len()));
        if self.frames.len() >= BATCH {
            self.send()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        if self.frames.is_empty() {
            return Ok(());
        }
        self.send()
    }

    fn finish(mut self: Box<Self>) -> Result<(), SinkError> {
        self.flush()
    }
}
