//! The xPF version of passive RTT, `programs/xpf/rtt.s` (to come).

use std::collections::BTreeMap;

use crate::key::FlowKey;
use crate::rtt::{MeterOptions, Method, RttCounters, RttSample, RttStats};

/// `programs/xpf/rtt.s` on an xPF engine.
pub struct XpfRtt {
    counters: RttCounters,
    stats: BTreeMap<(FlowKey, Method), RttStats>,
}

impl XpfRtt {
    pub fn new(_opts: &MeterOptions, _engine: pipeline::XpfEngine) -> Result<XpfRtt, String> {
        Err("the xPF version of rtt is not written yet".into())
    }

    pub fn packet(
        &mut self,
        _frame: &[u8],
        _ts_ns: u64,
        _out: &mut Vec<RttSample>,
    ) -> Result<(), String> {
        Ok(())
    }

    pub fn sweep(&mut self, _now: u64) -> Result<(), String> {
        Ok(())
    }

    pub fn stats(&self) -> BTreeMap<(FlowKey, Method), RttStats> {
        self.stats.clone()
    }

    pub fn counters(&self) -> RttCounters {
        self.counters
    }
}
