//! sluice's user-space datapath on AF_XDP (docs/datapath.md), after the
//! Open vSwitch AF_XDP paper: one socket and one UMEM per queue (no locks
//! between queues), a free-frame pool per UMEM (LIFO stack by default),
//! batches of 32, a poll-mode (PMD) thread per queue or one thread
//! waiting in `poll()` on every socket, and TX kicks issued only when many
//! descriptors are outstanding. The XSK redirect program is loaded and
//! attached through the kernel backend and removed again at the end.

mod meta;
pub mod program;
mod queue;
pub mod redirect;
mod source;
mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use capture::xsk::{BoundMode, PoolKind, Xsk, XskConfig, XskError, XskStats};
use kernel::attach::XdpMode;

pub use meta::{FrameMeta, MetaKind};
use queue::Queue;
pub use queue::tsc;
use redirect::XskRedirect;
pub use source::XskSource;
pub use watch::PortGone;
use watch::Watch;

#[derive(Debug, thiserror::Error)]
pub enum DatapathError {
    #[error(transparent)]
    Xsk(#[from] XskError),
    #[error(transparent)]
    Kernel(#[from] kernel::Error),
    #[error("{0}")]
    Setup(String),
    /// The interface went away under the run (which stopped cleanly).
    #[error("{0}")]
    Gone(PortGone),
    #[error("a datapath thread panicked")]
    Panicked,
}

/// What the datapath does with received packets (xdpsock's benchmarks).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum App {
    /// Receive and drop (frames straight back to the pool).
    RxDrop,
    /// Send a fixed frame as fast as the ring takes it.
    TxOnly,
    /// Swap the MAC addresses and send back out of the same port.
    L2Fwd,
    /// A sluice program decides per packet (`program::run`).
    Program,
}

impl App {
    pub fn name(self) -> &'static str {
        match self {
            App::RxDrop => "rxdrop",
            App::TxOnly => "txonly",
            App::L2Fwd => "l2fwd",
            App::Program => "program",
        }
    }
}

/// How to run.
#[derive(Clone, Debug)]
pub struct XskOptions {
    pub dev: String,
    pub queues: Vec<u32>,
    pub mode: XdpMode,
    pub xsk: XskConfig,
    pub batch: u32,
    pub pool: PoolKind,
    /// Where per-packet metadata lives.
    pub meta: MetaKind,
    /// One UMEM for all queues (`XDP_SHARED_UMEM`) and one free-frame pool
    /// behind a mutex, instead of one of each per queue.
    pub shared_umem: bool,
    /// A polling thread per queue; else one thread in `poll()`.
    pub pmd: bool,
    /// Pin PMD thread i to CPU `i % cpus`.
    pub pin: bool,
    /// Kick TX once this many descriptors are outstanding (default: 512
    /// or 3/4 of the TX ring, whichever is smaller).
    pub kick_at: Option<u32>,
    /// The frame `txonly` sends.
    pub tx_frame: Vec<u8>,
    pub duration: Option<Duration>,
}

impl XskOptions {
    pub fn new(dev: &str, app_frame: Vec<u8>) -> XskOptions {
        XskOptions {
            dev: dev.into(),
            queues: vec![0],
            mode: XdpMode::Native,
            xsk: XskConfig::default(),
            batch: 32,
            pool: PoolKind::Stack,
            meta: MetaKind::Array,
            shared_umem: false,
            pmd: true,
            pin: false,
            kick_at: None,
            tx_frame: app_frame,
            duration: None,
        }
    }

    fn kick_threshold(&self) -> u32 {
        kick_threshold(self.kick_at, &self.xsk)
    }
}

/// Kick TX at `kick_at` outstanding descriptors, by default 512 or 3/4 of
/// the TX ring, whichever is smaller.
pub(crate) fn kick_threshold(kick_at: Option<u32>, xsk: &XskConfig) -> u32 {
    kick_at
        .unwrap_or_else(|| 512.min(xsk.tx_size * 3 / 4))
        .max(1)
}

/// Counters of one queue, updated by its thread once per batch.
#[derive(Default, Debug)]
pub struct QueueCounters {
    pub rx: AtomicU64,
    pub rx_bytes: AtomicU64,
    /// Sent (completed) frames.
    pub tx: AtomicU64,
    pub dropped: AtomicU64,
    pub kicks: AtomicU64,
    /// Timestamp-counter cycles spent in polls that handled packets.
    pub cycles: AtomicU64,
}

/// Totals over all queues at one moment.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub rx: u64,
    pub rx_bytes: u64,
    pub tx: u64,
    pub dropped: u64,
    pub kicks: u64,
    pub cycles: u64,
}

impl Totals {
    fn of(counters: &[Arc<QueueCounters>]) -> Totals {
        let mut t = Totals::default();
        for c in counters {
            t.rx += c.rx.load(Ordering::Relaxed);
            t.rx_bytes += c.rx_bytes.load(Ordering::Relaxed);
            t.tx += c.tx.load(Ordering::Relaxed);
            t.dropped += c.dropped.load(Ordering::Relaxed);
            t.kicks += c.kicks.load(Ordering::Relaxed);
            t.cycles += c.cycles.load(Ordering::Relaxed);
        }
        t
    }

    /// TSC cycles per packet handled (received or sent).
    pub fn cycles_per_packet(&self) -> f64 {
        let n = self.rx.max(self.tx);
        if n == 0 {
            0.0
        } else {
            self.cycles as f64 / n as f64
        }
    }
}

/// The end of a run.
#[derive(Clone, Debug)]
pub struct XskSummary {
    pub app: App,
    pub dev: String,
    pub queues: Vec<u32>,
    pub xdp_mode: XdpMode,
    pub bind: BoundMode,
    pub totals: Totals,
    pub seconds: f64,
    /// Frames neither free nor in a FILL ring after draining (held by the
    /// kernel, or lost).
    pub frames_unaccounted: u64,
    pub frames: u64,
    /// The kernel's counters, summed over the sockets.
    pub kernel: XskStats,
}

/// Opens a socket per queue, attaches the redirect program, runs `app`
/// until `stop` is set or the duration has passed, calling `tick` with the
/// totals about once a second, then detaches and drains.
pub fn run(
    app: App,
    opts: &XskOptions,
    stop: &AtomicBool,
    mut tick: impl FnMut(&Totals, Duration),
) -> Result<XskSummary, DatapathError> {
    if opts.batch == 0 {
        return Err(DatapathError::Setup("--batch must be at least 1".into()));
    }
    if app == App::TxOnly
        && (opts.tx_frame.len() < 14
            || opts.tx_frame.len() as u32 > opts.xsk.frame_size - opts.xsk.headroom)
    {
        return Err(DatapathError::Setup(format!(
            "the frame to send is {} bytes: it must be 14 to {} bytes",
            opts.tx_frame.len(),
            opts.xsk.frame_size - opts.xsk.headroom
        )));
    }
    // Sockets first: bad queues, sizes or modes fail before anything is
    // attached.
    let mut sockets: Vec<Xsk> = Vec::new();
    for &q in &opts.queues {
        sockets.push(match sockets.first() {
            Some(first) if opts.shared_umem => Xsk::open_shared(&opts.dev, q, first)?,
            _ => Xsk::open(&opts.dev, q, &opts.xsk)?,
        });
    }
    let bind = sockets.first().map_or(BoundMode::Copy, Xsk::mode);
    let redirect = XskRedirect::attach(&opts.dev, opts.mode)?;
    for s in &sockets {
        redirect.register(s.queue(), s.fd())?;
    }
    let template: Arc<[u8]> = opts.tx_frame.clone().into();
    let (count, size) = (opts.xsk.frame_count, opts.xsk.frame_size);
    let shared = opts
        .shared_umem
        .then(|| queue::Pool::new(opts.pool, count, size, true));
    // Half the frames of each UMEM wait in FILL rings, the rest are for
    // sending.
    let prefill = if opts.shared_umem {
        count / 2 / opts.queues.len() as u32
    } else {
        count / 2
    };
    let mut queues: Vec<Queue> = sockets
        .into_iter()
        .map(|s| {
            let pool = match &shared {
                Some(p) => p.share().expect("a shared pool"),
                None => queue::Pool::new(opts.pool, count, size, false),
            };
            Queue::new(
                s,
                pool,
                app,
                opts.batch,
                opts.kick_threshold(),
                template.clone(),
                opts.meta,
                prefill,
            )
        })
        .collect();
    let counters: Vec<Arc<QueueCounters>> = queues.iter().map(|q| q.counters.clone()).collect();
    let ifindex = queues.first().map_or(0, |q| q.xsk.ifindex());
    let watch = Watch::new(
        &opts.dev,
        ifindex,
        queues.iter().map(|q| q.xsk.fd()).collect(),
    );
    let mut gone = None;
    let start = Instant::now();
    let finished = AtomicBool::new(false);
    let worker_error = std::thread::scope(|s| -> Result<(), DatapathError> {
        let workers: Vec<_> = if opts.pmd {
            queues
                .iter_mut()
                .enumerate()
                .map(|(i, q)| {
                    let (finished, pin) = (&finished, opts.pin);
                    s.spawn(move || {
                        if pin {
                            pin_to_cpu(i);
                        }
                        pmd_loop(std::slice::from_mut(q), finished, false)
                    })
                })
                .collect()
        } else {
            let finished = &finished;
            let qs = &mut queues;
            vec![s.spawn(move || pmd_loop(qs, finished, true))]
        };
        let watching = || {
            gone = watch.check().map(|cause| PortGone {
                dev: opts.dev.clone(),
                ifindex,
                cause,
                remaining: Vec::new(),
            });
            gone.is_some()
        };
        let ticks = |at| tick(&Totals::of(&counters), at);
        supervise(
            workers,
            &finished,
            start,
            opts.duration,
            stop,
            ticks,
            watching,
        )
    });
    let seconds = start.elapsed().as_secs_f64();
    // No new frames once the program is gone; then drain.
    drop(redirect);
    queues.iter_mut().for_each(|q| {
        q.drain();
    });
    let frames_unaccounted = queue::unaccounted(&queues);
    if let Some(g) = gone {
        return Err(DatapathError::Gone(g));
    }
    // A socket found unbound by its thread before the supervisor saw the
    // interface go.
    if let Err(DatapathError::Xsk(XskError::Unbound { .. })) = &worker_error
        && let Some(cause) = watch.check()
    {
        return Err(DatapathError::Gone(PortGone {
            dev: opts.dev.clone(),
            ifindex,
            cause,
            remaining: Vec::new(),
        }));
    }
    worker_error?;
    let mut kernel = XskStats::default();
    for q in &queues {
        let k = q.xsk.stats()?;
        kernel.rx_dropped += k.rx_dropped;
        kernel.rx_invalid_descs += k.rx_invalid_descs;
        kernel.tx_invalid_descs += k.tx_invalid_descs;
        kernel.rx_ring_full += k.rx_ring_full;
        kernel.rx_fill_ring_empty_descs += k.rx_fill_ring_empty_descs;
        kernel.tx_ring_empty_descs += k.tx_ring_empty_descs;
    }
    Ok(XskSummary {
        app,
        dev: opts.dev.clone(),
        queues: opts.queues.clone(),
        xdp_mode: opts.mode,
        bind,
        totals: Totals::of(&counters),
        seconds,
        frames_unaccounted,
        frames: if opts.shared_umem {
            u64::from(count)
        } else {
            u64::from(count) * opts.queues.len() as u64
        },
        kernel,
    })
}

/// Watches the worker threads until `stop`, the duration, a worker
/// ending (an error) or `watch` saying there is nothing left to run on
/// (it looks at the ports every 100 ms: watch.rs); calls `tick` about
/// once a second; then tells them to finish and gives the first error.
pub(crate) fn supervise(
    workers: Vec<std::thread::ScopedJoinHandle<'_, Result<(), DatapathError>>>,
    finished: &AtomicBool,
    start: Instant,
    duration: Option<Duration>,
    stop: &AtomicBool,
    mut tick: impl FnMut(Duration),
    mut watch: impl FnMut() -> bool,
) -> Result<(), DatapathError> {
    let mut next = start + Duration::from_secs(1);
    let mut next_watch = start + Duration::from_millis(100);
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let over = duration.is_some_and(|d| start.elapsed() >= d);
        let failed = workers.iter().any(|w| w.is_finished());
        if stop.load(Ordering::Relaxed) || over || failed {
            break;
        }
        if Instant::now() >= next_watch {
            if watch() {
                break;
            }
            next_watch = Instant::now() + Duration::from_millis(100);
        }
        if Instant::now() >= next {
            tick(start.elapsed());
            next += Duration::from_secs(1);
        }
    }
    finished.store(true, Ordering::Relaxed);
    let mut result = Ok(());
    for w in workers {
        let r = w.join().unwrap_or(Err(DatapathError::Panicked));
        if result.is_ok() {
            result = r;
        }
    }
    result
}

/// Polls `queues` until `finished`; with `wait`, sleeps in `poll()` on
/// all sockets while none has work (the non-PMD mode).
fn pmd_loop(queues: &mut [Queue], finished: &AtomicBool, wait: bool) -> Result<(), DatapathError> {
    let mut fds: Vec<libc::pollfd> = queues
        .iter()
        .map(|q| libc::pollfd {
            fd: q.xsk.fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    while !finished.load(Ordering::Relaxed) {
        let mut work = 0;
        for q in queues.iter_mut() {
            work += q.poll()?;
        }
        if wait && work == 0 {
            // SAFETY: `fds` is a live array of its length.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
        }
    }
    Ok(())
}

pub(crate) fn pin_to_cpu(i: usize) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET writes inside it;
    // sched_setaffinity(0) applies to the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(i % cpus, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
}
