//! The eBPF version of flow accounting, `programs/flows.c`, in sluice's
//! VM: each packet runs the program (its clock follows the packets'
//! times); the flows it ends arrive as ring-buffer records; at the end,
//! user space ends what is left in its map, idle (no packet for the idle
//! timeout before the last packet's time) or forced, as the flow table
//! does. A full map cannot make room in the filter: the program sends the
//! packet as a one-packet record "lack of resources" and counts it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use runtime::{Hook, Image, LoadOptions, PacketMeta};

use crate::error::MonitorError;
use crate::key::FlowKey;
use crate::table::{EndReason, Ended, FlowEntry, TableOptions};

/// `struct flow_key`, `struct flow_value` and `struct flow_record`.
const KEY: usize = 40;
const VALUE: usize = 40;
const RECORD: usize = KEY + VALUE + 8;

/// `programs/flows.c` on sluice's VM.
pub struct EbpfFlows {
    hook: Hook,
    flows: usize,
    ended: usize,
    stats: usize,
    idle_ns: u64,
    /// The latest packet time.
    now_ns: u64,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

/// A flow from the map's key and value bytes.
pub(crate) fn entry(k: &[u8], v: &[u8]) -> Result<FlowEntry, MonitorError> {
    if k.len() < KEY || v.len() < VALUE {
        return Err(MonitorError::record("a flow record of the wrong size"));
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
                    "a flow of address family {f}"
                )));
            }
        })
    };
    Ok(FlowEntry {
        key: FlowKey {
            src: addr(0)?,
            dst: addr(16)?,
            protocol: k[36],
            src_port: u16_at(k, 32),
            dst_port: u16_at(k, 34),
        },
        packets: u64_at(v, 0),
        bytes: u64_at(v, 8),
        first_ns: u64_at(v, 16),
        last_ns: u64_at(v, 24),
        tcp_flags: v[32],
    })
}

/// A `struct flow_record` from the ring buffer.
pub(crate) fn record(r: &[u8]) -> Result<Ended, MonitorError> {
    if r.len() < RECORD {
        return Err(MonitorError::record(format!(
            "a ring-buffer record of {} bytes",
            r.len()
        )));
    }
    let code = u32::from_ne_bytes(r[KEY + VALUE..KEY + VALUE + 4].try_into().expect("4"));
    Ok(Ended {
        flow: entry(&r[..KEY], &r[KEY..KEY + VALUE])?,
        reason: reason(code)?,
    })
}

/// The sum of a per-CPU counter's values.
pub(crate) fn per_cpu_sum(v: &[u8]) -> u64 {
    v.chunks_exact(8).map(|c| u64_at(c, 0)).sum()
}

fn reason(code: u32) -> Result<EndReason, MonitorError> {
    Ok(match code {
        1 => EndReason::IdleTimeout,
        2 => EndReason::ActiveTimeout,
        3 => EndReason::EndOfFlow,
        4 => EndReason::ForcedEnd,
        5 => EndReason::LackOfResources,
        n => {
            return Err(MonitorError::record(format!(
                "a flow record with end reason {n}"
            )));
        }
    })
}

/// The program's object, its map sizes and timeouts set from `opts`.
pub(crate) fn image(opts: &TableOptions) -> Result<Image, MonitorError> {
    let bytes = programs::object("flows").ok_or(MonitorError::NotBuilt("flows"))?;
    let object = obj::Object::parse(bytes)?;
    let capacity = u32::try_from(opts.capacity).unwrap_or(u32::MAX);
    let load = LoadOptions {
        map_sizes: [("flows".to_string(), capacity)].into(),
        globals: vec![
            ("idle_timeout_ns".into(), i128::from(opts.idle_timeout_ns)),
            (
                "active_timeout_ns".into(),
                i128::from(opts.active_timeout_ns),
            ),
        ],
        ..LoadOptions::default()
    };
    Ok(Image::load(object, &load)?)
}

impl EbpfFlows {
    /// The program with the table's size and timeouts.
    pub fn new(opts: &TableOptions) -> Result<EbpfFlows, MonitorError> {
        let image = image(opts)?;
        let hook = Hook::new(image, 0, 0)?;
        let index = |name: &str| {
            hook.maps()
                .iter()
                .position(|m| m.name() == name)
                .ok_or_else(|| MonitorError::NoMap {
                    program: "flows".into(),
                    map: name.into(),
                })
        };
        Ok(EbpfFlows {
            flows: index("flows")?,
            ended: index("ended")?,
            stats: index("flow_stats")?,
            idle_ns: opts.idle_timeout_ns,
            now_ns: 0,
            hook,
        })
    }

    /// Runs one packet seen at `ts_ns`; the flows it ended go to `out`.
    pub fn account(
        &mut self,
        frame: &[u8],
        ts_ns: u64,
        out: &mut Vec<Ended>,
    ) -> Result<(), MonitorError> {
        let meta = PacketMeta {
            timestamp_ns: ts_ns,
            ..PacketMeta::default()
        };
        self.hook.run(frame, &meta)?;
        self.now_ns = self.now_ns.max(ts_ns);
        self.drain(out)
    }

    /// The records the program sent.
    fn drain(&mut self, out: &mut Vec<Ended>) -> Result<(), MonitorError> {
        let records = match self.hook.maps()[self.ended].ringbuf() {
            Some(mut rb) => rb.consume(),
            None => return Err(MonitorError::NoRingBuffer("the ended map")),
        };
        for r in records {
            out.push(record(&r)?);
        }
        Ok(())
    }

    /// Ends every flow left in the map (the input ended): idle if no
    /// packet came for the idle timeout before the latest packet, else
    /// forced.
    pub fn flush(&mut self, out: &mut Vec<Ended>) -> Result<(), MonitorError> {
        self.drain(out)?;
        let map = &self.hook.maps()[self.flows];
        let mut left = Vec::new();
        for (k, v) in map.entries() {
            let flow = entry(&k, &v)?;
            let reason = if self.now_ns.saturating_sub(flow.last_ns) >= self.idle_ns {
                EndReason::IdleTimeout
            } else {
                EndReason::ForcedEnd
            };
            left.push(Ended { flow, reason });
            map.delete(&k).map_err(MonitorError::map)?;
        }
        // In the order the table ends them: the least recently seen first.
        left.sort_by_key(|e| (e.flow.last_ns, e.flow.key));
        out.extend(left);
        Ok(())
    }

    /// Flows in the map now.
    pub fn held(&self) -> u64 {
        self.hook.maps()[self.flows].len() as u64
    }

    /// Packets a full map could not account (each sent as its own record).
    pub fn lacked(&self) -> u64 {
        self.stat(0)
    }

    /// Records lost to a full ring buffer.
    pub fn lost(&self) -> u64 {
        self.stat(1)
    }

    fn stat(&self, i: u32) -> u64 {
        self.hook.maps()[self.stats]
            .user_lookup(&i.to_ne_bytes())
            .map_or(0, |v| per_cpu_sum(&v))
    }
}
