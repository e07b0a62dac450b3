//! The Linux tc classifier-action subsystem in user space (issue 18;
//! docs/tc.md), after the kernel's `net/sched`: a clsact hook's [`Block`]
//! holds chains of filters in priority order; each [`Filter`] is a
//! classifier instance (u32, matchall, ...) whose rules bind
//! [`Action`]s from a shared table; [`Block::classify`] walks them as
//! `tcf_classify` does and gives a [`Classification`]: the verdict (the one
//! `runtime::TcAction`), the class, and the packets mirred sent.
//!
//! ```
//! use tc::{Config, ClsactHook, ShowOptions, Skb};
//! let mut tc = Config::default();
//! let show = ShowOptions::default();
//! tc.run_batch("qdisc add dev v0 clsact\n\
//!               filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 17 0xff classid 1:1",
//!              show).unwrap();
//! let mut frame = vec![0u8; 14 + 28];
//! frame[12..14].copy_from_slice(&[0x08, 0x00]);
//! frame[14] = 0x45;
//! frame[14 + 9] = 17; // UDP
//! let out = tc.classify("v0", ClsactHook::Ingress, &mut Skb::from_frame(&frame, 1));
//! assert_eq!((out.verdict, out.classid), (runtime::TcAction::Ok, 0x1_0001));
//! ```

pub mod act;
mod action;
mod action_parse;
mod action_show;
mod argv;
pub mod bench;
mod block;
mod bpf;
mod classifier;
mod cmdline;
mod conf_file;
mod config;
mod control;
mod devices;
mod error;
mod fast;
pub mod flower;
mod handle;
mod kinds;
mod load;
mod matchall;
mod protocol;
mod runner;
mod skb;
pub mod u32;

pub use act::{ActionHead, ActionStats};
pub use action::{Action, ActionRef, Actions, Emitted, KINDS, Kind, Mirred, Random, kind_name};
pub use action_parse::parse_actions;
pub use block::{Block, Classification};
pub use bpf::Bpf;
pub use classifier::{Classifier, Cx, Filter, Match};
pub use cmdline::{ShowOptions, lines_for, words};
pub use conf_file::{
    CONFIG_NAME, ConfFileError, ConfLock, ROOT_STATE_DIR, create_state_dir, default_config_path,
    lock_config, read_config, write_config,
};
pub use config::{Clsact, ClsactHook, Config};
pub use control::{Control, parse_control};
pub use devices::Devices;
pub use error::TcError;
pub use fast::FastStats;
pub use flower::{Flower, FlowerKey};
pub use handle::{CLSACT, EGRESS, INGRESS, ROOT, format_classid, parse_classid};
pub use kinds::{new_classifier, new_classifier_for};
pub use load::{LoadError, read_lines};
pub use matchall::Matchall;
pub use protocol::{ETH_P_ALL, InvalidProtocol, parse_protocol, protocol_name};
pub use runner::{Runner, Sent};
pub use skb::Skb;
pub use u32::U32;
