//! What an eBPF packet program sees in sluice: its object's maps, the
//! kernel helpers of its program type, and an XDP or tc context around each
//! packet. [`Hook`] runs one program of an [`Image`] over packets.

mod env;
pub mod fib;
mod handles;
pub mod helpers;
mod hook;
mod image;
mod lowmem;
mod packet_hook;
mod tunnel_info;
pub use lowmem::{LowBuf, LowBufError};

/// What [`Env::unreproducible`] names an LRU eviction (the kernel's LRU
/// lists are approximate: it may evict another entry).
pub const LRU_EVICTION: &str = "an LRU eviction";

pub use env::{Cloned, CtxKind, Env, PacketView, Redirect, RedirectTarget};
pub use handles::{map_handle, map_index};
pub use hook::Rejection;
pub use hook::{
    FRAG_SIZE, Hook, HookError, MAX_PACKET as MAX_FRAME, Outcome, PacketMeta, SkbFields, TcAction,
    Verdict, XDP_LINEAR_MAX, XdpAction,
};
pub use image::{FindProgramError, Image, ImageError, LoadOptions};
pub use packet_hook::{PacketHook, SiblingError};
pub use tunnel_info::TunnelInfo;
