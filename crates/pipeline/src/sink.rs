//! Sinks: where packets go after their verdict, through one table from
//! [`Route`] to sink. Sinks never look inside packets.

use std::path::Path;

use runtime::{TcAction, Verdict, XdpAction};

/// A sink that failed; the replay stops at the first failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SinkError(pub String);

/// Where a verdict sends its packet.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Route {
    /// Up the stack: XDP_PASS, TC_ACT_OK (and the tc results that go on
    /// as it does), a socket filter keeping bytes.
    Pass,
    /// Back out of the interface it came in on: XDP_TX.
    Tx,
    /// To another interface, CPU or socket: XDP_REDIRECT, TC_ACT_REDIRECT,
    /// and the copies `bpf_clone_redirect` sends.
    Redirect,
    /// Dropped: XDP_DROP, TC_ACT_SHOT, a socket filter keeping nothing.
    Drop,
}

impl Route {
    pub const ALL: [Route; 4] = [Route::Pass, Route::Tx, Route::Redirect, Route::Drop];

    /// The route of a verdict; aborted runs go nowhere, nor do packets a
    /// tc action consumed (`stolen`, `queued`, `trap`). At a clsact hook
    /// every other tc result lets the packet go on as `ok` does (the
    /// kernel's `sch_handle_ingress`/`egress`: `unspec` when no filter
    /// matched, `pipe`, an unknown code).
    pub fn of(verdict: Verdict) -> Option<Route> {
        Some(match verdict {
            Verdict::Xdp(XdpAction::Pass) => Route::Pass,
            Verdict::Xdp(XdpAction::Tx) => Route::Tx,
            Verdict::Xdp(XdpAction::Redirect) | Verdict::Tc(TcAction::Redirect) => Route::Redirect,
            Verdict::Xdp(XdpAction::Drop) | Verdict::Tc(TcAction::Shot) => Route::Drop,
            Verdict::Tc(TcAction::Stolen | TcAction::Queued | TcAction::Trap) => return None,
            Verdict::Tc(_) => Route::Pass,
            Verdict::Socket(0) => Route::Drop,
            Verdict::Socket(_) => Route::Pass,
            Verdict::Xdp(_) => return None,
        })
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Something that takes packets.
pub trait Sink: Send {
    /// One packet: its linear bytes, then its fragments (usually empty).
    fn write(&mut self, packet: &[u8], frags: &[u8], timestamp_ns: u64) -> Result<(), SinkError>;

    /// The end of a batch's packets: a sink that gathers packets (a
    /// [`Port`](crate::Port) sending them in one system call) sends them
    /// on now. Files write as they go and need not.
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    /// Flushes and closes; the output is complete and valid after it.
    fn finish(self: Box<Self>) -> Result<(), SinkError>;
}

/// A pcap or pcapng file (pcapng when the name ends in `.pcapng`).
pub struct PcapWriter {
    out: capture::PcapSink,
}

impl PcapWriter {
    pub fn create(path: &Path) -> Result<PcapWriter, SinkError> {
        let out = capture::PcapSink::create(path).map_err(|e| SinkError(e.to_string()))?;
        Ok(PcapWriter { out })
    }
}

impl Sink for PcapWriter {
    fn write(&mut self, packet: &[u8], frags: &[u8], timestamp_ns: u64) -> Result<(), SinkError> {
        self.out
            .write_parts(packet, frags, timestamp_ns)
            .map_err(|e| SinkError(e.to_string()))
    }

    fn finish(self: Box<Self>) -> Result<(), SinkError> {
        self.out.finish().map_err(|e| SinkError(e.to_string()))
    }
}

/// `(timestamp_ns, bytes)` of the packets a [`Collect`] sink took.
pub type Collected = std::sync::Arc<std::sync::Mutex<Vec<(u64, Vec<u8>)>>>;

/// Packets kept in memory (tests, comparisons).
#[derive(Default)]
pub struct Collect {
    pub packets: Collected,
}

impl Sink for Collect {
    fn write(&mut self, packet: &[u8], frags: &[u8], timestamp_ns: u64) -> Result<(), SinkError> {
        let mut v = self
            .packets
            .lock()
            .map_err(|_| SinkError("poisoned".into()))?;
        v.push((timestamp_ns, [packet, frags].concat()));
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<(), SinkError> {
        Ok(())
    }
}

/// The `Route -> Sink` table. One sink may serve several routes, and one
/// route may go to several sinks (a file, and a copy out of an interface).
#[derive(Default)]
pub struct Sinks {
    sinks: Vec<Box<dyn Sink>>,
    table: [Vec<usize>; Route::ALL.len()],
}

impl Sinks {
    pub fn new() -> Sinks {
        Sinks::default()
    }

    /// Sends the packets of `routes` to `sink` too: a route given to
    /// several sinks goes to each of them, in the order they were added.
    pub fn add(&mut self, routes: &[Route], sink: Box<dyn Sink>) {
        self.sinks.push(sink);
        let i = self.sinks.len() - 1;
        for r in routes {
            let to = &mut self.table[r.index()];
            if !to.contains(&i) {
                to.push(i);
            }
        }
    }

    /// Whether any route has a sink.
    pub fn is_empty(&self) -> bool {
        self.sinks.is_empty()
    }

    /// Whether packets of `route` go anywhere.
    pub fn wants(&self, route: Route) -> bool {
        !self.table[route.index()].is_empty()
    }

    /// Writes a packet to every sink of `route`; stops at the first that
    /// fails.
    pub fn write(
        &mut self,
        route: Route,
        packet: &[u8],
        frags: &[u8],
        timestamp_ns: u64,
    ) -> Result<(), SinkError> {
        for &i in &self.table[route.index()] {
            self.sinks[i].write(packet, frags, timestamp_ns)?;
        }
        Ok(())
    }

    /// The end of a batch: every sink sends on what it gathered.
    pub fn flush(&mut self) -> Result<(), SinkError> {
        for s in &mut self.sinks {
            s.flush()?;
        }
        Ok(())
    }

    /// Finishes every sink, even after one fails; the first error is kept.
    pub fn finish(self) -> Result<(), SinkError> {
        let mut first = Ok(());
        for s in self.sinks {
            let r = s.finish();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// Packets routed by one worker during one batch, written to the shared
/// sinks in one go (one lock per batch), or held in source order until
/// every worker has passed them ([`Ordered`](crate::ordered::Ordered)).
#[derive(Default)]
pub(crate) struct Outputs {
    bytes: Vec<u8>,
    /// (route, source sequence number, start, length, timestamp)
    items: Vec<(Route, u64, usize, usize, u64)>,
    /// Items before this one are written.
    written: usize,
}

impl Outputs {
    pub(crate) fn push(
        &mut self,
        route: Route,
        seq: u64,
        packet: &[u8],
        frags: &[u8],
        timestamp_ns: u64,
    ) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(packet);
        self.bytes.extend_from_slice(frags);
        self.items
            .push((route, seq, start, self.bytes.len() - start, timestamp_ns));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.len() == self.written
    }

    /// Bytes held (what the merge of several workers bounds).
    pub(crate) fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The sequence number of the next packet to write.
    pub(crate) fn next_seq(&self) -> Option<u64> {
        self.items.get(self.written).map(|i| i.1)
    }

    /// Writes the next packet.
    pub(crate) fn write_next(&mut self, sinks: &mut Sinks) -> Result<(), SinkError> {
        let (route, _, start, len, ts) = self.items[self.written];
        self.written += 1;
        sinks.write(route, &self.bytes[start..start + len], &[], ts)
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.items.clear();
        self.written = 0;
    }

    /// Writes everything, in order, and flushes the sinks.
    pub(crate) fn flush(&mut self, sinks: &mut Sinks) -> Result<(), SinkError> {
        while self.next_seq().is_some() {
            if let Err(e) = self.write_next(sinks) {
                self.clear();
                return Err(e);
            }
        }
        self.clear();
        sinks.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_take_their_routes() {
        assert_eq!(Route::of(Verdict::Xdp(XdpAction::Pass)), Some(Route::Pass));
        assert_eq!(Route::of(Verdict::Tc(TcAction::Shot)), Some(Route::Drop));
        assert_eq!(
            Route::of(Verdict::Tc(TcAction::Redirect)),
            Some(Route::Redirect)
        );
        assert_eq!(Route::of(Verdict::Xdp(XdpAction::Aborted)), None);
        assert_eq!(Route::of(Verdict::Socket(0)), Some(Route::Drop));
        // At clsact, no match and pipe go on; stolen is consumed.
        assert_eq!(Route::of(Verdict::Tc(TcAction::Unspec)), Some(Route::Pass));
        assert_eq!(Route::of(Verdict::Tc(TcAction::Pipe)), Some(Route::Pass));
        assert_eq!(Route::of(Verdict::Tc(TcAction::Stolen)), None);
    }

    #[test]
    fn one_sink_serves_several_routes() {
        let c = Collect::default();
        let seen = c.packets.clone();
        let mut s = Sinks::new();
        s.add(&[Route::Tx, Route::Redirect], Box::new(c));
        s.write(Route::Tx, &[1], &[2], 5).unwrap();
        s.write(Route::Drop, &[3], &[], 6).unwrap();
        s.write(Route::Redirect, &[4], &[], 7).unwrap();
        assert!(s.wants(Route::Tx) && !s.wants(Route::Pass));
        s.finish().unwrap();
        assert_eq!(*seen.lock().unwrap(), vec![(5, vec![1, 2]), (7, vec![4])]);
    }

    #[test]
    fn a_route_is_mirrored_to_every_sink_it_was_given() {
        let (file, port, other) = (Collect::default(), Collect::default(), Collect::default());
        let (f, p, o) = (
            file.packets.clone(),
            port.packets.clone(),
            other.packets.clone(),
        );
        let mut s = Sinks::new();
        s.add(&[Route::Pass, Route::Drop], Box::new(file));
        s.add(&[Route::Pass], Box::new(port));
        s.add(&[Route::Tx, Route::Tx], Box::new(other));
        s.write(Route::Pass, &[1], &[2], 5).unwrap();
        s.write(Route::Drop, &[3], &[], 6).unwrap();
        s.write(Route::Tx, &[4], &[], 7).unwrap();
        s.write(Route::Redirect, &[5], &[], 8).unwrap();
        assert!(!s.wants(Route::Redirect));
        s.flush().unwrap();
        s.finish().unwrap();
        assert_eq!(*f.lock().unwrap(), vec![(5, vec![1, 2]), (6, vec![3])]);
        assert_eq!(*p.lock().unwrap(), vec![(5, vec![1, 2])]);
        // A route named twice for one sink still reaches it once.
        assert_eq!(*o.lock().unwrap(), vec![(7, vec![4])]);
    }
}
