//! The xPF version of flow accounting, `programs/xpf/flows.s`, on any
//! engine of `xpf::XpfRunner` (the xPF interpreter, or the eBPF
//! translation in sluice's VM or JIT). The program keeps the flows in an
//! open-addressing table in its persistent memory and writes the flows it
//! ends to a log there; user space sets the timeouts and sizes in memory
//! words before the first packet, empties the log after each packet, and
//! at the end ends what is left in the table (idle or forced), as for the
//! eBPF version. The memory layout is the program's header comment.

use cbpf::xpf::{Form, XpfOptions};
use xpf::{XpfEngine, XpfRunner};

use crate::error::MonitorError;
use crate::key::FlowKey;
use crate::table::{EndReason, Ended, FlowEntry, TableOptions};
use crate::xpf_words::{address, read, take_log, write};

/// Words of a slot (and of a log record).
const SLOT: u32 = 20;
/// Where the log and the table start; records the log holds.
const LOG: u32 = 32;
const LOG_RECORDS: u32 = 4;
const TABLE: u32 = LOG + LOG_RECORDS * SLOT;
/// The header words user space reads.
const HELD: u32 = 6;
const LACKED: u32 = 7;
const LOST: u32 = 8;
const PENDING: u32 = 9;
const OVER_BUDGET: u32 = 10;

/// The most flows the xPF table holds: its slots fill one block.
pub const XPF_MAX_FLOWS: usize = 2048;

/// `programs/xpf/flows.s` on an xPF engine.
pub struct XpfFlows {
    runner: XpfRunner,
    slots: u32,
    idle_ns: u64,
    /// The latest packet time.
    now_ns: u64,
    /// The program's clock after the latest packet (it moves a
    /// nanosecond per packet besides following the packets).
    clock_ns: u64,
}

fn split(ns: u64) -> [u32; 2] {
    [(ns / 1_000_000_000) as u32, (ns % 1_000_000_000) as u32]
}

/// The time of `s` seconds (the low 32 bits: xPF's words wrap in 2106)
/// and `ns`, taken as the latest such time not after `now_ns` (the
/// program's timeouts compare seconds modulo 2^32 too).
fn join(s: u32, ns: u32, now_ns: u64) -> u64 {
    let now_s = now_ns / 1_000_000_000;
    let mut full = (now_s & !0xffff_ffff) | u64::from(s);
    if full > now_s {
        full = full.wrapping_sub(1 << 32);
    }
    full.wrapping_mul(1_000_000_000).wrapping_add(u64::from(ns))
}

/// A slot's (or a record's) words 1 to 19 as a flow; its times are the
/// latest not after `now_ns`.
fn entry(w: &[u32], now_ns: u64) -> Result<FlowEntry, MonitorError> {
    let family = (w[10] >> 8) & 0xff;
    let addr = |at: usize| address(family, w, at);
    Ok(FlowEntry {
        key: FlowKey {
            src: addr(1)?,
            dst: addr(5)?,
            protocol: (w[10] & 0xff) as u8,
            src_port: (w[9] >> 16) as u16,
            dst_port: w[9] as u16,
        },
        packets: u64::from(w[11]) | u64::from(w[12]) << 32,
        bytes: u64::from(w[13]) | u64::from(w[14]) << 32,
        first_ns: join(w[15], w[16], now_ns),
        last_ns: join(w[17], w[18], now_ns),
        tcp_flags: w[19] as u8,
    })
}

fn reason(code: u32) -> Result<EndReason, MonitorError> {
    Ok(match code {
        1 => EndReason::IdleTimeout,
        2 => EndReason::ActiveTimeout,
        3 => EndReason::EndOfFlow,
        5 => EndReason::LackOfResources,
        n => {
            return Err(MonitorError::record(format!(
                "an xPF flow record with end reason {n}"
            )));
        }
    })
}

impl XpfFlows {
    /// The program on `engine`, its table sized for `opts.capacity` flows
    /// (at most [`XPF_MAX_FLOWS`]) and its timeouts set.
    pub fn new(opts: &TableOptions, engine: XpfEngine) -> Result<XpfFlows, MonitorError> {
        if opts.capacity == 0 || opts.capacity > XPF_MAX_FLOWS {
            return Err(MonitorError::Options(format!(
                "a capacity of {} flows: the xPF table holds 1 to {XPF_MAX_FLOWS} (one block of memory)",
                opts.capacity
            )));
        }
        let text = programs::xpf("flows").ok_or(MonitorError::XpfNotBuilt("flows"))?;
        let prog = cbpf::xpf::assemble(text).map_err(|error| MonitorError::Assemble {
            file: "programs/xpf/flows.s",
            error,
        })?;
        let slots = (opts.capacity as u32).next_power_of_two().max(16);
        // A packet probes at most every slot (about 60 instructions each),
        // and copies at most two records and a fresh slot.
        let xpf = XpfOptions {
            words: TABLE + SLOT * slots,
            blocks: 1,
            budget: 4_000 + 64 * slots,
        };
        let mut runner = XpfRunner::new(&prog, xpf, engine, Form::Socket)?;
        let [idle_s, idle_ns] = split(opts.idle_timeout_ns);
        let [active_s, active_ns] = split(opts.active_timeout_ns);
        let mem = runner.memory();
        let block = mem.active();
        mem.mwrite(
            block,
            0,
            &[
                idle_s,
                idle_ns,
                active_s,
                active_ns,
                slots - 1,
                opts.capacity as u32,
            ],
        )?;
        Ok(XpfFlows {
            runner,
            slots,
            idle_ns: opts.idle_timeout_ns,
            now_ns: 0,
            clock_ns: 0,
        })
    }

    fn word(&mut self, at: u32) -> Result<u32, MonitorError> {
        Ok(read(&mut self.runner, at, 1)?[0])
    }

    /// Runs one packet seen at `ts_ns`; the flows it ended go to `out`.
    pub fn account(
        &mut self,
        frame: &[u8],
        ts_ns: u64,
        out: &mut Vec<Ended>,
    ) -> Result<(), MonitorError> {
        self.runner.packet(frame, frame.len() as u32, ts_ns)?;
        self.now_ns = self.now_ns.max(ts_ns);
        // The program's clock, as `XpfRunner` keeps it: the packets'
        // times, never back, a nanosecond per reading.
        self.clock_ns = self.clock_ns.max(ts_ns) + 1;
        let words = take_log(&mut self.runner, PENDING, LOG, LOG_RECORDS, SLOT)?;
        for r in words.chunks_exact(SLOT as usize) {
            out.push(Ended {
                flow: entry(r, self.clock_ns)?,
                reason: reason(r[0])?,
            });
        }
        Ok(())
    }

    /// Ends every flow left in the table (the input ended): idle if no
    /// packet came for the idle timeout before the latest packet, else
    /// forced.
    pub fn flush(&mut self, out: &mut Vec<Ended>) -> Result<(), MonitorError> {
        let table = read(&mut self.runner, TABLE, (self.slots * SLOT) as usize)?;
        let mut left = Vec::new();
        for slot in table.chunks_exact(SLOT as usize).filter(|s| s[0] == 1) {
            let flow = entry(slot, self.clock_ns)?;
            let reason = if self.now_ns.saturating_sub(flow.last_ns) >= self.idle_ns {
                EndReason::IdleTimeout
            } else {
                EndReason::ForcedEnd
            };
            left.push(Ended { flow, reason });
        }
        left.sort_by_key(|e| (e.flow.last_ns, e.flow.key));
        out.extend(left);
        write(&mut self.runner, TABLE, &vec![0; table.len()])?;
        write(&mut self.runner, HELD, &[0])
    }

    /// Flows in the table now.
    pub fn held(&mut self) -> Result<u64, MonitorError> {
        self.word(HELD).map(u64::from)
    }

    /// Packets a full table could not account (each sent as a record).
    pub fn lacked(&mut self) -> Result<u64, MonitorError> {
        self.word(LACKED).map(u64::from)
    }

    /// Records lost to a full log, and packets that ran over the budget
    /// (neither happens when the log is emptied after every packet and the
    /// budget covers a probe of every slot).
    pub fn lost(&mut self) -> Result<u64, MonitorError> {
        Ok(u64::from(self.word(LOST)?) + u64::from(self.word(OVER_BUDGET)?))
    }
}
