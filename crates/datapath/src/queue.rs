//! One queue of a port: its socket and UMEM, the free-frame pool, and the
//! work of one poll (receive a batch, run the application, refill, send).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use std::sync::Mutex;

use capture::xsk::{FramePool, PoolKind, XdpDesc, Xsk, XskError};

use crate::meta::{FrameMeta, MetaKind, MetaStore};
use crate::{App, DatapathError, QueueCounters};

pub(crate) struct Queue {
    pub xsk: Xsk,
    pool: Pool,
    app: App,
    batch: u32,
    kick_at: u32,
    /// The frame `txonly` sends.
    template: Arc<[u8]>,
    pub counters: Arc<QueueCounters>,
    rx: Vec<XdpDesc>,
    done: Vec<u64>,
    meta: MetaStore,
}

/// The free frames a queue takes from and gives back to: its own UMEM's,
/// or those of a UMEM shared by several queues, behind a mutex.
pub(crate) enum Pool {
    Own(FramePool),
    Shared(Arc<Mutex<FramePool>>),
}

impl Pool {
    /// The pool for a UMEM of `count` frames: a queue's own, or one to
    /// share.
    pub fn new(kind: PoolKind, count: u32, size: u32, shared: bool) -> Pool {
        let full = FramePool::full(kind, count, size);
        if shared {
            Pool::Shared(Arc::new(Mutex::new(full)))
        } else {
            Pool::Own(full)
        }
    }

    /// Another handle on a shared pool (`None` for a queue's own).
    pub fn share(&self) -> Option<Pool> {
        match self {
            Pool::Shared(p) => Some(Pool::Shared(p.clone())),
            Pool::Own(_) => None,
        }
    }

    #[inline]
    fn get(&mut self) -> Option<u64> {
        match self {
            Pool::Own(p) => p.get(),
            Pool::Shared(p) => p.lock().expect("pool lock").get(),
        }
    }

    #[inline]
    fn put(&mut self, frame: u64) {
        match self {
            Pool::Own(p) => p.put(frame),
            Pool::Shared(p) => p.lock().expect("pool lock").put(frame),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Pool::Own(p) => p.len(),
            Pool::Shared(p) => p.lock().expect("pool lock").len(),
        }
    }
}

impl Queue {
    /// A queue on `xsk` taking frames from `pool`, `prefill` of which go
    /// to the FILL ring at once (none for `txonly`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        xsk: Xsk,
        mut pool: Pool,
        app: App,
        batch: u32,
        kick_at: u32,
        template: Arc<[u8]>,
        meta: MetaKind,
        prefill: u32,
    ) -> Queue {
        let count = xsk.config().frame_count;
        let mut xsk = xsk;
        if app != App::TxOnly {
            let n = xsk.fill.free(prefill.max(1));
            xsk.fill.produce((0..n).map_while(|_| pool.get()));
        }
        Queue {
            xsk,
            pool,
            app,
            batch,
            kick_at,
            template,
            counters: Arc::new(QueueCounters::default()),
            rx: Vec::with_capacity(batch as usize),
            done: Vec::with_capacity(batch as usize * 2),
            meta: MetaStore::new(meta, count),
        }
    }

    /// One poll; returns the packets handled.
    pub fn poll(&mut self) -> Result<u32, DatapathError> {
        let start = tsc();
        self.reap_completions();
        let n = match self.app {
            App::RxDrop => self.rx_drop(),
            App::L2Fwd => self.l2fwd(),
            App::TxOnly => self.tx_only(),
            // The program datapath drives the queue itself.
            App::Program => 0,
        };
        self.finish_poll(start, n)
    }

    /// The end of a poll that handled `n` packets since `start` (a TSC
    /// reading): refill, kick TX when due, wake RX when asked.
    pub fn finish_poll(&mut self, start: u64, n: u32) -> Result<u32, DatapathError> {
        self.refill();
        let outstanding = self.xsk.tx.outstanding();
        // Kick when enough is queued, or when traffic pauses (so that a
        // short burst is not left on the ring).
        if outstanding >= self.kick_at || (outstanding > 0 && n < self.batch) {
            self.xsk.kick_tx()?;
            self.counters.kicks.fetch_add(1, Ordering::Relaxed);
        }
        if n > 0 {
            self.counters
                .cycles
                .fetch_add(tsc().wrapping_sub(start), Ordering::Relaxed);
        } else if self.xsk.fill.needs_wakeup() {
            self.xsk.wake_rx();
        }
        Ok(n)
    }

    pub fn reap_completions(&mut self) {
        self.done.clear();
        let n = self.xsk.comp.consume(self.batch * 2, &mut self.done);
        for &addr in &self.done {
            self.pool.put(self.xsk.frame_of(addr));
        }
        if n > 0 {
            self.counters.tx.fetch_add(u64::from(n), Ordering::Relaxed);
        }
    }

    /// Records the metadata of the batch just received.
    fn record(&mut self) {
        let (tsc, queue) = (tsc(), self.xsk.queue() as u16);
        for d in &self.rx {
            let m = FrameMeta {
                addr: d.addr,
                len: d.len,
                queue,
                rx_tsc: tsc,
                ..FrameMeta::default()
            };
            self.meta.put(&mut self.xsk, m);
        }
    }

    fn rx_drop(&mut self) -> u32 {
        self.rx.clear();
        let n = self.xsk.rx.consume(self.batch, &mut self.rx);
        self.record();
        let mut bytes = 0;
        for d in &self.rx {
            let m = self.meta.get(&mut self.xsk, d.addr);
            bytes += u64::from(m.len);
            self.pool.put(self.xsk.frame_of(m.addr));
        }
        self.count_rx(n, bytes);
        self.counters
            .dropped
            .fetch_add(u64::from(n), Ordering::Relaxed);
        n
    }

    /// Swaps the Ethernet addresses and sends the frame back out.
    fn l2fwd(&mut self) -> u32 {
        let room = self.xsk.tx.free(self.batch);
        self.rx.clear();
        let n = self.xsk.rx.consume(room, &mut self.rx);
        self.record();
        let mut bytes = 0;
        for d in &self.rx {
            let m = self.meta.get(&mut self.xsk, d.addr);
            bytes += u64::from(m.len);
            if let Some(eth) = self.xsk.bytes_mut(m.addr, (m.len as usize).min(12))
                && eth.len() == 12
            {
                let (dst, src) = eth.split_at_mut(6);
                dst.swap_with_slice(src);
            }
        }
        self.count_rx(n, bytes);
        self.xsk.tx.produce(self.rx.iter().copied());
        n
    }

    fn tx_only(&mut self) -> u32 {
        let want = self.xsk.tx.free(self.batch).min(self.pool.len() as u32);
        let len = self.template.len();
        let mut descs = std::mem::take(&mut self.rx);
        descs.clear();
        for _ in 0..want {
            let Some(frame) = self.pool.get() else { break };
            if let Some(buf) = self.xsk.bytes_mut(frame, len) {
                buf.copy_from_slice(&self.template);
            }
            descs.push(XdpDesc {
                addr: frame,
                len: len as u32,
                options: 0,
            });
        }
        let n = self.xsk.tx.produce(descs.iter().copied());
        self.rx = descs;
        n
    }

    fn refill(&mut self) {
        if self.app == App::TxOnly {
            return;
        }
        let n = self.xsk.fill.free(self.pool.len() as u32);
        let pool = &mut self.pool;
        self.xsk.fill.produce((0..n).map_while(|_| pool.get()));
    }

    /// Receives up to a batch of descriptors (counted as received).
    pub fn receive(&mut self, out: &mut Vec<XdpDesc>) -> u32 {
        out.clear();
        let room = self.xsk.tx.free(self.batch).max(1);
        let n = self.xsk.rx.consume(self.batch.min(room), out);
        let bytes = out.iter().map(|d| u64::from(d.len)).sum();
        self.count_rx(n, bytes);
        n
    }

    /// A frame back to the pool.
    pub fn recycle(&mut self, addr: u64) {
        let frame = self.xsk.frame_of(addr);
        self.pool.put(frame);
    }

    /// A free frame of this queue's UMEM, if any.
    pub fn take_frame(&mut self) -> Option<u64> {
        self.pool.get()
    }

    /// Queues `len` bytes at `addr` for sending (the caller checked that
    /// the TX ring has room, see [`receive`](Self::receive)); false (and
    /// the frame recycled) if it has none after all.
    pub fn send(&mut self, addr: u64, len: u32) -> bool {
        if self.xsk.tx.free(1) == 0 {
            self.recycle(addr);
            return false;
        }
        self.xsk.tx.produce([XdpDesc {
            addr,
            len,
            options: 0,
        }]);
        true
    }

    fn count_rx(&self, n: u32, bytes: u64) {
        if n > 0 {
            self.counters.rx.fetch_add(u64::from(n), Ordering::Relaxed);
            self.counters.rx_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// After the redirect program is gone: sends what is queued, takes
    /// back completions and received frames.
    /// A socket whose interface went away sends nothing more: what its TX
    /// ring holds is taken back at once; returns how many frames that was
    /// (not sent).
    ///
    /// A frame the kernel took off the TX ring comes back on the
    /// completion ring only once it is sent and freed, which in copy mode
    /// may be later (a veth peer frees it when it has taken the packet):
    /// wait until every frame put on the TX ring is back (a second at
    /// most; a descriptor the kernel found invalid never comes back).
    pub fn drain(&mut self) -> u64 {
        let mut unsent = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        loop {
            if self.xsk.tx.outstanding() > 0
                && let Err(XskError::Unbound { .. }) = self.xsk.kick_tx()
            {
                unsent = self.reclaim_unsent();
                self.reap_completions();
                break;
            }
            self.reap_completions();
            if self.tx_in_flight() == 0 || std::time::Instant::now() >= deadline {
                break;
            }
            std::thread::yield_now();
        }
        // A packet the redirect program took just before it was detached
        // may still be on its way into the RX ring (the driver publishes
        // at the end of its poll): let that poll end first.
        std::thread::sleep(std::time::Duration::from_millis(10));
        loop {
            self.rx.clear();
            if self.xsk.rx.consume(self.batch, &mut self.rx) == 0 {
                break;
            }
            for d in &self.rx {
                self.pool.put(self.xsk.frame_of(d.addr));
            }
        }
        unsent
    }

    /// Frames put on the TX ring whose completion has not been taken.
    fn tx_in_flight(&self) -> u32 {
        self.xsk
            .tx
            .produced()
            .wrapping_sub(self.xsk.comp.consumed())
    }

    /// The frames on the TX ring of an unbound socket, back to the pool.
    fn reclaim_unsent(&mut self) -> u64 {
        self.rx.clear();
        let n = self.xsk.tx.reclaim_unread(&mut self.rx);
        for d in &self.rx {
            self.pool.put(self.xsk.frame_of(d.addr));
        }
        u64::from(n)
    }

    /// Frames waiting in the FILL ring.
    pub fn in_fill_ring(&self) -> u64 {
        u64::from(self.xsk.fill.outstanding())
    }
}

/// Frames of `queues` (drained) that are neither free nor in a FILL ring:
/// held by the kernel, or lost. A shared pool is counted once.
pub(crate) fn unaccounted(queues: &[Queue]) -> u64 {
    let mut missing = 0u64;
    let mut shared_seen = false;
    for q in queues {
        let frames = u64::from(q.xsk.config().frame_count);
        match &q.pool {
            Pool::Own(p) => missing += frames.saturating_sub(p.len() as u64),
            Pool::Shared(p) if !shared_seen => {
                shared_seen = true;
                missing += frames.saturating_sub(p.lock().expect("pool lock").len() as u64);
            }
            Pool::Shared(_) => {}
        }
        missing = missing.saturating_sub(q.in_fill_ring());
    }
    missing
}

/// The timestamp counter (0 where there is none).
pub fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86-64.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}
