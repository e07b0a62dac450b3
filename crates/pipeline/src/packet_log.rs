//! [`PacketLog`]: one record per packet of a replay, kept in columns (one
//! vector per field) when [`ReplayOptions::per_packet`](crate::ReplayOptions)
//! asks for it, so front ends can hand the columns on as they are (an
//! Arrow table) without a pass per row.

use runtime::{Redirect, Verdict};
use vm::RegionKind;

use crate::batch::PacketInfo;

/// Per packet, in columns of equal length, in the source's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketLog {
    /// The packet's position in the source, from 1.
    pub seq: Vec<u64>,
    pub timestamp_ns: Vec<u64>,
    /// Bytes the program saw.
    pub length: Vec<u32>,
    /// The verdict; `None` where the run stopped with an error.
    pub verdict: Vec<Option<Verdict>>,
    /// The packets a redirect sent somewhere: position in the source (as
    /// [`PacketLog::seq`]) and where, in order. Sparse, as most packets
    /// are not redirected: a column of `Option<Redirect>` would be the
    /// log's widest.
    pub redirects: Vec<(u64, Redirect)>,
    /// Instructions run (0 where the run stopped with an error).
    pub insns: Vec<u64>,
    /// Helper calls made (0 where the run stopped with an error).
    pub helper_calls: Vec<u64>,
    /// Whether the hook counted memory accesses: [`PacketLog::loads`] and
    /// [`PacketLog::stores`] then have a row per packet.
    pub counts_memory: bool,
    /// Loads per region kind (indexed by `RegionKind as usize`), when the
    /// hook counts memory accesses (0 where the run stopped with an
    /// error); empty columns otherwise.
    pub loads: [Vec<u64>; RegionKind::COUNT],
    /// Stores per region kind, as [`PacketLog::loads`].
    pub stores: [Vec<u64>; RegionKind::COUNT],
    /// The packets whose run stopped with an error: position in the
    /// source (as [`PacketLog::seq`]) and the error's message, in order.
    pub errors: Vec<(u64, String)>,
}

/// What one packet's run gave, for [`PacketLog::push`].
pub(crate) struct Entry {
    pub verdict: Option<Verdict>,
    pub redirect: Option<Redirect>,
    pub insns: u64,
    pub helper_calls: u64,
    /// Loads and stores per region kind, when the hook counts them.
    pub memory: Option<([u64; RegionKind::COUNT], [u64; RegionKind::COUNT])>,
    /// The error the run stopped with.
    pub error: Option<String>,
}

impl PacketLog {
    /// Packets recorded.
    pub fn len(&self) -> usize {
        self.seq.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    pub(crate) fn push(&mut self, info: &PacketInfo, length: usize, e: Entry) {
        self.seq.push(info.seq);
        self.timestamp_ns.push(info.timestamp_ns);
        self.length.push(u32::try_from(length).unwrap_or(u32::MAX));
        self.verdict.push(e.verdict);
        if let Some(r) = e.redirect {
            self.redirects.push((info.seq, r));
        }
        self.insns.push(e.insns);
        self.helper_calls.push(e.helper_calls);
        if let Some((loads, stores)) = e.memory {
            for k in 0..RegionKind::COUNT {
                self.loads[k].push(loads[k]);
                self.stores[k].push(stores[k]);
            }
        }
        if let Some(message) = e.error {
            self.errors.push((info.seq, message));
        }
    }

    /// Adds another worker's records, keeping the source's order.
    pub(crate) fn merge(&mut self, o: &PacketLog) {
        self.seq.extend_from_slice(&o.seq);
        self.timestamp_ns.extend_from_slice(&o.timestamp_ns);
        self.length.extend_from_slice(&o.length);
        self.verdict.extend_from_slice(&o.verdict);
        self.redirects.extend_from_slice(&o.redirects);
        self.insns.extend_from_slice(&o.insns);
        self.helper_calls.extend_from_slice(&o.helper_calls);
        self.counts_memory |= o.counts_memory;
        for k in 0..RegionKind::COUNT {
            self.loads[k].extend_from_slice(&o.loads[k]);
            self.stores[k].extend_from_slice(&o.stores[k]);
        }
        self.errors.extend(o.errors.iter().cloned());
        if !self.seq.is_sorted() {
            self.sort();
            self.errors.sort_by_key(|e| e.0);
            self.redirects.sort_by_key(|r| r.0);
        }
    }

    /// Every column in the order of `seq`.
    fn sort(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by_key(|&i| self.seq[i]);
        fn permute<T: Copy>(v: &mut Vec<T>, order: &[usize]) {
            *v = order.iter().map(|&i| v[i]).collect();
        }
        permute(&mut self.seq, &order);
        permute(&mut self.timestamp_ns, &order);
        permute(&mut self.length, &order);
        permute(&mut self.verdict, &order);
        permute(&mut self.insns, &order);
        permute(&mut self.helper_calls, &order);
        for k in 0..RegionKind::COUNT {
            if self.loads[k].len() == order.len() {
                permute(&mut self.loads[k], &order);
                permute(&mut self.stores[k], &order);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capture::LinkKind;

    fn log(seqs: &[u64]) -> PacketLog {
        let mut l = PacketLog::default();
        let mut b = crate::Batch::new();
        for &s in seqs {
            b.push(s, s * 10, LinkKind::Ethernet, &[0; 3]);
        }
        for (info, data) in b.iter() {
            let e = Entry {
                verdict: None,
                redirect: (info.seq % 3 == 0).then_some(Redirect {
                    target: runtime::RedirectTarget::Cpu(info.seq as u32),
                    map: None,
                }),
                insns: info.seq,
                helper_calls: 0,
                memory: Some(([info.seq, 0, 0, 0], [0, 0, info.seq, 0])),
                error: (info.seq % 2 == 0).then(|| format!("error {}", info.seq)),
            };
            l.push(info, data.len(), e);
        }
        l
    }

    #[test]
    fn merged_logs_keep_the_source_order() {
        let mut a = log(&[1, 4, 5]);
        a.merge(&log(&[2, 3, 6]));
        assert_eq!(a.seq, [1, 2, 3, 4, 5, 6]);
        assert_eq!(a.timestamp_ns, [10, 20, 30, 40, 50, 60]);
        assert_eq!(a.insns, [1, 2, 3, 4, 5, 6]);
        assert_eq!(a.length, [3; 6]);
        assert_eq!(a.loads[0], [1, 2, 3, 4, 5, 6]);
        assert_eq!(a.stores[2], [1, 2, 3, 4, 5, 6]);
        let errors: Vec<u64> = a.errors.iter().map(|e| e.0).collect();
        assert_eq!(errors, [2, 4, 6]);
        assert_eq!(a.errors[1].1, "error 4");
        let redirected: Vec<u64> = a.redirects.iter().map(|r| r.0).collect();
        assert_eq!(redirected, [3, 6]);
    }
}
