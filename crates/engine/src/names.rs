//! Names reports give: memory regions and redirect targets, shared by the
//! report ([`RunReport`](crate::RunReport)) and the per-packet table
//! ([`PacketTable`](crate::PacketTable)).

use runtime::{Redirect, RedirectTarget};

/// The kinds of region memory accesses are counted in, in the VM's order
/// (`vm::RegionKind`): the keys of [`RunReport::memory_per_packet`].
pub(crate) const REGIONS: [&str; 4] = ["stack", "context", "packet", "map"];

/// What reports call a redirect's target: `ifindex N`, `ifindex N
/// ingress`, `cpu N`, `xsk queue N`, `broadcast MAP`, `broadcast MAP (not
/// ingress)`; `map_names` names the hook's maps.
pub(crate) fn redirect_name(r: &Redirect, map_names: &[String]) -> String {
    match r.target {
        RedirectTarget::Device {
            ifindex,
            ingress: false,
        } => format!("ifindex {ifindex}"),
        RedirectTarget::Device {
            ifindex,
            ingress: true,
        } => format!("ifindex {ifindex} ingress"),
        RedirectTarget::Cpu(c) => format!("cpu {c}"),
        RedirectTarget::Socket(q) => format!("xsk queue {q}"),
        RedirectTarget::Broadcast { exclude_ingress } => {
            let map = r
                .map
                .and_then(|m| map_names.get(m))
                .map_or("?", String::as_str);
            if exclude_ingress {
                format!("broadcast {map} (not ingress)")
            } else {
                format!("broadcast {map}")
            }
        }
    }
}
