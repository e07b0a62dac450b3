//! What sluice's tests and benchmarks share, in one place: a
//! dev-dependency of every test crate.
//!
//! - [`root_available`] / [`kernel_available`]: may this test use the
//!   kernel? When not, the skip is loud, and under
//!   `SLUICE_REQUIRE_KERNEL=1` (CI) a failure.
//! - [`Netns`] and [`Pair`] (feature `kernel`): network namespaces with
//!   veth pairs, made by the test and deleted when dropped, built on the
//!   production `kernel::netns`; with the kernel's drop counters, and
//!   [`Netns::send_frames`] to send frames into a veth.
//! - [`captures`]: tcpdump's test captures in `../shared/pcaps/tcpdump`;
//!   [`object_path`]: a program object the build put in `target/bpf`.
//! - [`tool`]: tcpdump, tshark, nfdump/nfcapd and ovs-ofctl: is it there
//!   (else a loud skip), run it, read what it said.
//! - [`Scratch`] and [`temp_dir`]: directories of a test's own.
//! - [`ovs::OvsSandbox`]: Open vSwitch on its dummy datapath in a scratch
//!   directory, to compare the switch with (`ofproto/trace`, megaflows).
//!
//! ```
//! let dir = testkit::Scratch::new("doc");
//! std::fs::write(dir.join("x"), b"1").unwrap();
//! assert!(dir.join("x").exists());
//! ```

mod captures;
#[cfg(feature = "kernel")]
pub mod netns;
pub mod ovs;
mod root;
mod scratch;
pub mod tool;

pub use captures::{capture, captures, captures_dir, object_path, on_every_capture};
#[cfg(feature = "kernel")]
pub use netns::{CommandFailed, Netns, Pair};
#[cfg(feature = "kernel")]
pub use root::kernel_available;
pub use root::{require_kernel, root_available};
pub use scratch::{Scratch, temp_dir};
pub use tool::tools_for_test;
