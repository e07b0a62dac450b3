//! [`SourceSpec`]: where a run's packets come from (a capture, generated
//! traffic, a live interface through AF_PACKET or AF_XDP, frames in
//! memory), with an optional tcpdump
//! filter before the hook; and [`Skipped`], the frames a capture had no
//! Ethernet form for.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use kernel::attach::XdpMode;
use pipeline::{Capture, Foreign, Generated, Live, Packets, Source};
use serde::{Deserialize, Serialize};

use crate::Error;

#[derive(Serialize, Deserialize)]
#[serde(remote = "Foreign", rename_all = "lowercase")]
enum ForeignDef {
    Skip,
    Pass,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "XdpMode", rename_all = "lowercase")]
enum XdpModeDef {
    Native,
    Skb,
}

/// The packets themselves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A pcap or pcapng capture: a file, a FIFO, or `-` for standard input.
    /// `foreign`: what frames without an Ethernet form become.
    Capture {
        path: PathBuf,
        #[serde(default, with = "ForeignDef")]
        foreign: Foreign,
    },
    /// A whole pcap or pcapng capture held in memory (a file object's
    /// bytes); `name` names it in reports and errors, as a path does.
    CaptureBytes {
        name: String,
        bytes: Vec<u8>,
        #[serde(default, with = "ForeignDef")]
        foreign: Foreign,
    },
    /// The records of a capture file whose first byte lies in `[start,
    /// end)`: one shard of a plan (`sluice shards`, docs/shards.md), read
    /// from `proven` when given (a position [`capture::check`] proved),
    /// else from the guess of its first record.
    Range {
        path: PathBuf,
        start: u64,
        end: u64,
        #[serde(default)]
        proven: Option<capture::Position>,
        #[serde(default, with = "ForeignDef")]
        foreign: Foreign,
    },
    /// Generated traffic, streams mixed: `udp,flows=1000,size=64,count=1000`.
    Generated { specs: Vec<String> },
    /// The frames arriving on an interface, live (AF_PACKET; root or
    /// CAP_NET_RAW), until the stop flag.
    Interface { name: String },
    /// The frames arriving on an interface, taken into user space by
    /// sluice's AF_XDP datapath (the redirect program attached in `mode`;
    /// the host's stack no longer sees them: for a mirror or tap port),
    /// until the stop flag. Root.
    AfXdp {
        name: String,
        #[serde(with = "XdpModeDef")]
        mode: XdpMode,
    },
    /// Ethernet frames in memory, with their timestamps (ns).
    Frames { frames: Vec<(u64, Vec<u8>)> },
}

/// A run's packets: their origin, and the tcpdump expression that picks
/// those the hook sees (all without).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSpec {
    pub origin: Origin,
    #[serde(default)]
    pub filter: Option<String>,
}

impl SourceSpec {
    /// Packets from `origin`, unfiltered.
    pub fn new(origin: Origin) -> SourceSpec {
        SourceSpec {
            origin,
            filter: None,
        }
    }

    /// Generated traffic from `specs` (see [`Origin::Generated`]).
    pub fn generated<S: Into<String>>(specs: impl IntoIterator<Item = S>) -> SourceSpec {
        SourceSpec::new(Origin::Generated {
            specs: specs.into_iter().map(Into::into).collect(),
        })
    }

    /// The capture at `path`, frames without an Ethernet form skipped.
    pub fn capture(path: impl Into<PathBuf>) -> SourceSpec {
        SourceSpec::new(Origin::Capture {
            path: path.into(),
            foreign: Foreign::Skip,
        })
    }

    /// The capture `bytes` hold (see [`Origin::CaptureBytes`]), frames
    /// without an Ethernet form skipped.
    pub fn capture_bytes(name: impl Into<String>, bytes: Vec<u8>) -> SourceSpec {
        SourceSpec::new(Origin::CaptureBytes {
            name: name.into(),
            bytes,
            foreign: Foreign::Skip,
        })
    }

    /// Opens the source. With `stop`, a capture, generated traffic or an
    /// interface reads no more once it is set, and ends after the packets
    /// it holds.
    pub fn open(&self, stop: Option<&'static AtomicBool>) -> Result<Box<dyn Source>, Error> {
        let source: Box<dyn Source> = match &self.origin {
            Origin::Interface { name } => Box::new(Live::open(name, stop)?),
            Origin::AfXdp { name, mode } => Box::new(datapath::XskSource::open(name, *mode, stop)?),
            Origin::Capture { path, foreign } => {
                Box::new(Capture::open_with(path, stop)?.foreign(*foreign))
            }
            Origin::CaptureBytes {
                name,
                bytes,
                foreign,
            } => Box::new(
                Capture::from_bytes(name.as_ref(), bytes.as_slice().into())?.foreign(*foreign),
            ),
            Origin::Range {
                path,
                start,
                end,
                proven,
                foreign,
            } => {
                let reader = open_range(path, *start, *end, proven.as_ref(), stop)?;
                Box::new(Capture::from_reader(reader, stop).foreign(*foreign))
            }
            Origin::Generated { specs } => {
                let generated = Generated::parse(specs)?;
                match stop {
                    Some(stop) => Box::new(generated.stop_on(stop)),
                    None => Box::new(generated),
                }
            }
            Origin::Frames { frames } => Box::new(Packets::new(frames.clone())),
        };
        match &self.filter {
            // The hook sees Ethernet frames (other link types are converted).
            Some(expr) => {
                let prog = cbpf::compile_expr(expr, cbpf::ETHERNET, cbpf::DEFAULT_SNAPLEN)
                    .map_err(|cause| Error::Filter {
                        expr: expr.clone(),
                        cause,
                    })?;
                Ok(Box::new(pipeline::Filtered::new(source, prog, expr)))
            }
            None => Ok(source),
        }
    }

    /// What reports say was read: `capture F` (a file, or bytes named F),
    /// `capture F [START, END)`, `capture from standard input`, `generated
    /// SPEC + SPEC`, `interface IF (live)`, `interface IF (live, AF_XDP)`,
    /// `N frames in memory`.
    pub fn describe(&self) -> String {
        match &self.origin {
            Origin::Interface { name } => format!("interface {name} (live)"),
            Origin::AfXdp { name, .. } => format!("interface {name} (live, AF_XDP)"),
            Origin::Capture { path, .. } if capture::is_stdin(path) => {
                "capture from standard input".to_string()
            }
            Origin::Capture { path, .. } => format!("capture {}", path.display()),
            Origin::CaptureBytes { name, .. } => format!("capture {name}"),
            Origin::Range {
                path, start, end, ..
            } => format!("capture {} [{start}, {end})", path.display()),
            Origin::Generated { specs } => format!("generated {}", specs.join(" + ")),
            Origin::Frames { frames } => format!("{} frames in memory", frames.len()),
        }
    }

    /// The interface read, when the packets arrive live.
    pub fn interface(&self) -> Option<&str> {
        match &self.origin {
            Origin::Interface { name } | Origin::AfXdp { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// The reader of the records of `path` whose first byte lies in
/// `[start, end)` ([`Origin::Range`]), from `proven` when given.
pub(crate) fn open_range(
    path: &std::path::Path,
    start: u64,
    end: u64,
    proven: Option<&capture::Position>,
    stop: Option<&'static AtomicBool>,
) -> Result<capture::PcapSource, pipeline::SourceError> {
    let shard = capture::Shard {
        path: path.to_path_buf(),
        start,
        end,
        size: std::fs::metadata(path).map_or(end, |m| m.len()),
    };
    capture::PcapSource::open_range_with(&shard, proven, stop)
        .map_err(|e| pipeline::SourceError(e.to_string()))
}

/// Frames a capture skipped for want of an Ethernet form, per link type
/// (`NAME (N)`), in order of first appearance; serialized as an object
/// keyed by link type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skipped(pub Vec<(String, u64)>);

impl Skipped {
    /// What `source` skipped so far.
    pub fn of(source: &dyn Source) -> Skipped {
        Skipped::by_linktype(source.skipped())
    }

    /// Frames skipped per LINKTYPE_* number ([`Source::skipped`]'s form).
    pub fn by_linktype(skipped: Vec<(u32, u64)>) -> Skipped {
        Skipped(
            skipped
                .into_iter()
                .map(|(l, n)| (capture::describe_linktype(l), n))
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Per link type, in name order.
    pub fn by_name(&self) -> BTreeMap<String, u64> {
        self.0.iter().cloned().collect()
    }

    /// The warning front ends give: `skipped N frames without an Ethernet
    /// form: N1 TYPE1, N2 TYPE2`; `None` when nothing was skipped.
    pub fn warning(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let total: u64 = self.0.iter().map(|(_, n)| n).sum();
        let each: Vec<String> = self.0.iter().map(|(l, n)| format!("{n} {l}")).collect();
        Some(format!(
            "skipped {total} frames without an Ethernet form: {}",
            each.join(", ")
        ))
    }
}

impl Serialize for Skipped {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.by_name().serialize(s)
    }
}
