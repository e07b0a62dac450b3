//! Traffic into an interface, two ways:
//!
//! - XDP live frames (`BPF_PROG_TEST_RUN` with `BPF_F_TEST_XDP_LIVE_FRAMES`,
//!   as xdp-trafficgen does): the kernel builds frames in page-pool pages
//!   and runs `programs/tools/gen.c` on each, which writes the flow's
//!   headers from a template map and redirects the frame out of the device.
//!   No system call per packet, no socket buffers.
//! - An AF_PACKET socket (`sendmmsg` in batches, qdisc bypassed), for
//!   frames live mode cannot carry (too big, too different) or devices
//!   that cannot receive redirected frames.
//!
//! Either way frame `i` is `frames[i % frames.len()]`, the order in which
//! `sluice run --gen` replays the same specification.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, Result};
use crate::kmap::MapInfo;
use crate::packet_socket::PacketSocket;
use crate::testrun::{self, F_TEST_XDP_LIVE_FRAMES, RunInput};

/// Bytes of a template in gen.c (`TEMPLATE_BYTES`).
pub const TEMPLATE_BYTES: usize = 128;
/// The largest frame live mode sends: one page minus XDP headroom and
/// skb_shared_info.
pub const LIVE_MAX_FRAME: usize = 4096 - 256 - 320;

/// What to send.
pub struct Plan<'a> {
    /// One frame per flow, all the same length for live mode.
    pub frames: &'a [Vec<u8>],
    pub count: u64,
    /// Packets per second; `None`: as fast as possible.
    pub rate: Option<u64>,
}

/// What was sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    pub packets: u64,
    pub seconds: f64,
    /// `xdp-live-frames` or `af-packet`.
    pub method: &'static str,
}

impl Sent {
    pub fn pps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.packets as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// How many leading bytes differ between the frames (0: all the same);
/// `None` when the frames have different lengths.
pub fn varying_prefix(frames: &[Vec<u8>]) -> Option<usize> {
    let first = frames.first()?;
    if frames.iter().any(|f| f.len() != first.len()) {
        return None;
    }
    let mut prefix = 0;
    for f in &frames[1..] {
        if let Some(last) = (0..first.len()).rev().find(|&i| f[i] != first[i]) {
            prefix = prefix.max(last + 1);
        }
    }
    Some(prefix)
}

/// Why live mode cannot send `frames`, if it cannot.
pub fn live_unsuitable(frames: &[Vec<u8>]) -> Option<String> {
    let Some(first) = frames.first() else {
        return Some("no frames".into());
    };
    if first.len() < 14 || first.len() > LIVE_MAX_FRAME {
        return Some(format!(
            "live frames carry 14 to {LIVE_MAX_FRAME} bytes, not {}",
            first.len()
        ));
    }
    match varying_prefix(frames) {
        None => Some("the flows' frames differ in length".into()),
        Some(p) if p > TEMPLATE_BYTES => Some(format!(
            "the flows' frames differ beyond their first {TEMPLATE_BYTES} bytes"
        )),
        Some(_) => None,
    }
}

/// Fills gen.c's template map: the first `prefix` bytes of every frame.
pub fn fill_templates(map: &MapInfo, frames: &[Vec<u8>], prefix: usize) -> Result<()> {
    for (i, f) in frames.iter().enumerate() {
        let mut v = vec![0u8; TEMPLATE_BYTES];
        v[..prefix].copy_from_slice(&f[..prefix]);
        map.update(&(i as u32).to_le_bytes(), &v, 0)?;
    }
    Ok(())
}

/// Paces sends to `rate` packets per second: how many to send now.
struct Pacer {
    start: Instant,
    rate: Option<u64>,
    /// Bursts per second when paced.
    bursts: u64,
}

impl Pacer {
    /// The next burst, after sleeping until it is due; `sent` so far.
    fn next_burst(&self, sent: u64, left: u64, max_burst: u64) -> u64 {
        let Some(rate) = self.rate else {
            return left.min(max_burst);
        };
        let burst = (rate / self.bursts).clamp(1, max_burst).min(left);
        let due = Duration::from_secs_f64(sent as f64 / rate as f64);
        let now = self.start.elapsed();
        if due > now {
            std::thread::sleep(due - now);
        }
        burst
    }
}

/// Sends through live frames: `prog_fd` is gen.c loaded for the device,
/// with its templates filled. `progress` sees the running total.
pub fn send_live(prog_fd: RawFd, plan: &Plan<'_>, mut progress: impl FnMut(u64)) -> Result<Sent> {
    let data = plan
        .frames
        .first()
        .ok_or_else(|| Error::new(ErrorKind::Invalid, "no frames to send"))?;
    // Every live-frames call sets up a page pool (tens of milliseconds
    // here): paced, it sends a twentieth of a second's worth at a time.
    let pacer = Pacer {
        start: Instant::now(),
        rate: plan.rate,
        bursts: 20,
    };
    let mut sent = 0u64;
    while sent < plan.count {
        let burst = pacer.next_burst(sent, plan.count - sent, 1 << 22);
        let input = RunInput {
            data,
            repeat: burst as u32,
            flags: F_TEST_XDP_LIVE_FRAMES,
            batch_size: 64,
            ..Default::default()
        };
        testrun::run(prog_fd, &input).map_err(|e| {
            Error::new(
                e.kind,
                format!("{} (live frames need Linux 5.18 or later)", e.message),
            )
        })?;
        sent += burst;
        progress(sent);
    }
    Ok(Sent {
        packets: sent,
        seconds: pacer.start.elapsed().as_secs_f64(),
        method: "xdp-live-frames",
    })
}

/// Sends through an AF_PACKET socket on `ifindex`.
pub fn send_packet_socket(
    ifindex: u32,
    plan: &Plan<'_>,
    mut progress: impl FnMut(u64),
) -> Result<Sent> {
    if plan.frames.is_empty() {
        return Err(Error::new(ErrorKind::Invalid, "no frames to send"));
    }
    let sock = PacketSocket::open(ifindex)?;
    // A millisecond's worth at a time.
    let pacer = Pacer {
        start: Instant::now(),
        rate: plan.rate,
        bursts: 1000,
    };
    let k = plan.frames.len() as u64;
    let mut sent = 0u64;
    while sent < plan.count {
        let burst = pacer.next_burst(sent, plan.count - sent, 64);
        let batch: Vec<&[u8]> = (sent..sent + burst)
            .map(|i| plan.frames[(i % k) as usize].as_slice())
            .collect();
        let n = sock.send_batch(&batch)?;
        if n == 0 {
            // The device queue is full: let it drain.
            std::thread::sleep(Duration::from_micros(50));
        }
        sent += n as u64;
        progress(sent);
    }
    Ok(Sent {
        packets: sent,
        seconds: pacer.start.elapsed().as_secs_f64(),
        method: "af-packet",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_varying_prefix_covers_every_difference() {
        let a = vec![1u8, 2, 3, 4, 5];
        let mut b = a.clone();
        b[2] = 9;
        assert_eq!(varying_prefix(std::slice::from_ref(&a)), Some(0));
        assert_eq!(varying_prefix(&[a.clone(), b.clone()]), Some(3));
        assert_eq!(varying_prefix(&[a.clone(), vec![1, 2]]), None);
        assert!(live_unsuitable(&[vec![0; 10]]).is_some(), "too short");
        assert!(live_unsuitable(&[vec![0; 64]]).is_none());
        let mut far = vec![0u8; 300];
        far[200] = 1;
        assert!(live_unsuitable(&[vec![0; 300], far]).is_some());
    }
}
