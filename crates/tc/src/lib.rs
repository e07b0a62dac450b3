//! The Linux tc classifier-action subsystem in user space (issue 18;
//! docs/tc.md), after the kernel's `net/sched`: a clsact hook's [`Block`]
//! holds chains of filters in priority order; each [`Filter`] is a
//! classifier instance (u32, matchall, ...) whose rules bind
//! [`Action`]s from a shared table; [`Block::classify`] walks them as
//! `tcf_classify` does and gives an [`Outcome`]: the verdict (the one
//! `runtime::TcAction`), the class, and the packets mirred sent.
//!
//! ```
//! use tc::{Block, Skb};
//! let mut block = Block::default();
//! let skb = Skb::from_frame(&[0u8; 60], 1);
//! // No filters: nothing matched, the packet goes on.
//! assert_eq!(block.classify(&skb, skb.len() as u64).verdict, runtime::TcAction::Unspec);
//! ```

mod action;
mod action_parse;
mod block;
mod classifier;
mod control;
mod handle;
mod kinds;
mod skb;
pub mod u32;

pub use action::{Action, ActionRef, ActionStats, Actions, Emitted, Kind, Mirred, Random};
pub use action_parse::parse_actions;
pub use block::{Block, ETH_P_ALL, Filter, Outcome};
pub use classifier::{Classifier, Cx, Match};
pub use control::{Control, parse_control};
pub use handle::{CLSACT, EGRESS, INGRESS, ROOT, format_classid, parse_classid};
pub use kinds::new_classifier;
pub use skb::Skb;
pub use u32::U32;
