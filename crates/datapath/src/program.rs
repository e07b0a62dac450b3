//! A sluice program on the datapath: every frame received on any port runs
//! through the program (the JIT, in user space), and the datapath carries
//! out its verdict: DROP and ABORTED recycle the frame, TX sends the
//! (possibly rewritten) frame back out of the same port, REDIRECT to a
//! port's interface copies it into that port's UMEM and sends it there,
//! PASS is counted (there is no tap to hand it to the kernel).
//!
//! A polling thread per queue (or, with `pmd` off, one thread for all)
//! receives batches; each thread runs the program on its own hook (a
//! sibling of the one given, `bpf_get_smp_processor_id()` = the thread's
//! index), all on the same maps, as the kernel's CPUs share them. Verdicts
//! take their `pipeline::Route`, as in every other front end.
//!
//! A port whose interface goes away during the run (deleted, or moved to
//! another namespace: watch.rs) is reported once (`Event::PortGone`) and
//! polled no more, its sockets are closed (slot.rs); frames for it are
//! counted as lost, and the run goes on with the other ports, or stops
//! cleanly when none is left.

mod slot;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pipeline::Route;
use std::time::{Duration, Instant};

use capture::xsk::{BoundMode, PoolKind, XdpDesc, Xsk, XskConfig, XskError, XskStats};
use kernel::attach::XdpMode;
use runtime::{PacketHook, PacketMeta, RedirectTarget, TcAction, Verdict};
use slot::Slot;

use crate::queue::{Queue, tsc};
use crate::redirect::{OwnProgram, XskRedirect};
use crate::watch::Watch;
use crate::{App, DatapathError, PortGone, Totals};

/// What [`run`] tells its caller while it runs.
pub enum Event<'a> {
    /// About once a second: the totals so far, the time since the start.
    Tick(&'a Totals, Duration),
    /// A port's interface went away: the run goes on with the others, or
    /// stops when none is left.
    PortGone(&'a PortGone),
}

/// How to run a program on ports.
#[derive(Clone, Debug)]
pub struct ProgramOptions {
    pub ports: Vec<String>,
    pub queues: Vec<u32>,
    pub mode: XdpMode,
    pub xsk: XskConfig,
    pub batch: u32,
    pub pool: PoolKind,
    pub kick_at: Option<u32>,
    pub duration: Option<Duration>,
    /// A polling thread per queue (else one thread for all, waiting in
    /// `poll()` while no queue has work).
    pub pmd: bool,
    /// Pin polling thread i to CPU i (modulo the CPU count).
    pub pin: bool,
    /// Polling threads, the queues of every port dealt out over them
    /// (with `pmd`; default: one per queue).
    pub pmd_threads: Option<usize>,
    /// The caller's XDP program on the ports instead of the plain
    /// redirect program (a kernel fast path in front of the hook).
    pub own_program: Option<OwnProgram>,
}

/// What happened on one port.
#[derive(Default, Debug)]
pub struct PortCounters {
    pub rx: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub dropped: AtomicU64,
    pub passed: AtomicU64,
    pub tx_verdicts: AtomicU64,
    pub redirected: AtomicU64,
    /// Copies sent out of another port (a tc configuration's mirred).
    pub mirrored: AtomicU64,
    /// Taken by an action (tc's `stolen`: a mirred redirect sent it on as
    /// a copy, counted in `mirrored`).
    pub stolen: AtomicU64,
    /// Program errors and ABORTED.
    pub aborted: AtomicU64,
    /// Frames that could not be sent (no free frame or TX room, too big,
    /// a redirect to something that is not a port).
    pub lost: AtomicU64,
}

/// A polling thread's counts for one batch, added to the port's shared
/// counters once at its end: the threads of a port's queues would
/// otherwise contend on the counters' cache line for every frame.
#[derive(Default)]
struct Tally {
    rx: u64,
    rx_bytes: u64,
    dropped: u64,
    passed: u64,
    tx_verdicts: u64,
    redirected: u64,
    mirrored: u64,
    stolen: u64,
    aborted: u64,
    lost: u64,
}

impl Tally {
    fn add_to(&self, c: &PortCounters) {
        let add = |a: &AtomicU64, n: u64| {
            if n > 0 {
                a.fetch_add(n, Ordering::Relaxed);
            }
        };
        add(&c.rx, self.rx);
        add(&c.rx_bytes, self.rx_bytes);
        add(&c.dropped, self.dropped);
        add(&c.passed, self.passed);
        add(&c.tx_verdicts, self.tx_verdicts);
        add(&c.redirected, self.redirected);
        add(&c.mirrored, self.mirrored);
        add(&c.stolen, self.stolen);
        add(&c.aborted, self.aborted);
        add(&c.lost, self.lost);
    }
}

/// Totals of one port at the end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortSummary {
    pub dev: String,
    pub ifindex: u32,
    pub bind: Option<BoundMode>,
    pub rx: u64,
    pub rx_bytes: u64,
    pub tx: u64,
    pub dropped: u64,
    pub passed: u64,
    pub tx_verdicts: u64,
    pub redirected: u64,
    pub mirrored: u64,
    pub stolen: u64,
    pub aborted: u64,
    pub lost: u64,
    /// Each of the port's queues, in the order given.
    pub queues: Vec<QueueSummary>,
    /// Why the port went away during the run, if it did.
    pub gone: Option<String>,
    /// The kernel's counters of the port's sockets (`XDP_STATISTICS`),
    /// summed: frames it could not put on an RX ring.
    pub kernel: XskStats,
}

/// Totals of one queue of a port at the end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueSummary {
    /// The interface's queue index.
    pub queue: u32,
    /// Frames received on the queue's socket.
    pub rx: u64,
    /// Frames sent (completed) out of the queue's socket.
    pub tx: u64,
    /// Timestamp-counter cycles of the polls that handled packets.
    pub cycles: u64,
}

pub struct ProgramSummary {
    pub ports: Vec<PortSummary>,
    /// Every port went away: the run stopped by itself.
    pub all_gone: bool,
    pub seconds: f64,
    pub cycles: u64,
    pub frames: u64,
    pub frames_unaccounted: u64,
}

struct Port {
    dev: String,
    ifindex: u32,
    queues: Vec<Queue>,
    counters: Arc<PortCounters>,
}

/// Opens the ports, attaches the redirect program to each, runs `hook`
/// on every received frame until `stop`, the duration, or every port gone,
/// then detaches and drains. `report` gets the totals about once a second
/// and each port whose interface goes away ([`Event`]). The hook is an
/// XDP program's ([`runtime::Hook`]) or anything else that decides as a
/// hook does (a tc configuration at the ports' ingress); copies it sends
/// to another port's egress (mirred mirror) are sent there too.
pub fn run<H: PacketHook>(
    hook: &mut H,
    opts: &ProgramOptions,
    stop: &AtomicBool,
    report: impl FnMut(Event<'_>),
) -> Result<ProgramSummary, DatapathError> {
    if opts.ports.is_empty() || opts.queues.is_empty() || opts.batch == 0 {
        return Err(DatapathError::Setup(
            "at least one port, one queue and a batch of 1".into(),
        ));
    }
    if let Some(own) = &opts.own_program
        && let Some(q) = opts.queues.iter().find(|&&q| q >= own.stride)
    {
        return Err(DatapathError::Setup(format!(
            "queue {q}: the XDP program in front takes queues below {}",
            own.stride
        )));
    }
    let kick_at = crate::kick_threshold(opts.kick_at, &opts.xsk);
    let mut ports = Vec::new();
    for dev in &opts.ports {
        let sockets = (opts.queues.iter())
            .map(|&q| Xsk::open(dev, q, &opts.xsk))
            .collect::<Result<Vec<_>, _>>()?;
        let ifindex = sockets[0].ifindex();
        let queues = sockets
            .into_iter()
            .map(|s| {
                let (count, size) = (opts.xsk.frame_count, opts.xsk.frame_size);
                Queue::new(
                    s,
                    crate::queue::Pool::new(opts.pool, count, size, false),
                    App::Program,
                    opts.batch,
                    kick_at,
                    Arc::from([]),
                    crate::MetaKind::Array,
                    count / 2,
                )
            })
            .collect();
        ports.push(Port {
            dev: dev.clone(),
            ifindex,
            queues,
            counters: Arc::default(),
        });
    }
    let mut redirects = Vec::new();
    for (i, p) in ports.iter().enumerate() {
        let r = match &opts.own_program {
            Some(own) => XskRedirect::attach_own(&p.dev, opts.mode, own, i as u32)?,
            None => XskRedirect::attach(&p.dev, opts.mode)?,
        };
        for q in &p.queues {
            r.register(q.xsk.queue(), q.xsk.fd())?;
        }
        redirects.push(r);
    }
    let counters: Vec<Arc<PortCounters>> = ports.iter().map(|p| p.counters.clone()).collect();
    let queue_count: usize = ports.iter().map(|p| p.queues.len()).sum();
    let threads = match (opts.pmd, opts.pmd_threads) {
        (true, Some(n)) => n.clamp(1, queue_count.max(1)),
        (true, None) => queue_count,
        (false, _) => 1,
    };
    // A hook per polling thread on the same maps; made before anything
    // runs, so an error (too few per-CPU slots) stops nothing half-way.
    let mut siblings = (1..threads)
        .map(|i| hook.sibling(i as u32))
        .collect::<Result<Vec<H>, _>>()
        .map_err(|e| DatapathError::Setup(e.to_string()))?;
    let watches = (ports.iter())
        .map(|p| {
            let fds = p.queues.iter().map(|q| q.xsk.fd()).collect();
            Watch::new(&p.dev, p.ifindex, fds)
        })
        .collect();
    let shared = Shared {
        queues: (ports.iter_mut())
            .map(|p| {
                p.queues
                    .drain(..)
                    .map(|q| Mutex::new(Slot::Open(q)))
                    .collect()
            })
            .collect(),
        ifindexes: ports.iter().map(|p| p.ifindex).collect(),
        watches,
        counters: counters.clone(),
        cycles: AtomicU64::new(0),
        finished: AtomicBool::new(false),
        epoch: Instant::now(),
    };
    let report = RefCell::new(report);
    let mut causes: Vec<Option<String>> = vec![None; ports.len()];
    let start = Instant::now();
    let result = std::thread::scope(|s| {
        let shared = &shared;
        let all: Vec<(usize, usize)> = (0..shared.queues.len())
            .flat_map(|p| (0..shared.queues[p].len()).map(move |q| (p, q)))
            .collect();
        // The queues dealt out over the polling threads (one each by
        // default), or one thread waiting for all of them.
        let mut groups: Vec<Vec<(usize, usize)>> = vec![Vec::new(); threads];
        for (i, pq) in all.into_iter().enumerate() {
            groups[i % threads].push(pq);
        }
        let (wait, pin) = (!opts.pmd, opts.pin);
        let hooks = std::iter::once(hook).chain(siblings.iter_mut());
        let workers: Vec<_> = groups
            .into_iter()
            .zip(hooks)
            .enumerate()
            .map(|(i, (group, hook))| {
                s.spawn(move || {
                    if pin {
                        crate::pin_to_cpu(i);
                    }
                    poll_loop(shared, hook, &group, wait)
                })
            })
            .collect();
        let finished = &shared.finished;
        let tick = |at| (report.borrow_mut())(Event::Tick(&totals(&counters, &shared.cycles), at));
        let watch = || watch_ports(shared, &mut causes, &report);
        crate::supervise(workers, finished, start, opts.duration, stop, tick, watch)
    });
    let seconds = start.elapsed().as_secs_f64();
    let cycles = shared.cycles.load(Ordering::Relaxed);
    // A socket its thread found unbound, after the supervisor's last look.
    watch_ports(&shared, &mut causes, &report);
    // No new frames once the programs are gone; then every queue drains
    // and closes.
    drop(redirects);
    let slots: Vec<Vec<Slot>> = (shared.queues.into_iter())
        .map(|qs| {
            qs.into_iter()
                .map(|q| q.into_inner().expect("queue lock"))
                .collect()
        })
        .collect();
    let mut closed = Vec::new();
    for (p, mut slots) in ports.iter().zip(slots) {
        // Frames a lost port held to send are lost.
        let unsent: u64 = slots.iter_mut().map(Slot::close).sum();
        p.counters.lost.fetch_add(unsent, Ordering::Relaxed);
        closed.push(slots);
    }
    result?;
    Ok(ProgramSummary {
        all_gone: causes.iter().all(Option::is_some),
        frames: closed.iter().flat_map(|s| ends(s)).map(|c| c.frames).sum(),
        frames_unaccounted: (closed.iter().flat_map(|s| ends(s)))
            .map(|c| c.unaccounted)
            .sum(),
        ports: ports
            .iter()
            .zip(causes)
            .zip(&closed)
            .map(|((p, gone), slots)| {
                let c = &p.counters;
                let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
                let queues = ends(slots);
                PortSummary {
                    dev: p.dev.clone(),
                    ifindex: p.ifindex,
                    bind: queues.first().map(|q| q.bind),
                    rx: get(&c.rx),
                    rx_bytes: get(&c.rx_bytes),
                    tx: queues.iter().map(|q| q.summary.tx).sum(),
                    dropped: get(&c.dropped),
                    passed: get(&c.passed),
                    tx_verdicts: get(&c.tx_verdicts),
                    redirected: get(&c.redirected),
                    mirrored: get(&c.mirrored),
                    stolen: get(&c.stolen),
                    aborted: get(&c.aborted),
                    lost: get(&c.lost),
                    queues: queues.iter().map(|q| q.summary.clone()).collect(),
                    gone,
                    kernel: slot::kernel_stats(queues.into_iter()),
                }
            })
            .collect(),
        seconds,
        cycles,
    })
}

/// The records of a port's closed queues.
fn ends(slots: &[Slot]) -> Vec<&slot::Closed> {
    slots.iter().filter_map(Slot::closed).collect()
}

/// Looks at the ports not yet gone; reports each that went; true when
/// none is left.
fn watch_ports(
    sh: &Shared,
    causes: &mut [Option<String>],
    report: &RefCell<impl FnMut(Event<'_>)>,
) -> bool {
    let watches = &sh.watches;
    for (i, w) in watches.iter().enumerate() {
        if causes[i].is_some() {
            continue;
        }
        if let Some(cause) = w.check() {
            causes[i] = Some(cause.clone());
            let gone = PortGone {
                dev: w.dev.clone(),
                ifindex: w.ifindex,
                cause,
                remaining: (watches.iter())
                    .filter(|w| !w.is_gone())
                    .map(|w| w.dev.clone())
                    .collect(),
            };
            (report.borrow_mut())(Event::PortGone(&gone));
            // Its sockets and UMEMs closed now, not at the end of the run
            // (its watch is not looked at again).
            for q in &sh.queues[i] {
                let unsent = q.lock().expect("queue lock").close();
                sh.counters[i].lost.fetch_add(unsent, Ordering::Relaxed);
            }
        }
    }
    causes.iter().all(Option::is_some)
}

fn totals(counters: &[Arc<PortCounters>], cycles: &AtomicU64) -> Totals {
    let mut t = Totals::default();
    for c in counters {
        t.rx += c.rx.load(Ordering::Relaxed);
        t.rx_bytes += c.rx_bytes.load(Ordering::Relaxed);
        // Live: frames the program sent on (completions are counted per
        // queue and summed at the end).
        t.tx += c.tx_verdicts.load(Ordering::Relaxed) + c.redirected.load(Ordering::Relaxed);
        t.dropped += c.dropped.load(Ordering::Relaxed) + c.aborted.load(Ordering::Relaxed);
    }
    t.cycles = cycles.load(Ordering::Relaxed);
    t
}

/// What the program decided for one frame, with the bytes to send.
enum Action {
    Recycle,
    Send { port: usize },
}

/// What the polling threads share: every queue (each polled by one
/// thread; locked by others only to send a redirected frame out of it).
/// Each thread has its own hook; the program's maps are shared.
struct Shared {
    queues: Vec<Vec<Mutex<Slot>>>,
    ifindexes: Vec<u32>,
    /// Each port's interface, watched for going away.
    watches: Vec<Watch>,
    counters: Vec<Arc<PortCounters>>,
    cycles: AtomicU64,
    finished: AtomicBool,
    epoch: Instant,
}

/// A thread's buffers.
#[derive(Default)]
struct Scratch {
    descs: Vec<XdpDesc>,
    bytes: Vec<u8>,
    /// Frames for other ports: (port, range in `redirected`).
    pending: Vec<(usize, std::ops::Range<usize>)>,
    redirected: Vec<u8>,
}

/// Polls `queues` until the run ends; with `wait`, sleeps in `poll()` on
/// their sockets while none has work.
fn poll_loop(
    sh: &Shared,
    hook: &mut impl PacketHook,
    queues: &[(usize, usize)],
    wait: bool,
) -> Result<(), DatapathError> {
    let mut scratch = Scratch::default();
    let mut fds: Vec<libc::pollfd> = queues
        .iter()
        .map(|&(p, q)| libc::pollfd {
            fd: match &*sh.queues[p][q].lock().expect("queue lock") {
                Slot::Open(q) => q.xsk.fd(),
                Slot::Closed(_) => -1,
            },
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    while !sh.finished.load(Ordering::Relaxed) {
        let (mut work, mut live) = (0, 0);
        for (i, &(p, q)) in queues.iter().enumerate() {
            if sh.watches[p].is_gone() {
                // poll() skips negative descriptors.
                fds[i].fd = -1;
                continue;
            }
            live += 1;
            work += poll_queue(sh, hook, p, q, &mut scratch)?;
        }
        hook.after_batch(work == 0);
        if live == 0 {
            // Every port of this thread is gone: wait for the end.
            std::thread::sleep(Duration::from_millis(20));
        } else if wait && work == 0 {
            // SAFETY: `fds` is a live array of its length.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
        }
    }
    Ok(())
}

/// One batch of queue `q` of port `p`: receive, run the program on each
/// frame, carry out the verdicts on this queue, then send the frames
/// redirected to other ports (holding only their queue).
fn poll_queue(
    sh: &Shared,
    hook: &mut impl PacketHook,
    p: usize,
    q: usize,
    s: &mut Scratch,
) -> Result<u32, DatapathError> {
    let start = tsc();
    let mut tally = Tally::default();
    let t = &mut tally;
    let received = {
        let mut slot = sh.queues[p][q].lock().expect("queue lock");
        let Slot::Open(me) = &mut *slot else {
            return Ok(0);
        };
        me.reap_completions();
        let n = me.receive(&mut s.descs);
        if n > 0 {
            t.rx += u64::from(n);
            let meta = PacketMeta {
                ifindex: sh.ifindexes[p],
                rx_queue: me.xsk.queue(),
                timestamp_ns: sh.epoch.elapsed().as_nanos() as u64,
                ..PacketMeta::default()
            };
            for d in &s.descs {
                t.rx_bytes += u64::from(d.len);
                let Some(frame) = me.xsk.bytes_mut(d.addr, d.len as usize) else {
                    t.lost += 1;
                    me.recycle(d.addr);
                    continue;
                };
                let copies = Copies {
                    pending: &mut s.pending,
                    bytes: &mut s.redirected,
                };
                match decide(
                    hook,
                    frame,
                    &meta,
                    &mut s.bytes,
                    copies,
                    &sh.ifindexes,
                    p,
                    t,
                ) {
                    Action::Recycle => me.recycle(d.addr),
                    Action::Send { port } if port == p => {
                        send_in_frame(me, d.addr, &s.bytes, t);
                    }
                    Action::Send { port } => {
                        me.recycle(d.addr);
                        let at = s.redirected.len();
                        s.redirected.extend_from_slice(&s.bytes);
                        s.pending.push((port, at..s.redirected.len()));
                    }
                }
            }
        }
        let done = match me.finish_poll(start, n) {
            // The interface went away: the supervisor reports it.
            Err(DatapathError::Xsk(XskError::Unbound { .. })) => {
                sh.watches[p].mark_gone();
                Ok(n)
            }
            r => r,
        };
        if n > 0 {
            sh.cycles
                .fetch_add(tsc().wrapping_sub(start), Ordering::Relaxed);
        }
        done
    };
    for (port, range) in s.pending.drain(..) {
        if sh.watches[port].is_gone() {
            t.lost += 1;
            continue;
        }
        match &mut *sh.queues[port][0].lock().expect("queue lock") {
            Slot::Open(egress) => send_copy(egress, &s.redirected[range], t),
            Slot::Closed(_) => t.lost += 1,
        }
    }
    s.redirected.clear();
    tally.add_to(&sh.counters[p]);
    received
}

/// Where copies of a packet to send out of other ports go: (port, range
/// of `bytes`).
struct Copies<'a> {
    pending: &'a mut Vec<(usize, std::ops::Range<usize>)>,
    bytes: &'a mut Vec<u8>,
}

/// Runs the program on `frame`; the bytes to send (if any) go to `out`,
/// copies for other ports' egress to `copies`.
#[allow(clippy::too_many_arguments)]
fn decide(
    hook: &mut impl PacketHook,
    frame: &[u8],
    meta: &PacketMeta,
    out: &mut Vec<u8>,
    copies: Copies<'_>,
    ifindexes: &[u32],
    ingress: usize,
    t: &mut Tally,
) -> Action {
    let Ok(o) = hook.run(frame, meta) else {
        t.aborted += 1;
        return Action::Recycle;
    };
    out.clear();
    out.extend_from_slice(o.packet);
    for c in o.clones.iter().filter(|c| !c.ingress) {
        match ifindexes.iter().position(|&i| i == c.ifindex) {
            Some(port) => {
                let at = copies.bytes.len();
                copies.bytes.extend_from_slice(&c.packet);
                copies.pending.push((port, at..copies.bytes.len()));
                t.mirrored += 1;
            }
            None => t.lost += 1,
        }
    }
    match Route::of(o.verdict) {
        Some(Route::Tx) => {
            t.tx_verdicts += 1;
            Action::Send { port: ingress }
        }
        Some(Route::Redirect) => {
            let port = o.redirect.and_then(|r| match r.target {
                RedirectTarget::Device { ifindex, .. } => {
                    ifindexes.iter().position(|&i| i == ifindex)
                }
                _ => None,
            });
            match port {
                Some(port) => {
                    t.redirected += 1;
                    Action::Send { port }
                }
                None => {
                    t.lost += 1;
                    Action::Recycle
                }
            }
        }
        Some(Route::Pass) => {
            t.passed += 1;
            Action::Recycle
        }
        Some(Route::Drop) => {
            t.dropped += 1;
            Action::Recycle
        }
        None if matches!(
            o.verdict,
            Verdict::Tc(TcAction::Stolen | TcAction::Queued | TcAction::Trap)
        ) =>
        {
            t.stolen += 1;
            Action::Recycle
        }
        // XDP_ABORTED and return values that are no action.
        None => {
            t.aborted += 1;
            Action::Recycle
        }
    }
}

/// Sends `bytes` out of `queue` in the frame that held `addr` (XDP_TX).
fn send_in_frame(queue: &mut Queue, addr: u64, bytes: &[u8], t: &mut Tally) {
    let at = queue.xsk.frame_of(addr) + 256;
    match queue.xsk.bytes_mut(at, bytes.len()) {
        Some(buf) => {
            buf.copy_from_slice(bytes);
            if !queue.send(at, bytes.len() as u32) {
                t.lost += 1;
            }
        }
        None => {
            queue.recycle(addr);
            t.lost += 1;
        }
    }
}

/// Sends a copy of `bytes` out of `egress`, in a frame of its own UMEM
/// (the paper's Figure 5).
fn send_copy(egress: &mut Queue, bytes: &[u8], t: &mut Tally) {
    let Some(frame) = egress.take_frame() else {
        t.lost += 1;
        return;
    };
    send_in_frame(egress, frame, bytes, t);
}
