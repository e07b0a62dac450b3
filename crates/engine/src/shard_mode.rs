//! [`ShardMode`]: how a run's worker threads share its packets, as
//! `sluice run --shard` names it: by byte ranges of the capture where the
//! program's result does not depend on the order of packets across flows
//! (`auto`, the default, decides by the rule of order_free.rs; `ranges`
//! asks for them), or by flow ([`Sharding`]).

use pipeline::Sharding;
use serde::{Deserialize, Serialize};

/// How worker threads share a run's packets.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ShardMode {
    /// Byte ranges when the program qualifies and the source is a capture
    /// file that can be cut (no limit); else flows, symmetric.
    #[default]
    Auto,
    /// Byte ranges of the capture, each record read once; refused for a
    /// program whose result may depend on the order of packets.
    Ranges,
    /// By flow: every packet of a flow on one worker.
    Flows(Sharding),
}

/// A `--shard` value not known.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown sharding `{0}` (auto, ranges, symmetric, directional or round-robin)")]
pub struct UnknownShardMode(pub String);

impl ShardMode {
    /// `auto`, `ranges`, `symmetric`, `directional`, `round-robin`.
    pub fn name(self) -> &'static str {
        match self {
            ShardMode::Auto => "auto",
            ShardMode::Ranges => "ranges",
            ShardMode::Flows(s) => crate::bucket::shard_name(s),
        }
    }
}

impl std::fmt::Display for ShardMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ShardMode {
    type Err = UnknownShardMode;
    fn from_str(s: &str) -> Result<ShardMode, UnknownShardMode> {
        match s {
            "auto" => Ok(ShardMode::Auto),
            "ranges" => Ok(ShardMode::Ranges),
            _ => s
                .parse()
                .map(ShardMode::Flows)
                .map_err(|_| UnknownShardMode(s.to_string())),
        }
    }
}

impl Serialize for ShardMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for ShardMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ShardMode, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_reads_back_from_its_name() {
        for m in [
            ShardMode::Auto,
            ShardMode::Ranges,
            ShardMode::Flows(Sharding::Symmetric),
            ShardMode::Flows(Sharding::Directional),
            ShardMode::Flows(Sharding::RoundRobin),
        ] {
            assert_eq!(m.name().parse::<ShardMode>().unwrap(), m);
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<ShardMode>(&json).unwrap(), m);
        }
        let e = "rangez".parse::<ShardMode>().unwrap_err();
        assert!(e.to_string().contains("unknown sharding `rangez`"), "{e}");
    }
}
