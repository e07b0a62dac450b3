//! The xPF version of passive RTT, `programs/xpf/rtt.s`, on any of
//! [`xpf::XpfRunner`]'s engines (the xPF interpreter, or the eBPF
//! translation in sluice's VM or JIT). The program keeps its SYNs and
//! TSvals in two open-addressing tables in its persistent memory and hands
//! its samples to user space through a log there (the convention of the
//! xPF applications: a word counts the records pending; after each packet
//! user space reads them and writes 0 back). User space writes the
//! maximum age, the tables' sizes and places before the first packet, and
//! keeps the per-flow statistics from the samples, with the reference's
//! flow capacity (a sample of a new flow when full counts in `flows_full`).
//!
//! Where it differs from the reference ([`crate::RttMeter`]): a SYN lives
//! in one of 8 slots, a TSval in one of 16, by double hashing (the probes
//! unrolled, so that the program needs no loop and stays JIT-able), and a
//! slot whose entry is older than the maximum age counts as free. A
//! table's slots are its capacity rounded up to a power of two (at least
//! 8; at most [`XPF_MAX_SYNS`] and [`XPF_MAX_TSVALS`], so that both and the
//! log fit one block of 65,536 words; larger capacities are refused). So
//! the xPF version may refuse an entry whose slots are all held (counted in
//! `syn_full` or `ts_full`) that the reference, a hash map holding up to
//! its capacity, would keep, and keep one that the reference's full map
//! would refuse: the two give equal samples while neither refuses anything
//! (the tests run with 512 SYN and 4,096 TSval slots, every capture of
//! tcpdump's suite and conversations of up to 2,000 packets within the
//! maximum age, and check that nothing was refused). Since a stale slot is
//! free, [`XpfRtt::sweep`] has nothing to do: a stale entry matches
//! nothing in either version. The program's times are 32-bit seconds (they
//! wrap in 2106) and nanoseconds; a maximum age over 2^32 - 1 s is that.

use std::collections::{BTreeMap, HashMap};

use cbpf::xpf::{Form, XpfOptions};
use xpf::{XpfEngine, XpfRunner};

use crate::error::MonitorError;
use crate::key::FlowKey;
use crate::rtt::{MeterOptions, Method, RttCounters, RttSample, RttStats};
use crate::xpf_words::{address, read, take_log};

/// The most SYN slots (a capacity of more is refused).
pub const XPF_MAX_SYNS: usize = 512;
/// The most TSval slots (a capacity of more is refused).
pub const XPF_MAX_TSVALS: usize = 4096;

/// Header words (the program's header comment has the map).
const W_MAX_AGE: u32 = 0;
const W_PENDING: u32 = 5;
const W_LOST: u32 = 6;
const W_SYN_FULL: u32 = 7;
const W_TS_FULL: u32 = 8;
const W_BASES: u32 = 9;
/// Words of the header and working words; the log follows.
const LOG: u32 = 64;
const RECORD: u32 = 16;
/// Records the log holds (a packet appends at most two).
const LOG_RECORDS: u32 = 4;
const SYN_SLOT: u32 = 13;
const TS_SLOT: u32 = 14;
/// The words of one xPF block.
const BLOCK: u32 = 65_536;

/// A table's slots for `capacity` entries, or why not.
fn slots(capacity: usize, max: usize, what: &str) -> Result<u32, MonitorError> {
    let n = capacity
        .max(8)
        .checked_next_power_of_two()
        .unwrap_or(usize::MAX);
    if capacity == 0 || n > max {
        return Err(MonitorError::Options(format!(
            "a {what} table of {capacity}: the xPF program holds 1 to {max} (one block of memory)"
        )));
    }
    Ok(n as u32)
}

/// The time of `s` seconds (the low 32 bits) and `ns`, taken as the latest
/// such time not after `now_ns`.
fn join(s: u32, ns: u32, now_ns: u64) -> u64 {
    let now_s = now_ns / 1_000_000_000;
    let mut full = (now_s & !0xffff_ffff) | u64::from(s);
    if full > now_s {
        full = full.wrapping_sub(1 << 32);
    }
    full.wrapping_mul(1_000_000_000).wrapping_add(u64::from(ns))
}

/// A key's 10 words as a flow.
fn key(w: &[u32]) -> Result<FlowKey, MonitorError> {
    let family = w[0] >> 8;
    let addr = |at: usize| address(family, w, at);
    Ok(FlowKey {
        src: addr(2)?,
        dst: addr(6)?,
        protocol: (w[0] & 0xff) as u8,
        src_port: (w[1] >> 16) as u16,
        dst_port: w[1] as u16,
    })
}

/// `programs/xpf/rtt.s` on an xPF engine.
pub struct XpfRtt {
    runner: XpfRunner,
    flow_capacity: usize,
    stats: HashMap<(FlowKey, Method), RttStats>,
    flows_full: u64,
    /// The program's clock: the packets' times, never back, a nanosecond
    /// per packet (as `XpfRunner` keeps it on every engine).
    next_ns: u64,
}

impl XpfRtt {
    /// The program on `engine` with the sizes and maximum age of `opts`.
    pub fn new(opts: &MeterOptions, engine: XpfEngine) -> Result<XpfRtt, MonitorError> {
        let syns = slots(opts.syn_capacity, XPF_MAX_SYNS, "SYN")?;
        let tsvals = slots(opts.ts_capacity, XPF_MAX_TSVALS, "TSval")?;
        let syn_base = LOG + LOG_RECORDS * RECORD;
        let ts_base = syn_base + SYN_SLOT * syns;
        let words = ts_base + TS_SLOT * tsvals;
        debug_assert!(words <= BLOCK);
        let text = programs::xpf("rtt").ok_or(MonitorError::XpfNotBuilt("rtt"))?;
        let prog = cbpf::xpf::assemble(text).map_err(|error| MonitorError::Assemble {
            file: "programs/xpf/rtt.s",
            error,
        })?;
        let xpf = XpfOptions {
            words,
            blocks: 1,
            // No loop: the budget is never checked.
            budget: 4096,
        };
        let mut runner = XpfRunner::new(&prog, xpf, engine, Form::Socket)?;
        let age_s = (opts.max_age_ns / 1_000_000_000).min(u64::from(u32::MAX)) as u32;
        let age_ns = if opts.max_age_ns / 1_000_000_000 > u64::from(u32::MAX) {
            999_999_999
        } else {
            (opts.max_age_ns % 1_000_000_000) as u32
        };
        let mem = runner.memory();
        let block = mem.active();
        mem.mwrite(
            block,
            W_MAX_AGE,
            &[age_s, age_ns, syns - 1, tsvals - 1, LOG_RECORDS],
        )
        .and_then(|()| mem.mwrite(block, W_BASES, &[syn_base, ts_base, LOG]))?;
        Ok(XpfRtt {
            runner,
            flow_capacity: opts.flow_capacity,
            stats: HashMap::new(),
            flows_full: 0,
            next_ns: 0,
        })
    }

    /// Runs one frame seen at `ts_ns`; its samples go to `out`.
    pub fn packet(
        &mut self,
        frame: &[u8],
        ts_ns: u64,
        out: &mut Vec<RttSample>,
    ) -> Result<(), MonitorError> {
        self.runner.packet(frame, frame.len() as u32, ts_ns)?;
        let now = ts_ns.max(self.next_ns);
        self.next_ns = now.wrapping_add(1);
        let words = take_log(&mut self.runner, W_PENDING, LOG, LOG_RECORDS, RECORD)?;
        for r in words.chunks_exact(RECORD as usize) {
            let method = u8::try_from(r[0])
                .ok()
                .and_then(Method::from_code)
                .ok_or_else(|| MonitorError::record(format!("an RTT record of method {}", r[0])))?;
            if [r[13], r[14]] != [(now / 1_000_000_000) as u32, (now % 1_000_000_000) as u32] {
                return Err(MonitorError::record(format!(
                    "the program's clock read {}.{:09}, user space's is {now} ns",
                    r[13], r[14]
                )));
            }
            let then = join(r[11], r[12], now);
            let sample = RttSample {
                key: key(&r[1..11])?,
                method,
                rtt_ns: now - then,
                time_ns: now,
            };
            let k = (sample.key, method);
            if let Some(st) = self.stats.get_mut(&k) {
                st.add(sample.rtt_ns);
            } else if self.stats.len() < self.flow_capacity {
                self.stats.entry(k).or_default().add(sample.rtt_ns);
            } else {
                self.flows_full += 1;
            }
            out.push(sample);
        }
        Ok(())
    }

    /// Nothing to do: a slot older than the maximum age is free already.
    pub fn sweep(&mut self, _now: u64) {}

    /// The statistics per flow and method.
    pub fn stats(&self) -> BTreeMap<(FlowKey, Method), RttStats> {
        self.stats.iter().map(|(k, v)| (*k, *v)).collect()
    }

    pub fn counters(&mut self) -> Result<RttCounters, MonitorError> {
        let w = read(&mut self.runner, 0, W_TS_FULL as usize + 1)?;
        let c = |at: u32| u64::from(w[at as usize]);
        Ok(RttCounters {
            syn_full: c(W_SYN_FULL),
            ts_full: c(W_TS_FULL),
            flows_full: self.flows_full,
            lost: c(W_LOST),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_and_the_largest_fit_a_block() {
        assert_eq!(slots(1, 512, "SYN").unwrap(), 8);
        assert_eq!(slots(300, 512, "SYN").unwrap(), 512);
        let why = slots(513, 512, "SYN").unwrap_err().to_string();
        assert!(why.contains("1 to 512"), "{why}");
        assert!(slots(0, 512, "SYN").is_err());
        let words = LOG
            + LOG_RECORDS * RECORD
            + SYN_SLOT * XPF_MAX_SYNS as u32
            + TS_SLOT * XPF_MAX_TSVALS as u32;
        assert!(words <= BLOCK, "{words}");
        assert_eq!(join(5, 7, 6_000_000_000), 5_000_000_007);
    }
}
