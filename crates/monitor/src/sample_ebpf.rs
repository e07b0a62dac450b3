//! The eBPF version of trajectory sampling, `programs/sample.c`, in
//! sluice's VM (each packet runs the program; its clock follows the
//! packets' times): the records it sends arrive through its ring buffer.
//! The record parser and the image are shared with the live runner.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use runtime::{Hook, Image, LoadOptions, PacketMeta};

use crate::ebpf::per_cpu_sum;
use crate::error::MonitorError;
use crate::key::FlowKey;
use crate::sample::{LabelFlow, Sample, SampleCounts, SampleRecord, table_slots};

/// `struct sample_record` and `struct flow_record`.
const SAMPLE: usize = 24;
const FLOW: usize = 48;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A record from the ring buffer.
pub(crate) fn record(r: &[u8]) -> Result<SampleRecord, MonitorError> {
    let short = || MonitorError::record(format!("a sampling record of {} bytes", r.len()));
    if r.len() < 8 {
        return Err(short());
    }
    let (kind, label) = (u32_at(r, 0), u32_at(r, 4));
    match kind {
        1 if r.len() >= SAMPLE => Ok(SampleRecord::Sample(Sample {
            label,
            hash: u32_at(r, 8),
            time_ns: u64::from_ne_bytes(r[16..24].try_into().expect("8 bytes")),
        })),
        2 if r.len() >= FLOW => {
            let addr = |at: usize| -> Result<IpAddr, MonitorError> {
                Ok(match r[45] {
                    4 => IpAddr::V4(Ipv4Addr::new(r[at], r[at + 1], r[at + 2], r[at + 3])),
                    6 => {
                        let b: [u8; 16] = r[at..at + 16].try_into().expect("16 bytes");
                        IpAddr::V6(Ipv6Addr::from(b))
                    }
                    f => {
                        return Err(MonitorError::record(format!(
                            "a flow record of address family {f}"
                        )));
                    }
                })
            };
            Ok(SampleRecord::Flow(LabelFlow {
                label,
                flow: FlowKey {
                    src: addr(8)?,
                    dst: addr(24)?,
                    src_port: u16::from_ne_bytes([r[40], r[41]]),
                    dst_port: u16::from_ne_bytes([r[42], r[43]]),
                    protocol: r[44],
                },
            }))
        }
        1 | 2 => Err(short()),
        k => Err(MonitorError::record(format!(
            "a sampling record of kind {k}"
        ))),
    }
}

/// The program's object with `A`, `B` and the label table's size set.
pub(crate) fn image(a: u32, b: u32, size: usize) -> Result<Image, MonitorError> {
    let bytes = programs::object("sample").ok_or(MonitorError::NotBuilt("sample"))?;
    let object = obj::Object::parse(bytes)?;
    let slots = map_size(size)?;
    let load = LoadOptions {
        map_sizes: [("labels".to_string(), slots)].into(),
        globals: vec![
            ("sample_a".into(), i128::from(a)),
            ("sample_b".into(), i128::from(b)),
            ("label_mask".into(), i128::from(slots - 1)),
        ],
        ..LoadOptions::default()
    };
    Ok(Image::load(object, &load)?)
}

/// The label table's slots (a power of two, at most 2^24).
pub(crate) fn map_size(size: usize) -> Result<u32, MonitorError> {
    let slots = table_slots(size);
    if slots > 1 << 24 {
        return Err(MonitorError::Options(format!(
            "a label table of {size}: at most {} slots",
            1 << 24
        )));
    }
    Ok(slots as u32)
}

/// The counters in `sample_stats`, by index.
pub(crate) fn counts(stat: impl Fn(u32) -> u64) -> SampleCounts {
    SampleCounts {
        hashed: stat(0),
        sampled: stat(1),
        flows: stat(2),
        full: stat(3),
        lost: stat(4),
    }
}

/// `programs/sample.c` on sluice's VM.
pub struct EbpfSampler {
    hook: Hook,
    samples: usize,
    stats: usize,
}

impl EbpfSampler {
    /// The program sampling `b` of `a`, its label table of
    /// [`table_slots`]`(size)` slots.
    pub fn new(a: u32, b: u32, size: usize) -> Result<EbpfSampler, MonitorError> {
        let hook = Hook::new(image(a, b, size)?, 0, 0)?;
        let index = |name: &str| {
            hook.maps()
                .iter()
                .position(|m| m.name() == name)
                .ok_or_else(|| MonitorError::NoMap {
                    program: "sample".into(),
                    map: name.into(),
                })
        };
        Ok(EbpfSampler {
            samples: index("samples")?,
            stats: index("sample_stats")?,
            hook,
        })
    }

    /// Runs one packet seen at `time_ns`; its records go to `out`.
    pub fn packet(
        &mut self,
        frame: &[u8],
        time_ns: u64,
        out: &mut Vec<SampleRecord>,
    ) -> Result<(), MonitorError> {
        let meta = PacketMeta {
            timestamp_ns: time_ns,
            ..PacketMeta::default()
        };
        self.hook.run(frame, &meta)?;
        let records = match self.hook.maps()[self.samples].ringbuf() {
            Some(mut rb) => rb.consume(),
            None => return Err(MonitorError::NoRingBuffer("the samples map")),
        };
        for r in records {
            out.push(record(&r)?);
        }
        Ok(())
    }

    pub fn counts(&self) -> SampleCounts {
        counts(|i| {
            self.hook.maps()[self.stats]
                .user_lookup(&i.to_ne_bytes())
                .map_or(0, |v| per_cpu_sum(&v))
        })
    }
}
