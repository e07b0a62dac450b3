//! In-filter monitoring, the xPF paper's applications as products: flow
//! accounting ([`FlowTable`] over the [`Observed`] facts of each frame),
//! trajectory sampling ([`Sampler`], [`sample_trajectories`]), passive RTT
//! ([`RttMeter`], [`measure_rtt`]; issue 17).
//!
//! A frame is read once into an [`Observed`]: its 5-tuple ([`FlowKey`]),
//! its IP length, its TCP flags. The table keeps one [`FlowEntry`] per key
//! and ends flows as NetFlow/IPFIX meters do: idle and active timeouts, a
//! TCP FIN or RST, the end of the input, and, when full, the least recently
//! seen flow evicted: every ended flow comes out as an [`Ended`] with its
//! [`EndReason`], none silently.
//!
//! One byte range of a capture is accounted on its own
//! ([`account_range`]: each key's head raw, the flows after it ended) and
//! ranges are joined into one read's result ([`FlowsJoin`]).
//!
//! Over a pipeline source, every application runs in one driver (the
//! pipeline's observing loop: limit, progress, batches handed out, the
//! metrics' gauges); errors are [`MonitorError`]s, whose messages are the
//! command line's.
//!
//! ```
//! use monitor::{FlowTable, TableOptions, observe};
//! let mut frame = vec![0u8; 14 + 20 + 8];
//! frame[12..14].copy_from_slice(&[0x08, 0x00]);
//! frame[14] = 0x45; // IPv4, 20-byte header
//! frame[16..18].copy_from_slice(&28u16.to_be_bytes()); // total length
//! frame[23] = 17; // UDP
//! frame[34..36].copy_from_slice(&5353u16.to_be_bytes());
//! let o = observe(&frame).unwrap();
//! assert_eq!((o.key.protocol, o.key.src_port, o.bytes), (17, 5353, 28));
//! let mut table = FlowTable::new(TableOptions::default());
//! let mut ended = Vec::new();
//! table.account(&o, 1_000, &mut ended);
//! table.account(&o, 2_000, &mut ended);
//! table.flush(&mut ended);
//! assert_eq!((ended.len(), ended[0].flow.packets, ended[0].flow.bytes), (1, 2, 56));
//! ```

mod attach;
mod drive;
mod ebpf;
mod error;
mod flows_join;
mod flows_range;
mod key;
mod live;
mod metrics;
mod metrics_http;
mod order;
mod rtt;
mod rtt_ebpf;
mod rtt_live;
mod rtt_pping;
mod rtt_run;
mod rtt_xpf;
mod run;
mod sample;
mod sample_ebpf;
mod sample_live;
mod sample_run;
mod sample_xpf;
mod table;
mod xpf;
mod xpf_words;

pub use ebpf::EbpfFlows;
pub use error::MonitorError;
pub use flows_join::{FlowsJoin, Joined};
pub use flows_range::{
    EndOrder, FlowsRange, HeadEnd, HeadPacket, KeyPart, PartEnded, account_range,
};
pub use key::{FlowKey, Observed, observe};
pub use live::{LiveSummary, live_flows};
pub use metrics::Metrics;
pub use metrics_http::{MetricsError, MetricsServer};
pub use order::TimeOrder;
pub use rtt::{
    BUCKETS, MeterOptions, Method, RttCounters, RttMeter, RttSample, RttStats, Segment, bucket,
    reverse, segment,
};
pub use rtt_ebpf::EbpfRtt;
pub use rtt_live::live_rtt;
pub use rtt_pping::{Pping, PpingRun, PpingSample, pping_delay, pping_samples};
pub use rtt_run::{RttEngine, RttOptions, RttSummary, measure_rtt};
pub use rtt_xpf::{XPF_MAX_SYNS, XPF_MAX_TSVALS, XpfRtt};
pub use run::{FlowEngine, FlowRunOptions, FlowSummary, account_flows};
pub use sample::{
    Invariant, LabelFlow, PROBES, Sample, SampleCounts, SampleRecord, Sampler, hash_finish,
    hash_step, hash_words, invariants, sampled, table_slots,
};
pub use sample_ebpf::EbpfSampler;
pub use sample_live::live_sample;
pub use sample_run::{SampleEngine, SampleOptions, SampleSummary, parse_rate, sample_trajectories};
pub use sample_xpf::{SAMPLE_XPF, XPF_MAX_TABLE, XpfSampler};
pub use table::{EndReason, Ended, FlowEntry, FlowTable, TableOptions};
pub use xpf::{XPF_MAX_FLOWS, XpfFlows};
