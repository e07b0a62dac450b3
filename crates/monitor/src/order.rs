//! Whether packets come in time order. Flow timeouts and RTT samples are
//! taken in the order packets are read, so a capture out of time order (a
//! merge of two, a multi-queue capture) gives other answers than the wire
//! did; the readers count it so that the front ends can say so.

/// Packets earlier than the latest packet before them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeOrder {
    latest: u64,
    /// How many packets came earlier than one read before them.
    pub backwards: u64,
    /// The first such packet's sequence number.
    pub first_backwards: Option<u64>,
}

impl TimeOrder {
    pub fn see(&mut self, seq: u64, timestamp_ns: u64) {
        if timestamp_ns < self.latest {
            self.backwards += 1;
            self.first_backwards.get_or_insert(seq);
        }
        self.latest = self.latest.max(timestamp_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_packets_earlier_than_any_before_them() {
        let mut o = TimeOrder::default();
        for (seq, ts) in [(1, 10), (2, 20), (3, 15), (4, 20), (5, 19), (6, 30)] {
            o.see(seq, ts);
        }
        assert_eq!((o.backwards, o.first_backwards), (2, Some(3)));
    }
}
