//! The AF_XDP datapath as a packet source: every frame arriving on an
//! interface taken into user space by an AF_XDP socket per queue (the XSK
//! redirect program attached), copied into the batch and its frame handed
//! straight back to the kernel's FILL ring. Any consumer of a
//! [`pipeline::Source`] (the monitoring applications, a replay) then runs
//! live on the datapath instead of on a capture.
//!
//! The frames are the datapath's: the kernel's stack no longer sees them
//! (as with an OVS AF_XDP port), so this is for a monitoring port (a mirror
//! or a tap), not for a host's own traffic. Receive-only: the sockets'
//! UMEM frames all wait in the FILL ring, none is kept for sending. AF_XDP
//! gives no receive timestamps: a frame is stamped with the wall clock
//! when user space takes it from the RX ring.

use std::sync::atomic::{AtomicBool, Ordering};

use capture::LinkKind;
use capture::xsk::{BoundMode, XdpDesc, Xsk, XskConfig};
use kernel::attach::XdpMode;
use pipeline::{BATCH, Batch, Source, SourceError};

use crate::DatapathError;
use crate::redirect::XskRedirect;
use crate::watch::Watch;

/// How long one `poll` waits before the stop flag is looked at again.
const POLL_MS: i32 = 50;

/// Frames received on an interface's queues through AF_XDP.
pub struct XskSource {
    // Dropped first: the program is detached before the sockets close.
    _redirect: XskRedirect,
    sockets: Vec<Xsk>,
    /// The interface, looked at while no frame comes (watch.rs).
    watch: Watch,
    stop: Option<&'static AtomicBool>,
    descs: Vec<XdpDesc>,
    /// The socket the next fill starts with (round robin, so a busy queue
    /// does not starve the others).
    next: usize,
    seq: u64,
    bytes: u64,
    /// Descriptors that did not lie inside one frame (never expected).
    invalid: u64,
}

impl XskSource {
    /// Binds a socket to every queue of `dev` (its ethtool channel count,
    /// 1 when the driver does not say) and attaches the redirect program
    /// in `mode`; `stop` ends the source.
    pub fn open(
        dev: &str,
        mode: XdpMode,
        stop: Option<&'static AtomicBool>,
    ) -> Result<XskSource, DatapathError> {
        let queues = capture::xsk::queue_count(dev).unwrap_or(1);
        // Receive-only: as many frames as the FILL ring holds, all in it.
        let config = XskConfig {
            frame_count: 2048,
            fill_size: 2048,
            rx_size: 2048,
            tx_size: 64,
            comp_size: 64,
            ..XskConfig::default()
        };
        let mut sockets = Vec::new();
        for q in 0..queues {
            let mut s = Xsk::open(dev, q, &config)?;
            let frame = u64::from(config.frame_size);
            let n = s.fill.free(config.frame_count);
            s.fill.produce((0..u64::from(n)).map(|i| i * frame));
            sockets.push(s);
        }
        let redirect = XskRedirect::attach(dev, mode)?;
        for s in &sockets {
            redirect.register(s.queue(), s.fd())?;
        }
        let ifindex = sockets.first().map_or(0, Xsk::ifindex);
        let watch = Watch::new(dev, ifindex, sockets.iter().map(Xsk::fd).collect());
        Ok(XskSource {
            _redirect: redirect,
            sockets,
            watch,
            stop,
            descs: Vec::with_capacity(BATCH),
            next: 0,
            seq: 0,
            bytes: 0,
            invalid: 0,
        })
    }

    /// Copy or zero-copy, as the kernel bound the sockets.
    pub fn mode(&self) -> BoundMode {
        self.sockets.first().map_or(BoundMode::Copy, Xsk::mode)
    }

    fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Moves what the RX rings hold (up to the batch's room) into `batch`,
    /// each frame back to its FILL ring at once.
    fn receive(&mut self, batch: &mut Batch) -> usize {
        let now = wall_clock_ns();
        let count = self.sockets.len();
        let mut got = 0;
        for i in 0..count {
            let room = BATCH - batch.len();
            if room == 0 {
                break;
            }
            let s = &mut self.sockets[(self.next + i) % count];
            self.descs.clear();
            s.rx.consume(room as u32, &mut self.descs);
            for d in &self.descs {
                self.seq += 1;
                match s.bytes_mut(d.addr, d.len as usize) {
                    Some(frame) => {
                        let f: &[u8] = frame;
                        batch.push(self.seq, now, LinkKind::Ethernet, f);
                        self.bytes += u64::from(d.len);
                        got += 1;
                    }
                    None => self.invalid += 1,
                }
            }
            // The FILL ring has room for every frame the RX ring gave (all
            // frames were in it): `free` reads how far the kernel got.
            let room = s.fill.free(self.descs.len() as u32) as usize;
            debug_assert_eq!(room, self.descs.len());
            let mask = !(u64::from(s.config().frame_size) - 1);
            s.fill
                .produce(self.descs.iter().take(room).map(|d| d.addr & mask));
            if s.fill.needs_wakeup() {
                s.wake_rx();
            }
        }
        self.next = (self.next + 1) % count.max(1);
        got
    }

    /// Waits until a socket has frames, at most [`POLL_MS`].
    fn wait(&self) -> Result<(), SourceError> {
        let mut fds: Vec<libc::pollfd> = self
            .sockets
            .iter()
            .map(|s| libc::pollfd {
                fd: s.fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a live array of its length.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, POLL_MS) };
        // Nothing came: the interface may be gone (its sockets unbound,
        // which poll() does not report).
        if rc == 0
            && let Some(cause) = self.watch.check()
        {
            return Err(SourceError(format!(
                "{} (ifindex {}) is gone: {cause}",
                self.dev(),
                self.watch.ifindex
            )));
        }
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(SourceError(format!(
                    "waiting on the AF_XDP sockets of {}: {e}",
                    self.dev()
                )));
            }
        }
        Ok(())
    }

    fn dev(&self) -> &str {
        self.sockets.first().map_or("?", Xsk::dev)
    }
}

impl Source for XskSource {
    fn fill(&mut self, batch: &mut Batch) -> Result<(), SourceError> {
        loop {
            if self.stopped() {
                return Ok(());
            }
            if self.receive(batch) > 0 {
                return Ok(());
            }
            self.wait()?;
        }
    }

    fn note(&self) -> Option<String> {
        let mut dropped = 0;
        let mut fill_empty = 0;
        for s in &self.sockets {
            if let Ok(k) = s.stats() {
                dropped += k.rx_dropped + k.rx_ring_full;
                fill_empty += k.rx_fill_ring_empty_descs;
            }
        }
        Some(format!(
            "AF_XDP on {} ({} queue{}, {} mode): {} frames ({} bytes) received, {} dropped by the \
             kernel (RX ring full or no room), {} times the FILL ring was empty{}",
            self.dev(),
            self.sockets.len(),
            if self.sockets.len() == 1 { "" } else { "s" },
            self.mode().name(),
            self.seq - self.invalid,
            self.bytes,
            dropped,
            fill_empty,
            if self.invalid > 0 {
                format!(", {} invalid descriptors", self.invalid)
            } else {
                String::new()
            }
        ))
    }
}

fn wall_clock_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
