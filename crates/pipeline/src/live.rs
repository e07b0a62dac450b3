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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use io::LinkKind;

use crate::batch::{BATCH, Batch};
use crate::sink::{Sink, SinkError};
use crate::source::{Source, SourceError};

/// How long [`Live`] waits in one `poll` before looking at its stop flag.
const POLL_MS: i32 = 50;

/// Bytes received per frame: the largest frame a hook takes.
const SLOT: usize = runtime::MAX_FRAME;

/// Control message room per frame: a timestamp and packet auxdata, with
/// room to spare.
const CONTROL_WORDS: usize = 32;

/// A network interface of the calling thread's network namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub index: u32,
}

impl Interface {
    /// The interface named `name`.
    pub fn by_name(name: &str) -> Result<Interface, String> {
        let c = CString::new(name).map_err(|_| {
            format!(
                "interface `{}`: the name has a NUL byte",
                name.escape_debug()
            )
        })?;
        // SAFETY: `c` is a valid NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
        if index == 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!(
                "interface `{name}`: {e}; this network namespace has: {}",
                interface_names().join(", ")
            ));
        }
        Ok(Interface {
            name: name.to_string(),
            index,
        })
    }

    /// The interface whose index is `index`.
    pub fn by_index(index: u32) -> Result<Interface, String> {
        let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
        // SAFETY: `buf` has the IF_NAMESIZE bytes if_indextoname writes at most.
        let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
        if p.is_null() {
            let e = std::io::Error::last_os_error();
            return Err(format!(
                "interface index {index}: {e}; this network namespace has: {}",
                interface_names().join(", ")
            ));
        }
        // SAFETY: if_indextoname wrote a NUL-terminated name into `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        Ok(Interface {
            name: name.to_string_lossy().into_owned(),
            index,
        })
    }

    /// A name, or else a number taken as an interface index.
    pub fn lookup(name_or_index: &str) -> Result<Interface, String> {
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

/// Attaches a classic BPF program to a socket (`SO_ATTACH_FILTER`).
fn attach_filter(fd: &OwnedFd, prog: &[cbpf::Insn]) -> std::io::Result<()> {
    let fprog = libc::sock_fprog {
        len: u16::try_from(prog.len())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `fprog` points at `prog.len()` instructions laid out as
    // `struct sock_filter` (`cbpf::Insn` is `repr(C)` with its fields),
    // which the kernel copies during the call.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as u32,
        )
    };
    if ret != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Sets an integer socket option.
fn set_int(fd: &OwnedFd, level: i32, name: i32, value: i32) -> std::io::Result<()> {
    // SAFETY: `value` is a valid int option value of the size given.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as u32,
        )
    };
    if ret != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// An AF_PACKET raw socket on `iface`, set up by `configure` before it is
/// bound (to `protocol`, network order; 0 receives nothing), so that no
/// frame arrives before its options hold.
fn packet_socket(
    iface: &Interface,
    protocol: u16,
    configure: impl FnOnce(&OwnedFd) -> Result<(), String>,
) -> Result<OwnedFd, String> {
    let on = format!("interface `{}`", iface.name);
    // SAFETY: plain socket creation; protocol 0 receives nothing until bound.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(os_error(&format!("{on}: opening an AF_PACKET socket"), e));
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    configure(&fd).map_err(|e| format!("{on}: {e}"))?;
    // SAFETY: sockaddr_ll is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = protocol.to_be();
    addr.sll_ifindex = iface.index as i32;
    // SAFETY: `addr` is a valid sockaddr_ll of the size given.
    let ret = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of_val(&addr) as u32,
        )
    };
    if ret != 0 {
        let e = std::io::Error::last_os_error();
        return Err(os_error(&format!("{on}: binding the AF_PACKET socket"), e));
    }
    Ok(fd)
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
    fd: OwnedFd,
    iface: Interface,
    stop: Option<&'static AtomicBool>,
    /// [`BATCH`] slots of [`SLOT`] bytes.
    buf: Vec<u8>,
    control: Vec<u64>,
    /// Each frame's link-layer address: its packet type tells direction.
    names: Vec<libc::sockaddr_ll>,
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
        let iface = Interface::lookup(name).map_err(SourceError)?;
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
        let iface = Interface::lookup(name).map_err(SourceError)?;
        Live::on(iface, stop, filter, direction)
    }

    /// Reads the interface whose index is `ifindex`.
    pub fn open_index(
        ifindex: u32,
        stop: Option<&'static AtomicBool>,
    ) -> Result<Live, SourceError> {
        let iface = Interface::by_index(ifindex).map_err(SourceError)?;
        Live::on(iface, stop, None, Direction::In)
    }

    fn on(
        iface: Interface,
        stop: Option<&'static AtomicBool>,
        filter: Option<&[cbpf::Insn]>,
        direction: Direction,
    ) -> Result<Live, SourceError> {
        let fd = packet_socket(&iface, libc::ETH_P_ALL as u16, |fd| {
            if let Some(prog) = filter {
                attach_filter(fd, prog).map_err(|e| os_error("attaching the filter", e))?;
            }
            let opt = |level, name, value, what: &str| {
                set_int(fd, level, name, value).map_err(|e| os_error(what, e))
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
            if set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20).is_err() {
                let _ = set_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20);
            }
            Ok(())
        })
        .map_err(SourceError)?;
        Ok(Live {
            fd,
            iface,
            stop,
            buf: vec![0; BATCH * SLOT],
            control: vec![0; BATCH * CONTROL_WORDS],
            // SAFETY: sockaddr_ll is plain data; all zeroes is a valid value.
            names: vec![unsafe { std::mem::zeroed() }; BATCH],
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
        // SAFETY: tpacket_stats is plain data; all zeroes is a valid value.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
        // SAFETY: `st` and `len` are valid for the kernel to write; reading
        // the statistics resets the kernel's counters, so they are added up.
        let ret = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if ret == 0 {
            self.dropped
                .set(self.dropped.get() + u64::from(st.tp_drops));
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
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ret = unsafe { libc::poll(&mut pfd, 1, POLL_MS) };
        if ret < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(false);
            }
            return Err(self.error("waiting for frames", e));
        }
        // Errors (the interface went down or away) are told by recvmmsg.
        Ok(ret > 0)
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
        let mut iov: Vec<libc::iovec> = self
            .buf
            .chunks_exact_mut(SLOT)
            .take(room)
            .map(|slot| libc::iovec {
                iov_base: slot.as_mut_ptr().cast(),
                iov_len: slot.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .zip(self.control.chunks_exact_mut(CONTROL_WORDS))
            .zip(self.names.iter_mut())
            .map(|((v, control), name)| {
                // SAFETY: mmsghdr is plain data; all zeroes is a valid value.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_name = (name as *mut libc::sockaddr_ll).cast();
                m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_control = control.as_mut_ptr().cast();
                m.msg_hdr.msg_controllen = std::mem::size_of_val(control);
                m
            })
            .collect();
        // SAFETY: every header points at one live iovec over its own slot of
        // `buf`, at its own control buffer and at its own address, each of
        // the length given, all of which outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR) => Ok(0),
                _ => Err(self.error("receiving", e)),
            };
        }
        let n = n as usize;
        let mut kept = 0;
        for (i, m) in msgs.iter().take(n).enumerate() {
            if !self.wanted(&self.names[i]) {
                continue;
            }
            kept += 1;
            let (ts, vlan) = control_of(&m.msg_hdr);
            let len = (m.msg_len as usize).min(SLOT);
            let frame = &self.buf[i * SLOT..i * SLOT + len];
            let cut = m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0
                || (vlan.is_some() && len + 4 > runtime::MAX_FRAME);
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
    fn wanted(&self, from: &libc::sockaddr_ll) -> bool {
        let outgoing = from.sll_pkttype == libc::PACKET_OUTGOING;
        if outgoing && from.sll_hatype == libc::ARPHRD_LOOPBACK {
            return false;
        }
        match self.direction {
            Direction::In => !outgoing,
            Direction::Out => outgoing,
            Direction::InOut => true,
        }
    }
}

/// The receive timestamp and the VLAN tag (TPID and TCI, as on the wire)
/// in a received message's control data.
fn control_of(h: &libc::msghdr) -> (Option<u64>, Option<[u8; 4]>) {
    let (mut ts, mut vlan) = (None, None);
    // SAFETY: `h` is a header recvmmsg filled: its control buffer and
    // length describe the control messages the kernel wrote, which the
    // CMSG macros walk within that length.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c);
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => {
                    let t = std::ptr::read_unaligned(data as *const libc::timespec);
                    ts = Some(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
                }
                (libc::SOL_PACKET, libc::PACKET_AUXDATA) => {
                    let aux = std::ptr::read_unaligned(data as *const libc::tpacket_auxdata);
                    if aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0 {
                        let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                            aux.tp_vlan_tpid
                        } else {
                            libc::ETH_P_8021Q as u16
                        };
                        let [a, b] = tpid.to_be_bytes();
                        let [c, d] = aux.tp_vlan_tci.to_be_bytes();
                        vlan = Some([a, b, c, d]);
                    }
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    (ts, vlan)
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
    fd: OwnedFd,
    iface: Interface,
    bytes: Vec<u8>,
    frames: Vec<(usize, usize)>,
    counts: Arc<PortCounts>,
}

impl Port {
    /// Sends out of interface `name` (or, when no interface has that name
    /// and it is a number, the interface with that index).
    pub fn open(name: &str) -> Result<Port, SinkError> {
        let iface = Interface::lookup(name).map_err(SinkError)?;
        // Bound to protocol 0: the socket receives nothing.
        let fd = packet_socket(&iface, 0, |_| Ok(())).map_err(SinkError)?;
        Ok(Port {
            fd,
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
        let mut iov: Vec<libc::iovec> = self
            .frames
            .iter()
            .map(|&(start, len)| libc::iovec {
                iov_base: self.bytes[start..].as_ptr() as *mut libc::c_void,
                iov_len: len,
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .map(|v| {
                // SAFETY: mmsghdr is plain data; all zeroes is a valid value.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        let (mut next, mut busy) = (0, 0);
        let c = &self.counts;
        while next < msgs.len() {
            let rest = &mut msgs[next..];
            // SAFETY: every header points at one live iovec over bytes of
            // `self.bytes`, which is not touched until the call returns.
            let n = unsafe {
                libc::sendmmsg(self.fd.as_raw_fd(), rest.as_mut_ptr(), rest.len() as u32, 0)
            };
            if n > 0 {
                c.sent.fetch_add(n as u64, Ordering::Relaxed);
                next += n as usize;
                busy = 0;
                continue;
            }
            // Nothing sent: the error is the first waiting frame's.
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::ENOBUFS | libc::EAGAIN) if busy < BUSY_TRIES => {
                    busy += 1;
                    std::thread::sleep(Duration::from_micros(100));
                }
                Some(libc::ENOBUFS | libc::EAGAIN) => {
                    c.dropped
                        .fetch_add((msgs.len() - next) as u64, Ordering::Relaxed);
                    break;
                }
                Some(libc::EMSGSIZE | libc::EINVAL) => {
                    c.refused.fetch_add(1, Ordering::Relaxed);
                    next += 1;
                }
                _ => {
                    self.bytes.clear();
                    self.frames.clear();
                    return Err(self.error(e));
                }
            }
        }
        self.bytes.clear();
        self.frames.clear();
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
