//! AF_XDP sockets on plain system calls: a UMEM (frames in an anonymous
//! mapping, registered with the socket), its FILL and COMPLETION rings,
//! the RX and TX rings, bound to one queue of one interface in zero-copy
//! mode when the driver has it and copy mode otherwise (docs/datapath.md).
//! One UMEM per socket, so per queue: no locks between queues.

mod pool;
mod ring;

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

pub use pool::{FramePool, PoolKind};
pub use ring::{Consumer, Producer, XdpDesc};
use ring::{Mapping, RingMap};

/// Why an AF_XDP socket could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum XskError {
    #[error("{0}")]
    Config(String),
    #[error("no interface {0:?}")]
    NoInterface(String),
    #[error("queue {queue} is out of range: {dev} has {queues} queue(s) (0..{queues})")]
    QueueOutOfRange {
        dev: String,
        queue: u32,
        queues: u32,
    },
    #[error(
        "zero-copy AF_XDP is not supported by {dev}'s driver: use copy mode (or let sluice choose)"
    )]
    ZeroCopyUnsupported { dev: String },
    #[error("{0}: permission denied (AF_XDP needs root, or CAP_NET_RAW and CAP_NET_ADMIN)")]
    Permission(String),
    #[error(
        "{dev} queue {queue}: the AF_XDP socket is no longer bound (the interface was deleted or left the namespace)"
    )]
    Unbound { dev: String, queue: u32 },
    #[error("{what}: {source}")]
    Os {
        what: String,
        source: std::io::Error,
    },
}

impl XskError {
    /// The error of the last system call, for `what`.
    pub(crate) fn os(what: impl Into<String>) -> XskError {
        let source = std::io::Error::last_os_error();
        let what = what.into();
        if source.raw_os_error() == Some(libc::EPERM) {
            return XskError::Permission(what);
        }
        XskError::Os { what, source }
    }
}

/// How the socket is bound to the queue.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum BindMode {
    /// Zero-copy if the driver has it, copy otherwise.
    #[default]
    Auto,
    Copy,
    ZeroCopy,
}

/// The sizes of a socket and its UMEM.
#[derive(Clone, Debug)]
pub struct XskConfig {
    /// Bytes per frame: a power of two from 2048 to the page size.
    pub frame_size: u32,
    pub frame_count: u32,
    /// Bytes the kernel leaves free before each received packet (beyond
    /// its own XDP headroom).
    pub headroom: u32,
    pub rx_size: u32,
    pub tx_size: u32,
    pub fill_size: u32,
    pub comp_size: u32,
    pub bind: BindMode,
    pub need_wakeup: bool,
}

impl Default for XskConfig {
    fn default() -> XskConfig {
        XskConfig {
            frame_size: 4096,
            frame_count: 4096,
            headroom: 0,
            rx_size: 2048,
            tx_size: 2048,
            fill_size: 2048,
            comp_size: 2048,
            bind: BindMode::Auto,
            need_wakeup: true,
        }
    }
}

impl XskConfig {
    /// Refuses sizes the kernel would refuse, with the reason.
    pub fn check(&self) -> Result<(), XskError> {
        let page = page_size();
        if !self.frame_size.is_power_of_two() || self.frame_size < 2048 || self.frame_size > page {
            return Err(XskError::Config(format!(
                "frame size {} must be a power of two from 2048 to {page}",
                self.frame_size
            )));
        }
        for (name, n) in [
            ("RX ring", self.rx_size),
            ("TX ring", self.tx_size),
            ("FILL ring", self.fill_size),
            ("COMPLETION ring", self.comp_size),
        ] {
            if !n.is_power_of_two() {
                return Err(XskError::Config(format!(
                    "{name} size {n} must be a power of two"
                )));
            }
        }
        if self.frame_count == 0 {
            return Err(XskError::Config("the UMEM needs at least one frame".into()));
        }
        if u64::from(self.headroom) + 256 + 64 > u64::from(self.frame_size) {
            return Err(XskError::Config(format!(
                "headroom {} leaves no room for packets in {}-byte frames",
                self.headroom, self.frame_size
            )));
        }
        Ok(())
    }
}

fn page_size() -> u32 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u32 }
}

/// Whether the socket ended up in zero-copy mode.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BoundMode {
    Copy,
    ZeroCopy,
}

impl BoundMode {
    pub fn name(self) -> &'static str {
        match self {
            BoundMode::Copy => "copy",
            BoundMode::ZeroCopy => "zero-copy",
        }
    }
}

/// The kernel's counters for a socket (`XDP_STATISTICS`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct XskStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// One AF_XDP socket with its UMEM (its own, or shared with other sockets:
/// [`Xsk::open_shared`]). Fields drop in order: the rings are unmapped,
/// the socket closed, then the UMEM unmapped (by its last socket).
pub struct Xsk {
    pub fill: Producer<u64>,
    pub comp: Consumer<u64>,
    pub rx: Consumer<XdpDesc>,
    pub tx: Producer<XdpDesc>,
    fd: OwnedFd,
    umem: Arc<Mapping>,
    mode: BoundMode,
    config: XskConfig,
    dev: String,
    ifindex: u32,
    queue: u32,
}

// SAFETY: the UMEM mapping and the rings belong to this socket; whoever
// owns the `Xsk` is the only user.
unsafe impl Send for Xsk {}

fn setsockopt<T>(fd: RawFd, name: libc::c_int, value: &T, what: &str) -> Result<(), XskError> {
    // SAFETY: `value` is a live `T` of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_XDP,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(XskError::os(what));
    }
    Ok(())
}

fn getsockopt<T: Default>(fd: RawFd, name: libc::c_int, what: &str) -> Result<T, XskError> {
    let mut value = T::default();
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is a live `T` of the size passed.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_XDP,
            name,
            (&mut value as *mut T).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(XskError::os(what));
    }
    Ok(value)
}

/// The interface's index.
pub fn ifindex(dev: &str) -> Result<u32, XskError> {
    let name = CString::new(dev).map_err(|_| XskError::NoInterface(dev.into()))?;
    // SAFETY: a valid C string.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(XskError::NoInterface(dev.into())),
        i => Ok(i),
    }
}

/// How many queues AF_XDP may bind to on `dev` (ethtool's channel
/// counts), if the driver reports them.
pub fn queue_count(dev: &str) -> Option<u32> {
    #[repr(C)]
    #[derive(Default)]
    struct Channels {
        cmd: u32,
        max_rx: u32,
        max_tx: u32,
        max_other: u32,
        max_combined: u32,
        rx: u32,
        tx: u32,
        other: u32,
        combined: u32,
    }
    #[repr(C)]
    struct IfReq {
        name: [u8; libc::IFNAMSIZ],
        data: *mut Channels,
        _pad: [u8; 16],
    }
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    let mut ch = Channels {
        cmd: ETHTOOL_GCHANNELS,
        ..Channels::default()
    };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: &mut ch,
        _pad: [0; 16],
    };
    let bytes = dev.as_bytes();
    if bytes.len() >= libc::IFNAMSIZ {
        return None;
    }
    req.name[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: a datagram socket for the ioctl, closed by OwnedFd.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a fresh socket we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: SIOCETHTOOL reads the ifreq and writes the channels struct
    // it points to, both live for the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL, &mut req) };
    (rc == 0).then(|| ch.rx.max(ch.combined)).filter(|&n| n > 0)
}

impl Xsk {
    /// A socket on queue `queue` of `dev`, its UMEM registered, its rings
    /// mapped, bound as `config.bind` says. An XDP program redirecting to
    /// it (an XSKMAP entry) is the caller's business.
    pub fn open(dev: &str, queue: u32, config: &XskConfig) -> Result<Xsk, XskError> {
        Xsk::open_with(dev, queue, config, None)
    }

    /// A socket on another queue that shares `first`'s UMEM
    /// (`XDP_SHARED_UMEM`; its own FILL and COMPLETION rings, Linux 5.10+).
    /// Frames are then one pool for both: the caller shares it.
    pub fn open_shared(dev: &str, queue: u32, first: &Xsk) -> Result<Xsk, XskError> {
        Xsk::open_with(dev, queue, &first.config, Some(first))
    }

    fn open_with(
        dev: &str,
        queue: u32,
        config: &XskConfig,
        shared: Option<&Xsk>,
    ) -> Result<Xsk, XskError> {
        config.check()?;
        let ifindex = ifindex(dev)?;
        if let Some(queues) = queue_count(dev)
            && queue >= queues
        {
            return Err(XskError::QueueOutOfRange {
                dev: dev.into(),
                queue,
                queues,
            });
        }
        // SAFETY: plain socket creation.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(XskError::os("creating an AF_XDP socket"));
        }
        // SAFETY: `fd` is a fresh socket we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();

        let umem = match shared {
            Some(first) => first.umem.clone(),
            None => {
                let len = config.frame_size as usize * config.frame_count as usize;
                let umem = Mapping::new(len, None, "UMEM")?;
                let reg = libc::xdp_umem_reg {
                    addr: umem.ptr as u64,
                    len: len as u64,
                    chunk_size: config.frame_size,
                    headroom: config.headroom,
                    flags: 0,
                    tx_metadata_len: 0,
                };
                setsockopt(raw, libc::XDP_UMEM_REG, &reg, "registering the UMEM")?;
                Arc::new(umem)
            }
        };
        for (opt, size, what) in [
            (
                libc::XDP_UMEM_FILL_RING,
                config.fill_size,
                "sizing the FILL ring",
            ),
            (
                libc::XDP_UMEM_COMPLETION_RING,
                config.comp_size,
                "sizing the COMPLETION ring",
            ),
            (libc::XDP_RX_RING, config.rx_size, "sizing the RX ring"),
            (libc::XDP_TX_RING, config.tx_size, "sizing the TX ring"),
        ] {
            setsockopt(raw, opt, &size, what)?;
        }
        let off: libc::xdp_mmap_offsets = getsockopt_offsets(raw)?;
        let fill = RingMap::<u64>::map(
            raw,
            libc::XDP_UMEM_PGOFF_FILL_RING,
            &off.fr,
            config.fill_size,
            "FILL ring",
        )?;
        let comp = RingMap::<u64>::map(
            raw,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
            &off.cr,
            config.comp_size,
            "COMPLETION ring",
        )?;
        let rx = RingMap::<XdpDesc>::map(
            raw,
            libc::XDP_PGOFF_RX_RING as u64,
            &off.rx,
            config.rx_size,
            "RX ring",
        )?;
        let tx = RingMap::<XdpDesc>::map(
            raw,
            libc::XDP_PGOFF_TX_RING as u64,
            &off.tx,
            config.tx_size,
            "TX ring",
        )?;

        let mut flags = match config.bind {
            BindMode::Auto => 0,
            BindMode::Copy => libc::XDP_COPY,
            BindMode::ZeroCopy => libc::XDP_ZEROCOPY,
        };
        if config.need_wakeup {
            flags |= libc::XDP_USE_NEED_WAKEUP;
        }
        // A socket sharing a UMEM takes the first one's bind mode; the
        // kernel refuses any other flag with XDP_SHARED_UMEM.
        let (flags, shared_fd) = match shared {
            Some(first) => (libc::XDP_SHARED_UMEM, first.fd() as u32),
            None => (flags, 0),
        };
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: shared_fd,
        };
        if let Err(e) = bind_retrying(raw, &addr) {
            return Err(match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) if config.bind == BindMode::ZeroCopy => {
                    XskError::ZeroCopyUnsupported { dev: dev.into() }
                }
                Some(libc::EPERM) => XskError::Permission(format!("binding to {dev}")),
                Some(libc::EBUSY) => XskError::Os {
                    what: format!(
                        "binding an AF_XDP socket to {dev} queue {queue} (another AF_XDP \
                         socket holds the queue)"
                    ),
                    source: e,
                },
                _ => XskError::Os {
                    what: format!("binding an AF_XDP socket to {dev} queue {queue}"),
                    source: e,
                },
            });
        }
        let options: u32 = getsockopt(raw, libc::XDP_OPTIONS, "reading the socket's options")?;
        let mode = if options & libc::XDP_OPTIONS_ZEROCOPY != 0 {
            BoundMode::ZeroCopy
        } else {
            BoundMode::Copy
        };
        Ok(Xsk {
            fill: Producer::new(fill),
            comp: Consumer::new(comp),
            rx: Consumer::new(rx),
            tx: Producer::new(tx),
            fd,
            umem,
            mode,
            config: config.clone(),
            dev: dev.into(),
            ifindex,
            queue,
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn mode(&self) -> BoundMode {
        self.mode
    }

    pub fn config(&self) -> &XskConfig {
        &self.config
    }

    pub fn dev(&self) -> &str {
        &self.dev
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn queue(&self) -> u32 {
        self.queue
    }

    /// The frame holding UMEM address `addr` (its start: the address
    /// rounded down to the frame size).
    pub fn frame_of(&self, addr: u64) -> u64 {
        addr & !(u64::from(self.config.frame_size) - 1)
    }

    /// `len` bytes of the UMEM at `addr`, if they lie inside one frame.
    pub fn bytes_mut(&mut self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let frame = self.frame_of(addr);
        let end = addr.checked_add(len as u64)?;
        if end > frame + u64::from(self.config.frame_size) || end > self.umem.len as u64 {
            return None;
        }
        // SAFETY: in bounds of the UMEM mapping (checked above), which the
        // socket owns; `&mut self` keeps the borrow unique on our side. The
        // kernel writes only frames we handed it on the FILL ring, and the
        // caller reads frames the RX ring gave back.
        Some(unsafe { std::slice::from_raw_parts_mut(self.umem.ptr.add(addr as usize), len) })
    }

    /// Tells the kernel to send what is on the TX ring.
    pub fn kick_tx(&self) -> Result<(), XskError> {
        // SAFETY: a zero-length send on our socket.
        let rc = unsafe {
            libc::sendto(
                self.fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            // The kernel unbinds the socket when its interface goes away.
            if e.raw_os_error() == Some(libc::ENXIO) {
                return Err(XskError::Unbound {
                    dev: self.dev.clone(),
                    queue: self.queue,
                });
            }
            // The kernel is busy or out of completion room: try later.
            if !matches!(
                e.raw_os_error(),
                Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::ENETDOWN)
            ) {
                return Err(XskError::Os {
                    what: format!("{} queue {}: kicking TX", self.dev, self.queue),
                    source: e,
                });
            }
        }
        Ok(())
    }

    /// Wakes the kernel's RX processing when the FILL ring asks for it.
    pub fn wake_rx(&self) {
        // SAFETY: a zero-length, non-blocking receive on our socket.
        unsafe {
            libc::recvfrom(
                self.fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    }

    /// The kernel's counters for this socket.
    pub fn stats(&self) -> Result<XskStats, XskError> {
        let s: [u64; 6] = getsockopt(self.fd(), libc::XDP_STATISTICS, "reading XDP statistics")?;
        Ok(XskStats {
            rx_dropped: s[0],
            rx_invalid_descs: s[1],
            tx_invalid_descs: s[2],
            rx_ring_full: s[3],
            rx_fill_ring_empty_descs: s[4],
            tx_ring_empty_descs: s[5],
        })
    }
}

/// The pending error of socket `fd` (`SO_ERROR`, cleared by reading it):
/// the kernel sets `ENETDOWN` on an AF_XDP socket when it unbinds it
/// because its interface is unregistered (deleted, or moved to another
/// namespace).
pub fn socket_error(fd: RawFd) -> Option<std::io::Error> {
    let mut err: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` is a live c_int of the size passed.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Some(std::io::Error::last_os_error());
    }
    (err != 0).then(|| std::io::Error::from_raw_os_error(err))
}

fn getsockopt_offsets(fd: RawFd) -> Result<libc::xdp_mmap_offsets, XskError> {
    // SAFETY: all-zero is a valid xdp_mmap_offsets (plain integers).
    let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
    // SAFETY: `off` is live and of the size passed.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_XDP,
            libc::XDP_MMAP_OFFSETS,
            (&mut off as *mut libc::xdp_mmap_offsets).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(XskError::os("reading the ring offsets"));
    }
    if len as usize != size_of::<libc::xdp_mmap_offsets>() {
        return Err(XskError::Config(
            "this kernel's AF_XDP ring offsets predate the flags word (Linux < 5.4)".into(),
        ));
    }
    Ok(off)
}

/// How long a bind waits for a queue whose socket is being released.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Binds `raw` to `addr`. A queue stays busy for a moment after the
/// process that held it died (the kernel releases a closed socket's
/// buffer pool from a work queue): a datapath restarted at once would be
/// refused, so a busy queue is tried again for [`BUSY_WAIT`].
fn bind_retrying(raw: libc::c_int, addr: &libc::sockaddr_xdp) -> std::io::Result<()> {
    let t0 = std::time::Instant::now();
    loop {
        // SAFETY: `addr` is a live sockaddr_xdp of the size passed.
        let rc = unsafe {
            libc::bind(
                raw,
                (addr as *const libc::sockaddr_xdp).cast(),
                size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EBUSY) || t0.elapsed() >= BUSY_WAIT {
            return Err(e);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
