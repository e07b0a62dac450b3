//! The xPF version of trajectory sampling, `programs/xpf/sample.s`, on any
//! of [`xpf::XpfRunner`]'s engines. Its records reach user space
//! through a log in persistent memory (the convention the xPF
//! applications share): a word counts the records pending, the records
//! follow in the log area; the program appends while there is room, else
//! counts a lost record; after each packet user space reads the pending
//! records and writes 0 back. `A`, `B`, the table's size and the log's
//! place are words user space writes before the first packet. The memory
//! map is in the program's header comment.

use cbpf::xpf::{Form, XpfOptions};
use xpf::{XpfEngine, XpfRunner};

use crate::error::MonitorError;
use crate::key::FlowKey;
use crate::sample::{LabelFlow, Sample, SampleCounts, SampleRecord, table_slots};
use crate::xpf_words::{address, read, take_log};

/// The program's source.
pub const SAMPLE_XPF: &str = include_str!("../../../programs/xpf/sample.s");

/// Words of the header (parameters and counters); the table follows.
const TABLE: u32 = 16;
/// Words of a log record.
const RECORD: u32 = 12;
/// Records the log holds (a packet appends at most two).
const LOG_RECORDS: u32 = 4;
/// The largest label table (its slots and the log fit a block of 65,536
/// words).
pub const XPF_MAX_TABLE: usize = 32_768;

// Header words.
const W_A: u32 = 0;
const W_PENDING: u32 = 5;

/// `programs/xpf/sample.s` on an xPF engine.
pub struct XpfSampler {
    runner: XpfRunner,
    log: u32,
}

fn u16s(w: u32) -> (u16, u16) {
    ((w >> 16) as u16, w as u16)
}

/// A log record's words.
fn record(w: &[u32]) -> Result<SampleRecord, MonitorError> {
    match w[0] {
        1 => Ok(SampleRecord::Sample(Sample {
            label: w[1],
            hash: w[2],
            time_ns: u64::from(w[3]) * 1_000_000_000 + u64::from(w[4]),
        })),
        2 => {
            let (family, protocol) = ((w[2] >> 8) as u8, w[2] as u8);
            let addr = |at: usize| address(u32::from(family), w, at);
            let (src_port, dst_port) = u16s(w[3]);
            Ok(SampleRecord::Flow(LabelFlow {
                label: w[1],
                flow: FlowKey {
                    src: addr(4)?,
                    dst: addr(8)?,
                    protocol,
                    src_port,
                    dst_port,
                },
            }))
        }
        k => Err(MonitorError::record(format!("a log record of kind {k}"))),
    }
}

impl XpfSampler {
    /// The program on `engine`, sampling `b` of `a`, its label table of
    /// [`table_slots`]`(size)` slots.
    pub fn new(a: u32, b: u32, size: usize, engine: XpfEngine) -> Result<XpfSampler, MonitorError> {
        let slots = table_slots(size);
        if slots > XPF_MAX_TABLE {
            return Err(MonitorError::Options(format!(
                "a label table of {size}: the xPF program holds at most {XPF_MAX_TABLE} slots"
            )));
        }
        let slots = slots as u32;
        let log = TABLE + slots;
        let words = log + LOG_RECORDS * RECORD;
        let prog = cbpf::xpf::assemble(SAMPLE_XPF).map_err(|error| MonitorError::Assemble {
            file: "sample.s",
            error,
        })?;
        let opts = XpfOptions {
            words,
            blocks: 1,
            // No loop: the budget is never checked.
            budget: 4096,
        };
        let mut runner = XpfRunner::new(&prog, opts, engine, Form::Socket)?;
        let mem = runner.memory();
        let active = mem.active();
        mem.mwrite(active, W_A, &[a, b, 0, slots - 1, LOG_RECORDS])?;
        mem.mwrite(active, 13, &[log])?;
        Ok(XpfSampler { runner, log })
    }

    /// Runs one packet seen at `time_ns`; its records go to `out`.
    pub fn packet(
        &mut self,
        frame: &[u8],
        time_ns: u64,
        out: &mut Vec<SampleRecord>,
    ) -> Result<(), MonitorError> {
        self.runner.packet(frame, frame.len() as u32, time_ns)?;
        let words = take_log(&mut self.runner, W_PENDING, self.log, LOG_RECORDS, RECORD)?;
        for r in words.chunks_exact(RECORD as usize) {
            out.push(record(r)?);
        }
        Ok(())
    }

    /// The program's counters.
    pub fn counts(&mut self) -> Result<SampleCounts, MonitorError> {
        let w = read(&mut self.runner, 0, TABLE as usize)?;
        Ok(SampleCounts {
            hashed: u64::from(w[7]),
            sampled: u64::from(w[8]),
            flows: u64::from(w[9]),
            full: u64::from(w[10]),
            lost: u64::from(w[6]),
        })
    }
}
