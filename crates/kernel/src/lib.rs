//! The Linux kernel backend: the same object sluice replays, loaded into
//! the kernel by libbpf (through libbpf-rs), attached to interfaces (XDP,
//! tc), run packet by packet with `BPF_PROG_TEST_RUN`, and its maps read and
//! written through their descriptors or bpffs pins; and the AF_PACKET
//! sockets every live interface of sluice reads and writes
//! ([`PacketSocket`]).
//!
//! Everything here needs root (or CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON);
//! [`privileged`] tells whether this process has it.

pub mod attach;
pub mod clock;
mod error;
pub mod kmap;
pub mod links;
mod load_options;
pub mod log;
pub mod netdev;
pub mod netns;
mod object;
pub mod packet_socket;
pub mod ringbuf;
pub mod tc;
pub mod testrun;
pub mod traffic;
pub mod verify;
pub mod xdp_link;

pub use error::{Error, ErrorKind, Result, privileged};
pub use kmap::{MapInfo, PinnedMap, possible_cpus};
pub use load_options::load_options;
pub use object::{KernelObject, LoadOptions, ProgInfo, ProgType, same_map};
pub use packet_socket::PacketSocket;
