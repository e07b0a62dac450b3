//! Per-packet metadata (Open vSwitch's `dp_packet`): written for every
//! received frame, read when the frame is processed. Two layouts, as the
//! AF_XDP paper compares: inline, in the frame's headroom in the UMEM
//! (before the packet), or in a contiguous array on the heap indexed by
//! frame number (the paper's choice: the metadata of a batch shares cache
//! lines instead of touching one more line per packet).

use std::str::FromStr;

use capture::xsk::Xsk;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum MetaKind {
    Inline,
    #[default]
    Array,
}

impl FromStr for MetaKind {
    type Err = String;
    fn from_str(s: &str) -> Result<MetaKind, String> {
        match s {
            "inline" => Ok(MetaKind::Inline),
            "array" => Ok(MetaKind::Array),
            _ => Err(format!("unknown metadata layout {s:?}: inline or array")),
        }
    }
}

impl MetaKind {
    pub fn name(self) -> &'static str {
        match self {
            MetaKind::Inline => "inline",
            MetaKind::Array => "array",
        }
    }
}

/// What the datapath records about a received packet.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameMeta {
    /// UMEM address of the packet's first byte.
    pub addr: u64,
    pub len: u32,
    pub queue: u16,
    pub port: u16,
    /// Timestamp counter when its batch was received.
    pub rx_tsc: u64,
    pub flags: u64,
}

const META: usize = size_of::<FrameMeta>();

pub(crate) enum MetaStore {
    Inline,
    Array(Vec<FrameMeta>),
}

impl MetaStore {
    pub fn new(kind: MetaKind, frames: u32) -> MetaStore {
        match kind {
            MetaKind::Inline => MetaStore::Inline,
            MetaKind::Array => MetaStore::Array(vec![FrameMeta::default(); frames as usize]),
        }
    }

    /// Records `m` for the frame holding `m.addr`.
    #[inline]
    pub fn put(&mut self, xsk: &mut Xsk, m: FrameMeta) {
        let frame = xsk.frame_of(m.addr);
        match self {
            MetaStore::Array(v) => {
                let i = (frame / u64::from(xsk.config().frame_size)) as usize;
                v[i] = m;
            }
            MetaStore::Inline => {
                // The kernel leaves XDP_PACKET_HEADROOM (256 bytes) before
                // every received packet: the metadata goes at the frame's
                // start, which is ours once the frame is received.
                debug_assert!(m.addr - frame >= META as u64);
                if let Some(bytes) = xsk.bytes_mut(frame, META) {
                    // SAFETY: `bytes` is META writable bytes; FrameMeta is
                    // plain data, written unaligned.
                    unsafe { bytes.as_mut_ptr().cast::<FrameMeta>().write_unaligned(m) };
                }
            }
        }
    }

    /// The metadata recorded for the frame holding `addr`.
    #[inline]
    pub fn get(&self, xsk: &mut Xsk, addr: u64) -> FrameMeta {
        let frame = xsk.frame_of(addr);
        match self {
            MetaStore::Array(v) => v[(frame / u64::from(xsk.config().frame_size)) as usize],
            MetaStore::Inline => match xsk.bytes_mut(frame, META) {
                // SAFETY: META readable bytes holding a FrameMeta written
                // by `put` (plain data, any bits valid), read unaligned.
                Some(bytes) => unsafe { bytes.as_ptr().cast::<FrameMeta>().read_unaligned() },
                None => FrameMeta::default(),
            },
        }
    }
}
