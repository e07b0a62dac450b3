//! Ports whose interface may go away under the datapath. When an
//! interface is unregistered (`ip link del`, or moved to another network
//! namespace) the kernel unbinds its AF_XDP sockets, sets `ENETDOWN` as
//! their pending error and drops the XDP program with the device; the
//! sockets then give `ENXIO` on `sendto` and `poll()` reports nothing on
//! them (no `POLLERR`), so a polling loop would spin or sleep on them for
//! ever. The supervisor looks about ten times a second at every port: the
//! interface's index still names an interface, and no socket has an error
//! pending. A polling thread that gets `ENXIO` marks its port gone at once.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// One port being watched.
pub(crate) struct Watch {
    pub dev: String,
    pub ifindex: u32,
    fds: Vec<RawFd>,
    /// Set once the port is gone (by the supervisor, or by a polling
    /// thread whose socket was found unbound); its queues are polled no
    /// more and frames for it are counted as lost.
    gone: AtomicBool,
}

impl Watch {
    pub fn new(dev: &str, ifindex: u32, fds: Vec<RawFd>) -> Watch {
        Watch {
            dev: dev.into(),
            ifindex,
            fds,
            gone: AtomicBool::new(false),
        }
    }

    #[inline]
    pub fn is_gone(&self) -> bool {
        self.gone.load(Ordering::Relaxed)
    }

    /// A polling thread found one of the port's sockets unbound.
    pub fn mark_gone(&self) {
        self.gone.store(true, Ordering::Relaxed);
    }

    /// Why the port is gone, if it is (and then it is marked gone).
    pub fn check(&self) -> Option<String> {
        let socket = self
            .fds
            .iter()
            .find_map(|&fd| capture::xsk::socket_error(fd));
        let cause = match (ifname(self.ifindex), socket) {
            (None, e) => Some(format!(
                "the interface was deleted or left the namespace{}",
                e.map(|e| format!(" (AF_XDP socket: {e})"))
                    .unwrap_or_default()
            )),
            (Some(_), Some(e)) => Some(format!("its AF_XDP socket was unbound ({e})")),
            (Some(_), None) if self.is_gone() => Some("its AF_XDP socket was unbound".into()),
            (Some(_), None) => None,
        };
        if cause.is_some() {
            self.mark_gone();
        }
        cause
    }
}

/// The name of interface `ifindex` in this namespace, if there is one.
fn ifname(ifindex: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` has the IF_NAMESIZE bytes if_indextoname writes at most.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: if_indextoname wrote a NUL-terminated name into `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

/// What the datapath tells its caller about a port that went away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortGone {
    pub dev: String,
    pub ifindex: u32,
    /// Why: the interface was deleted, the socket unbound, ...
    pub cause: String,
    /// The ports still running.
    pub remaining: Vec<String>,
}

impl std::fmt::Display for PortGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "port {} (ifindex {}) is gone: {}; ",
            self.dev, self.ifindex, self.cause
        )?;
        if self.remaining.is_empty() {
            write!(f, "no port left, stopping")
        } else {
            write!(f, "carrying on with {}", self.remaining.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_there_and_an_unused_index_is_not() {
        assert_eq!(ifname(1).as_deref(), Some("lo"));
        let w = Watch::new("nosuch", u32::MAX - 1, Vec::new());
        let cause = w.check().expect("no interface has that index");
        assert!(cause.contains("deleted"), "{cause}");
        assert!(w.is_gone());
    }

    #[test]
    fn the_message_is_one_line_naming_the_port() {
        let g = PortGone {
            dev: "sl_b2".into(),
            ifindex: 7,
            cause: "the interface was deleted or left the namespace".into(),
            remaining: vec!["sl_rx".into()],
        };
        let s = g.to_string();
        assert!(!s.contains('\n'));
        assert!(s.starts_with("port sl_b2 (ifindex 7) is gone: "), "{s}");
        assert!(s.ends_with("carrying on with sl_rx"), "{s}");
    }
}
