//! PacketBench in sluice: what a packet program costs per packet, as a
//! model of the packet's length.
//!
//! After "Characterizing Network Processing Delay" (Ramaswamy, Weng,
//! Wolf): run a program over packets in the VM's counting mode and record
//! per packet its instructions, branches, helper calls and memory accesses
//! by place ([`profile`] -> [`Profile`]); fit `i(l) = alpha + beta * l`
//! and `m(l) = gamma + delta * l` by least squares ([`CostModel`], with
//! R^2, residuals and the packets far off the line); turn the model into a
//! processing delay `t(l) = i(l) * cpi / f + m(l) * tmem` for a
//! processor ([`Cpu`]: the paper's IXP1200, or this host calibrated
//! against the JIT's measured time, [`calibrate`]).
//!
//! [`sim`] runs the delay through the paper's network (its Figures 3 and
//! 5): a flow's round-trip time with and without the router's processing.
//!
//! ```
//! use profile::{fit_line, Cpu};
//! let line = fit_line(&[(64.0, 100.0), (128.0, 164.0), (256.0, 292.0)]);
//! assert_eq!((line.intercept, line.slope), (36.0, 1.0));
//! assert_eq!(line.r2, 1.0);
//! let ixp = Cpu::parse("f=233MHz,tmem=4ns").unwrap();
//! assert!((ixp[0].delay_ns(64.0, 233.0, 0.0, 0.0) - 1000.0).abs() < 1e-9);
//! ```

mod calibrate;
mod cost;
mod cpu;
mod export;
mod fit;
mod model;
pub mod sim;

pub use calibrate::{Calibration, NOT_MEASURED, calibrate};
pub use cost::{PacketCost, Profile, ProfileError, VmEngine, profile, warm_up};
pub use cpu::{BadCpu, Cpu, CpuSpecError};
pub use export::{model_csv, model_json};
pub use fit::{Line, fit_line, fit_plane};
pub use model::{CostModel, Fitted, LengthRow, Outlier};
