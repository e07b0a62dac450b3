//! The eBPF version of passive RTT, `programs/rtt.c`, in sluice's VM: each
//! packet runs the program (its clock is the packet's time); its samples
//! arrive as ring-buffer records; user space deletes the SYNs and TSvals
//! past the maximum age when the reference sweeps, and reads the per-flow
//! statistics from the program's map at the end.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use runtime::{Hook, Image, LoadOptions, PacketMeta};

use crate::error::MonitorError;
use crate::key::FlowKey;
use crate::rtt::{BUCKETS, MeterOptions, Method, RttCounters, RttSample, RttStats};

/// `struct rtt_key`, `struct rtt_stats`, `struct rtt_record`.
pub(crate) const KEY: usize = 40;
const STATS: usize = 32 + 4 * BUCKETS;
const RECORD: usize = KEY + 16;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The flow and method of a `struct rtt_key`.
pub(crate) fn key(k: &[u8]) -> Result<(FlowKey, u8), MonitorError> {
    if k.len() < KEY {
        return Err(MonitorError::record("an RTT key of the wrong size"));
    }
    let addr = |at: usize| -> Result<IpAddr, MonitorError> {
        Ok(match k[37] {
            4 => IpAddr::V4(Ipv4Addr::new(k[at], k[at + 1], k[at + 2], k[at + 3])),
            6 => {
                let b: [u8; 16] = k[at..at + 16].try_into().expect("16 bytes");
                IpAddr::V6(Ipv6Addr::from(b))
            }
            f => {
                return Err(MonitorError::record(format!(
                    "an RTT key of address family {f}"
                )));
            }
        })
    };
    let port = |at: usize| u16::from_ne_bytes([k[at], k[at + 1]]);
    Ok((
        FlowKey {
            src: addr(0)?,
            dst: addr(16)?,
            protocol: k[36],
            src_port: port(32),
            dst_port: port(34),
        },
        k[38],
    ))
}

fn method(code: u8) -> Result<Method, MonitorError> {
    Method::from_code(code)
        .ok_or_else(|| MonitorError::record(format!("an RTT record of method {code}")))
}

/// A `struct rtt_record` from the ring buffer.
pub(crate) fn record(r: &[u8]) -> Result<RttSample, MonitorError> {
    if r.len() < RECORD {
        return Err(MonitorError::record(format!(
            "an RTT record of {} bytes",
            r.len()
        )));
    }
    let (key, m) = key(r)?;
    Ok(RttSample {
        key,
        method: method(m)?,
        rtt_ns: u64_at(r, KEY),
        time_ns: u64_at(r, KEY + 8),
    })
}

/// A `struct rtt_stats` with its key.
pub(crate) fn stats(k: &[u8], v: &[u8]) -> Result<((FlowKey, Method), RttStats), MonitorError> {
    if v.len() < STATS {
        return Err(MonitorError::record("RTT statistics of the wrong size"));
    }
    let (key, m) = key(k)?;
    let mut hist = [0; BUCKETS];
    for (i, h) in hist.iter_mut().enumerate() {
        *h = u32_at(v, 32 + 4 * i);
    }
    Ok((
        (key, method(m)?),
        RttStats {
            count: u64_at(v, 0),
            sum_ns: u64_at(v, 8),
            min_ns: u64_at(v, 16),
            max_ns: u64_at(v, 24),
            hist,
        },
    ))
}

/// The time in a SYN (`struct syn_value`) or TSval (`struct ts_value`) entry.
pub(crate) fn entry_time(v: &[u8]) -> u64 {
    if v.len() >= 8 { u64_at(v, 0) } else { 0 }
}

/// The sum of a per-CPU counter's values.
pub(crate) fn per_cpu_sum(v: &[u8]) -> u64 {
    v.chunks_exact(8).map(|c| u64_at(c, 0)).sum()
}

/// The program's map names, in `rtt_counters` order of the tables.
pub(crate) const SYNS: &str = "rtt_syns";
pub(crate) const TSVALS: &str = "rtt_tsvals";
pub(crate) const FLOWS: &str = "rtt_flows";
pub(crate) const SAMPLES: &str = "rtt_samples";
pub(crate) const COUNTERS: &str = "rtt_counters";

/// The table sizes as `max_entries`.
pub(crate) fn sizes(opts: &MeterOptions) -> Vec<(String, u32)> {
    let cap = |n: usize| u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    vec![
        (SYNS.to_string(), cap(opts.syn_capacity)),
        (TSVALS.to_string(), cap(opts.ts_capacity)),
        (FLOWS.to_string(), cap(opts.flow_capacity)),
    ]
}

/// The program's object with the sizes and maximum age of `opts`.
pub(crate) fn image(opts: &MeterOptions) -> Result<Image, MonitorError> {
    let bytes = programs::object("rtt").ok_or(MonitorError::NotBuilt("rtt"))?;
    let object = obj::Object::parse(bytes)?;
    let load = LoadOptions {
        map_sizes: sizes(opts).into_iter().collect(),
        globals: vec![("max_age_ns".into(), i128::from(opts.max_age_ns))],
        ..LoadOptions::default()
    };
    Ok(Image::load(object, &load)?)
}

/// `programs/rtt.c` on sluice's VM.
pub struct EbpfRtt {
    hook: Hook,
    syns: usize,
    tsvals: usize,
    flows: usize,
    samples: usize,
    counters: usize,
    max_age_ns: u64,
}

impl EbpfRtt {
    pub fn new(opts: &MeterOptions) -> Result<EbpfRtt, MonitorError> {
        let hook = Hook::new(image(opts)?, 0, 0)?;
        let index = |name: &str| {
            hook.maps()
                .iter()
                .position(|m| m.name() == name)
                .ok_or_else(|| MonitorError::NoMap {
                    program: "rtt".into(),
                    map: name.into(),
                })
        };
        Ok(EbpfRtt {
            syns: index(SYNS)?,
            tsvals: index(TSVALS)?,
            flows: index(FLOWS)?,
            samples: index(SAMPLES)?,
            counters: index(COUNTERS)?,
            max_age_ns: opts.max_age_ns,
            hook,
        })
    }

    /// Runs one frame seen at `ts_ns`; its samples go to `out`.
    pub fn packet(
        &mut self,
        frame: &[u8],
        ts_ns: u64,
        out: &mut Vec<RttSample>,
    ) -> Result<(), MonitorError> {
        let meta = PacketMeta {
            timestamp_ns: ts_ns,
            ..PacketMeta::default()
        };
        self.hook.run(frame, &meta)?;
        let records = match self.hook.maps()[self.samples].ringbuf() {
            Some(mut rb) => rb.consume(),
            None => return Err(MonitorError::NoRingBuffer("rtt_samples")),
        };
        for r in records {
            out.push(record(&r)?);
        }
        Ok(())
    }

    /// Deletes the SYNs and TSvals past the maximum age at `now`.
    pub fn sweep(&mut self, now: u64) -> Result<(), MonitorError> {
        for m in [self.syns, self.tsvals] {
            let map = &self.hook.maps()[m];
            for (k, v) in map.entries() {
                if now.wrapping_sub(entry_time(&v)) > self.max_age_ns {
                    map.delete(&k).map_err(MonitorError::map)?;
                }
            }
        }
        Ok(())
    }

    /// The statistics per flow and method.
    pub fn stats(&self) -> Result<BTreeMap<(FlowKey, Method), RttStats>, MonitorError> {
        self.hook.maps()[self.flows]
            .entries()
            .iter()
            .map(|(k, v)| stats(k, v))
            .collect()
    }

    pub fn counters(&self) -> RttCounters {
        let c = |i: u32| {
            self.hook.maps()[self.counters]
                .user_lookup(&i.to_ne_bytes())
                .map_or(0, |v| per_cpu_sum(&v))
        };
        RttCounters {
            syn_full: c(0),
            ts_full: c(1),
            flows_full: c(2),
            lost: c(3),
        }
    }
}
