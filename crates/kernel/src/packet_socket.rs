//! AF_PACKET raw sockets, the one place sluice opens, binds, reads and
//! writes them: `pipeline`'s live source and port, and the senders of
//! [`crate::traffic`] and [`crate::tc`]. A socket is set up before it is
//! bound ([`PacketSocket::bind`]), so that no frame arrives before its
//! options (a filter, a direction) hold; frames are read and sent a batch
//! per system call (`recvmmsg`, `sendmmsg`). Needs root or CAP_NET_RAW.
//!
//! The low-level calls answer with the system's error as it is
//! ([`std::io::Error`], or [`SocketError`] naming the step), so that each
//! user words it for its own audience.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::{Error, Result};

/// A step of setting up a socket that failed, and the system's answer.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct SocketError {
    /// What was being done (`opening an AF_PACKET socket`).
    pub what: String,
    #[source]
    pub source: std::io::Error,
}

impl SocketError {
    pub fn new(what: impl Into<String>, source: std::io::Error) -> SocketError {
        SocketError {
            what: what.into(),
            source,
        }
    }
}

impl From<SocketError> for Error {
    fn from(e: SocketError) -> Error {
        Error::errno(&e.what, e.source.raw_os_error().unwrap_or(0))
    }
}

/// Control message room per frame received: a timestamp and packet
/// auxdata, with room to spare.
const CONTROL_WORDS: usize = 32;

/// What came with one frame received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameMeta {
    /// Bytes received into the slot (at most the slot's size).
    pub len: usize,
    /// The frame was longer than its slot and was cut (`MSG_TRUNC`).
    pub truncated: bool,
    /// The kernel's receive timestamp (`SO_TIMESTAMPNS`), nanoseconds.
    pub timestamp_ns: Option<u64>,
    /// The VLAN tag the device took off (TPID and TCI, as on the wire),
    /// from `PACKET_AUXDATA`.
    pub vlan: Option<[u8; 4]>,
    /// The host sent it (`PACKET_OUTGOING`).
    pub outgoing: bool,
    /// It was seen on a loopback device (`ARPHRD_LOOPBACK`).
    pub loopback: bool,
}

/// Room to receive a batch of frames with one system call: a slot of
/// fixed size per frame, with its control data and address.
pub struct RecvBuffers {
    slot: usize,
    buf: Vec<u8>,
    control: Vec<u64>,
    names: Vec<libc::sockaddr_ll>,
    meta: Vec<FrameMeta>,
}

impl RecvBuffers {
    /// Room for `count` frames of up to `slot` bytes each.
    pub fn new(count: usize, slot: usize) -> RecvBuffers {
        RecvBuffers {
            slot,
            buf: vec![0; count * slot],
            control: vec![0; count * CONTROL_WORDS],
            // SAFETY: sockaddr_ll is plain data; all zeroes is a valid value.
            names: vec![unsafe { std::mem::zeroed() }; count],
            meta: vec![FrameMeta::default(); count],
        }
    }

    /// Frame `i` of the last [`PacketSocket::receive`], and what came
    /// with it.
    pub fn frame(&self, i: usize) -> (&[u8], &FrameMeta) {
        let m = &self.meta[i];
        (&self.buf[i * self.slot..i * self.slot + m.len], m)
    }
}

/// An AF_PACKET raw socket bound to one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
}

impl PacketSocket {
    /// A socket on interface `ifindex`, set up by `configure` before it is
    /// bound to `protocol` (host order; 0 receives nothing), so that no
    /// frame arrives before its options hold.
    pub fn bind(
        ifindex: u32,
        protocol: u16,
        configure: impl FnOnce(&PacketSocket) -> std::result::Result<(), SocketError>,
    ) -> std::result::Result<PacketSocket, SocketError> {
        // SAFETY: plain socket creation; protocol 0 receives nothing until bound.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(SocketError::new(
                "opening an AF_PACKET socket",
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let sock = PacketSocket { fd };
        configure(&sock)?;
        // SAFETY: sockaddr_ll is plain data; all zeroes is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = protocol.to_be();
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is a valid sockaddr_ll of the size given.
        let ret = unsafe {
            libc::bind(
                sock.fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of_val(&addr) as u32,
            )
        };
        if ret != 0 {
            return Err(SocketError::new(
                "binding the AF_PACKET socket",
                std::io::Error::last_os_error(),
            ));
        }
        Ok(sock)
    }

    /// A socket for sending whose frames go straight to the driver, past
    /// the qdiscs (and tc's egress hook), as pktgen's do.
    pub fn open(ifindex: u32) -> Result<PacketSocket> {
        let sock = Self::bind(ifindex, 0, |_| Ok(()))?;
        // Straight to the driver, as pktgen does; best effort.
        let _ = sock.set_int(libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1);
        Ok(sock)
    }

    /// A socket for sending whose frames go through the device's qdiscs,
    /// tc's egress hook among them.
    pub fn through_qdisc(ifindex: u32) -> Result<PacketSocket> {
        Ok(Self::bind(ifindex, 0, |_| Ok(()))?)
    }

    /// Sets an integer socket option.
    pub fn set_int(&self, level: i32, name: i32, value: i32) -> std::io::Result<()> {
        // SAFETY: `value` is a valid int option value of the size given.
        let ret = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
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

    /// Attaches a classic BPF program the kernel runs on every frame
    /// before the socket sees it (`SO_ATTACH_FILTER`).
    pub fn attach_filter(&self, prog: &[libc::sock_filter]) -> std::io::Result<()> {
        let fprog = libc::sock_fprog {
            len: u16::try_from(prog.len())
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: `fprog` points at `prog.len()` instructions, which the
        // kernel copies during the call.
        let ret = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
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

    /// Waits up to `timeout_ms` for frames: whether some may be read
    /// (`false` as well when a signal interrupted the wait).
    pub fn wait(&self, timeout_ms: i32) -> std::io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ret = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if ret < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(false);
            }
            return Err(e);
        }
        // Errors (the interface went down or away) are told by recvmmsg.
        Ok(ret > 0)
    }

    /// Reads the frames waiting, up to `max` (and the room in `bufs`),
    /// without blocking: how many ([`RecvBuffers::frame`] gives them; 0
    /// when none was waiting or a signal came).
    pub fn receive(&self, bufs: &mut RecvBuffers, max: usize) -> std::io::Result<usize> {
        let slot = bufs.slot;
        let mut iov: Vec<libc::iovec> = bufs
            .buf
            .chunks_exact_mut(slot)
            .take(max)
            .map(|s| libc::iovec {
                iov_base: s.as_mut_ptr().cast(),
                iov_len: s.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iov
            .iter_mut()
            .zip(bufs.control.chunks_exact_mut(CONTROL_WORDS))
            .zip(bufs.names.iter_mut())
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
        if msgs.is_empty() {
            return Ok(0);
        }
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
                _ => Err(e),
            };
        }
        let n = n as usize;
        for (i, m) in msgs.iter().take(n).enumerate() {
            let (timestamp_ns, vlan) = control_of(&m.msg_hdr);
            let name = &bufs.names[i];
            bufs.meta[i] = FrameMeta {
                len: (m.msg_len as usize).min(slot),
                truncated: m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
                timestamp_ns,
                vlan,
                outgoing: name.sll_pkttype == libc::PACKET_OUTGOING,
                loopback: name.sll_hatype == libc::ARPHRD_LOOPBACK,
            };
        }
        Ok(n)
    }

    /// Frames the kernel dropped since the last call because the receive
    /// buffer was full (`PACKET_STATISTICS`, which reading resets).
    pub fn drops(&self) -> std::io::Result<u64> {
        // SAFETY: tpacket_stats is plain data; all zeroes is a valid value.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
        // SAFETY: `st` and `len` are valid for the kernel to write.
        let ret = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if ret != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(u64::from(st.tp_drops))
    }

    /// Sends `frames` with one `sendmmsg`: how many the kernel took, or
    /// the error of the first it did not take when it took none.
    pub fn send_many(&self, frames: &[&[u8]]) -> std::io::Result<usize> {
        let mut iov: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
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
        // SAFETY: every header points at one live iovec over a live frame.
        let n =
            unsafe { libc::sendmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr(), msgs.len() as u32, 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Sends one frame, waiting for room; whether the device took it
    /// (`false`: refused as too long or too short for the link).
    pub fn send(&self, frame: &[u8]) -> Result<bool> {
        loop {
            // SAFETY: `frame` is a live buffer of the length given.
            let n =
                unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            if n >= 0 {
                return Ok(true);
            }
            match errno() {
                libc::ENOBUFS | libc::EAGAIN => {
                    std::thread::sleep(std::time::Duration::from_micros(200))
                }
                libc::EMSGSIZE | libc::EINVAL => return Ok(false),
                e => return Err(Error::errno("sending on the AF_PACKET socket", e)),
            }
        }
    }

    /// Sends `frames` with one system call per 64; returns how many left
    /// (0 when the device had no room).
    pub fn send_batch(&self, frames: &[&[u8]]) -> Result<usize> {
        match self.send_many(frames) {
            Ok(n) => Ok(n),
            Err(e) => match e.raw_os_error().unwrap_or(0) {
                libc::ENOBUFS | libc::EAGAIN => Ok(0),
                e => Err(Error::errno("sending on the AF_PACKET socket", e)),
            },
        }
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_error_names_the_step() {
        let e = SocketError::new(
            "binding the AF_PACKET socket",
            std::io::Error::from_raw_os_error(libc::ENODEV),
        );
        assert_eq!(
            e.to_string(),
            format!(
                "binding the AF_PACKET socket: {}",
                std::io::Error::from_raw_os_error(libc::ENODEV)
            )
        );
        let k = Error::from(e);
        assert_eq!(k.kind, crate::ErrorKind::NotFound);
        assert!(k.message.starts_with("binding the AF_PACKET socket: "));
    }
}
