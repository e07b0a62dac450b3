//! The topology and its events: source -> link -> router -> link -> sink
//! and back. Each link direction is a transmitter with a FIFO queue; the
//! router is one processor with a FIFO input queue shared by both
//! directions, then an output queue per direction. A direction whose
//! delay is [`ProcessingDelay::None`] does not use the processor at all;
//! any other delay, even 0 ns, waits its turn.

use std::collections::VecDeque;

use serde::Serialize;

use super::events::Events;
use super::tcp::{Packet, Receiver, Sender};
use super::{ProcessingDelay, Router, Scenario, SimRttSample};

/// One queue: what arrived, what had to wait, what was dropped.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QueueStats {
    pub arrived: u64,
    /// Packets that found the server busy and waited.
    pub queued: u64,
    /// Packets that found the queue full.
    pub dropped: u64,
    /// The most packets ever waiting (the one in service not counted).
    pub max_waiting: usize,
}

impl QueueStats {
    fn offer(&mut self, busy: bool, waiting: usize, cap: Option<usize>) -> Offer {
        self.arrived += 1;
        if !busy {
            return Offer::Serve;
        }
        if cap.is_some_and(|c| waiting >= c) {
            self.dropped += 1;
            return Offer::Drop;
        }
        self.queued += 1;
        self.max_waiting = self.max_waiting.max(waiting + 1);
        Offer::Wait
    }
}

enum Offer {
    Serve,
    Wait,
    Drop,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Node {
    Source,
    Router,
    Sink,
}

/// The four link directions.
const SOURCE_OUT: usize = 0;
const ROUTER_TO_SINK: usize = 1;
const SINK_OUT: usize = 2;
const ROUTER_TO_SOURCE: usize = 3;

/// One direction of a link: a transmitter, its queue, and where it leads.
struct Port {
    to: Node,
    cap: Option<usize>,
    waiting: VecDeque<Packet>,
    busy: bool,
    stats: QueueStats,
}

impl Port {
    fn new(to: Node, cap: Option<usize>) -> Port {
        Port {
            to,
            cap,
            waiting: VecDeque::new(),
            busy: false,
            stats: QueueStats::default(),
        }
    }
}

/// The router's processor.
struct Processor {
    cap: usize,
    waiting: VecDeque<Packet>,
    busy: bool,
    stats: QueueStats,
}

enum Event {
    /// A port finished putting its packet on the wire.
    Sent(usize, Packet),
    Arrive(Node, Packet),
    /// The processor finished a packet.
    Processed(Packet),
    /// The sender's retransmission timer, by arming.
    Timer(u64),
}

impl Event {
    /// At the same instant: a server that finishes is free for a packet
    /// that arrives; an ACK that arrives stops the timer.
    fn rank(&self) -> u8 {
        match self {
            Event::Sent(..) | Event::Processed(_) => 0,
            Event::Arrive(..) => 1,
            Event::Timer(_) => 2,
        }
    }
}

/// What the router did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RouterStats {
    pub data_processed: u64,
    pub acks_processed: u64,
    /// The sum of the processing delays of the packets processed, ns.
    pub processing_ns: u64,
    /// The processor's input queue (both directions).
    pub input: QueueStats,
    /// The output queue toward the sink (data).
    pub out_data: QueueStats,
    /// The output queue toward the source (ACKs).
    pub out_acks: QueueStats,
}

impl RouterStats {
    pub fn dropped(&self) -> u64 {
        self.input.dropped + self.out_data.dropped + self.out_acks.dropped
    }
}

/// What a run leaves for the report.
pub(crate) struct Outcome {
    pub end_ns: u64,
    pub complete: bool,
    pub samples: Vec<SimRttSample>,
    pub sender: Sender,
    pub receiver: Receiver,
    pub router: RouterStats,
}

pub(crate) struct Net<'a> {
    s: &'a Scenario,
    r: &'a Router,
    events: Events<Event>,
    ports: [Port; 4],
    cpu: Processor,
    sender: Sender,
    receiver: Receiver,
    router: RouterStats,
    samples: Vec<SimRttSample>,
    out: Vec<Packet>,
}

impl<'a> Net<'a> {
    pub fn new(s: &'a Scenario, r: &'a Router) -> Net<'a> {
        let cap = Some(s.buffer);
        Net {
            s,
            r,
            events: Events::new(),
            // The hosts' own queues are unbounded: the window bounds them.
            ports: [
                Port::new(Node::Router, None),
                Port::new(Node::Sink, cap),
                Port::new(Node::Router, None),
                Port::new(Node::Source, cap),
            ],
            cpu: Processor {
                cap: s.buffer,
                waiting: VecDeque::new(),
                busy: false,
                stats: QueueStats::default(),
            },
            sender: Sender::new(s.window, s.segment_sizes.clone(), s.segments),
            receiver: Receiver::new(s.segment_sizes.clone(), s.ack_bytes),
            router: RouterStats::default(),
            samples: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Runs until every segment is acknowledged, or `limit_ns`.
    pub fn run(mut self, limit_ns: u64) -> Outcome {
        let mut now = 0;
        self.sender.fill(0, &mut self.out);
        self.flush_sender(0, 0);
        while !self.sender.done() {
            let Some((at, event)) = self.events.pop() else {
                break;
            };
            if at > limit_ns {
                now = limit_ns;
                break;
            }
            now = at;
            match event {
                Event::Sent(port, p) => self.sent(now, port, p),
                Event::Arrive(node, p) => self.arrive(now, node, p),
                Event::Processed(p) => self.processed(now, p),
                Event::Timer(generation) => {
                    if generation == self.sender.timer_gen && self.sender.timer == Some(now) {
                        let before = self.sender.timer_gen;
                        self.sender.timer = None;
                        self.sender.on_timeout(now, &mut self.out);
                        self.flush_sender(now, before);
                    }
                }
            }
        }
        self.router.input = self.cpu.stats.clone();
        self.router.out_data = self.ports[ROUTER_TO_SINK].stats.clone();
        self.router.out_acks = self.ports[ROUTER_TO_SOURCE].stats.clone();
        self.sender.finish();
        Outcome {
            end_ns: now,
            complete: self.sender.done(),
            samples: self.samples,
            sender: self.sender,
            receiver: self.receiver,
            router: self.router,
        }
    }

    /// Puts what the sender sent on its link; schedules its timer when it
    /// was armed again (after arming number `before`).
    fn flush_sender(&mut self, now: u64, before: u64) {
        for p in std::mem::take(&mut self.out) {
            self.enqueue(now, SOURCE_OUT, p);
        }
        if self.sender.timer_gen != before
            && let Some(at) = self.sender.timer
        {
            self.schedule(at, Event::Timer(self.sender.timer_gen));
        }
    }

    fn schedule(&mut self, at: u64, e: Event) {
        let rank = e.rank();
        self.events.schedule(at, rank, e);
    }

    fn tx_ns(&self, p: &Packet) -> u64 {
        super::serialization_ns(p.bytes(), self.s.rate_bps)
    }

    fn enqueue(&mut self, now: u64, port: usize, p: Packet) {
        let q = &mut self.ports[port];
        match q.stats.offer(q.busy, q.waiting.len(), q.cap) {
            Offer::Serve => {
                q.busy = true;
                let done = now + self.tx_ns(&p);
                self.schedule(done, Event::Sent(port, p));
            }
            Offer::Wait => q.waiting.push_back(p),
            Offer::Drop => {}
        }
    }

    fn sent(&mut self, now: u64, port: usize, p: Packet) {
        let to = self.ports[port].to;
        self.schedule(now + self.s.prop_ns, Event::Arrive(to, p));
        match self.ports[port].waiting.pop_front() {
            Some(next) => {
                let done = now + self.tx_ns(&next);
                self.schedule(done, Event::Sent(port, next));
            }
            None => self.ports[port].busy = false,
        }
    }

    fn delay_of(&self, p: &Packet) -> &ProcessingDelay {
        if p.is_data() {
            &self.r.data
        } else {
            &self.r.ack
        }
    }

    /// The router does not process this packet's direction at all.
    fn unprocessed(&self, p: &Packet) -> bool {
        matches!(self.delay_of(p), ProcessingDelay::None)
    }

    fn arrive(&mut self, now: u64, node: Node, p: Packet) {
        match (node, p) {
            (Node::Router, _) if self.unprocessed(&p) => self.forward(now, p),
            (Node::Router, _) => {
                let c = &mut self.cpu;
                match c.stats.offer(c.busy, c.waiting.len(), Some(c.cap)) {
                    Offer::Serve => self.process(now, p),
                    Offer::Wait => c.waiting.push_back(p),
                    Offer::Drop => {}
                }
            }
            (Node::Sink, Packet::Data { seq, sent_ns, .. }) => {
                let ack = self.receiver.on_data(now, seq, sent_ns);
                self.enqueue(now, SINK_OUT, ack);
            }
            (Node::Source, Packet::Ack { next, echo_ns, .. }) => {
                let rtt = now - echo_ns;
                self.samples.push(SimRttSample {
                    at_ns: now,
                    rtt_ns: rtt,
                    ack: next,
                });
                let before = self.sender.timer_gen;
                self.sender.on_ack(now, next, rtt, &mut self.out);
                self.flush_sender(now, before);
            }
            // Data never reaches the source, nor ACKs the sink.
            _ => {}
        }
    }

    /// Starts processing `p` (the processor is free). A packet of 0 ns
    /// goes straight on, leaving the processor free.
    fn process(&mut self, now: u64, p: Packet) {
        let d = self.delay_of(&p).ns(p.bytes());
        if p.is_data() {
            self.router.data_processed += 1;
        } else {
            self.router.acks_processed += 1;
        }
        self.router.processing_ns += d;
        if d == 0 {
            self.forward(now, p);
        } else {
            self.cpu.busy = true;
            self.schedule(now + d, Event::Processed(p));
        }
    }

    fn forward(&mut self, now: u64, p: Packet) {
        let port = if p.is_data() {
            ROUTER_TO_SINK
        } else {
            ROUTER_TO_SOURCE
        };
        self.enqueue(now, port, p);
    }

    fn processed(&mut self, now: u64, p: Packet) {
        self.forward(now, p);
        self.cpu.busy = false;
        while !self.cpu.busy
            && let Some(next) = self.cpu.waiting.pop_front()
        {
            self.process(now, next);
        }
    }
}
