//! sluice's eBPF verifier. This first part checks control flow as the
//! kernel's `check_subprogs` and `check_cfg` do (see [`cfg`]); register
//! state, memory safety and helper prototypes are the verifier issue's next
//! steps.

pub mod cfg;

pub use cfg::{Cfg, CfgError, MAX_CALL_FRAMES, Subprog};
