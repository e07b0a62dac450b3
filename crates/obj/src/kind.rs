//! Program types from section names, with libbpf's conventions.

use std::fmt;

/// Where an XDP program runs.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum XdpAttach {
    /// On a device's receive path.
    Device,
    /// On frames redirected into a devmap entry (`xdp/devmap`).
    Devmap,
    /// On frames redirected into a cpumap entry (`xdp/cpumap`).
    Cpumap,
}

/// What kind of program a section holds.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ProgramKind {
    Xdp {
        attach: XdpAttach,
        frags: bool,
    },
    /// `tc`, `classifier`, `tcx/*`, `tc/*`, `netkit/*`: `BPF_PROG_TYPE_SCHED_CLS`.
    SchedCls,
    /// `action`: `BPF_PROG_TYPE_SCHED_ACT`.
    SchedAct,
    /// `socket`: `BPF_PROG_TYPE_SOCKET_FILTER`.
    SocketFilter,
    /// A program type sluice cannot run; the reason names it.
    Unsupported(String),
}

/// Expected attach types (`enum bpf_attach_type`) by the names bpftool
/// and libbpf give them (`libbpf_bpf_attach_type_str`), for the program
/// types sluice runs.
const ATTACH_TYPES: [(&str, u32); 7] = [
    ("xdp", 37),
    ("xdp_devmap", 33),
    ("xdp_cpumap", 35),
    ("tcx_ingress", 46),
    ("tcx_egress", 47),
    ("netkit_primary", 54),
    ("netkit_peer", 55),
];

/// The program types `--type` takes: bpftool's names (`prog load ...
/// type TYPE`, libbpf's section names) and the kernel's.
pub const TYPE_NAMES: &str = "xdp, xdp.frags, xdp/devmap, xdp/cpumap, tc (classifier, sched_cls), action (sched_act), socket (socket_filter)";

/// Why `--type` (with `--attach-type`) cannot give programs a type.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ProgramTypeError {
    /// `--type` names no program type sluice runs.
    #[error("--type {0}: not a program type sluice runs ({TYPE_NAMES})")]
    UnknownType(String),
    /// `--attach-type` names no attach type of those program types.
    #[error("--attach-type {0}: not an attach type of the program types sluice runs ({names})", names = attach_names())]
    UnknownAttach(String),
    /// The attach type is not one of the program type's.
    #[error("--attach-type {attach} does not go with program type {ty}")]
    Mismatch { attach: String, ty: String },
    /// `--type PROG=TYPE` names a program the object lacks.
    #[error("--type {prog}={ty}: no program `{prog}` (the object has {names})", names = .programs.join(", "))]
    NoProgram {
        prog: String,
        ty: String,
        programs: Vec<String>,
    },
}

fn attach_names() -> String {
    let names: Vec<&str> = ATTACH_TYPES.iter().map(|(n, _)| *n).collect();
    names.join(", ")
}

impl ProgramKind {
    /// A program type by name, as `--type` gives it, with an optional
    /// expected attach type (`--attach-type`); the attach type's kernel id
    /// comes back when one was given.
    pub fn from_type_name(
        name: &str,
        attach: Option<&str>,
    ) -> Result<(ProgramKind, Option<u32>), ProgramTypeError> {
        let section = match name {
            "sched_cls" => "tc",
            "sched_act" => "action",
            "socket_filter" => "socket",
            "xdp" | "xdp.frags" | "xdp/devmap" | "xdp/cpumap" | "xdp.frags/devmap"
            | "xdp.frags/cpumap" | "tc" | "classifier" | "action" | "socket" => name,
            _ => {
                return Err(ProgramTypeError::UnknownType(name.to_string()));
            }
        };
        let mut kind = ProgramKind::from_section(section);
        let Some(attach) = attach else {
            return Ok((kind, None));
        };
        let id = ATTACH_TYPES
            .iter()
            .find(|(n, _)| *n == attach)
            .map(|&(_, id)| id)
            .ok_or_else(|| ProgramTypeError::UnknownAttach(attach.to_string()))?;
        match (&mut kind, attach) {
            (ProgramKind::Xdp { attach: at, .. }, a) if a.starts_with("xdp") => {
                *at = match a {
                    "xdp_devmap" => XdpAttach::Devmap,
                    "xdp_cpumap" => XdpAttach::Cpumap,
                    _ => XdpAttach::Device,
                };
            }
            (
                ProgramKind::SchedCls,
                "tcx_ingress" | "tcx_egress" | "netkit_primary" | "netkit_peer",
            ) => {}
            _ => {
                return Err(ProgramTypeError::Mismatch {
                    attach: attach.to_string(),
                    ty: name.to_string(),
                });
            }
        }
        Ok((kind, Some(id)))
    }

    /// Whether libbpf (1.x) gives section `sec` a program type: sections it
    /// does not know (iproute2's `from-netdev`, `xdp_sock`, tail-call
    /// targets named `2/0`) load only with a type given (`--type`).
    pub fn libbpf_knows(sec: &str) -> bool {
        let base = sec.split_once('/').map_or(sec, |(b, _)| b);
        matches!(
            base,
            "xdp" | "xdp.frags" | "tc" | "classifier" | "tcx" | "netkit" | "action" | "socket"
        ) || kernel_type_of(base) != "non-packet"
    }

    /// The kind of the programs in section `sec`.
    pub fn from_section(sec: &str) -> ProgramKind {
        let (base, rest) = match sec.split_once('/') {
            Some((b, r)) => (b, Some(r)),
            None => (sec, None),
        };
        let xdp = |attach, frags| ProgramKind::Xdp { attach, frags };
        match (base, rest) {
            ("xdp" | "xdp.frags", None) => xdp(XdpAttach::Device, base == "xdp.frags"),
            ("xdp" | "xdp.frags", Some("devmap")) => xdp(XdpAttach::Devmap, base == "xdp.frags"),
            ("xdp" | "xdp.frags", Some("cpumap")) => xdp(XdpAttach::Cpumap, base == "xdp.frags"),
            ("tc" | "classifier" | "tcx" | "netkit", _) => ProgramKind::SchedCls,
            ("action", _) => ProgramKind::SchedAct,
            ("socket", _) => ProgramKind::SocketFilter,
            // Before libbpf 1.0 (and in iproute2) any section starting with
            // "xdp" was an XDP program; many programs still use such names.
            _ if sec.starts_with("xdp") => xdp(XdpAttach::Device, false),
            _ if kernel_type_of(base) == "non-packet" => ProgramKind::Unsupported(format!(
                "section `{sec}` names no program type libbpf or sluice knows: give one with --type ({TYPE_NAMES})"
            )),
            _ => ProgramKind::Unsupported(format!(
                "section `{sec}` holds a {} program, which sluice cannot run (it runs xdp, tc/classifier, action and socket programs)",
                kernel_type_of(base)
            )),
        }
    }

    pub fn is_runnable(&self) -> bool {
        !matches!(self, ProgramKind::Unsupported(_))
    }

    pub fn is_xdp(&self) -> bool {
        matches!(self, ProgramKind::Xdp { .. })
    }

    /// The kernel's program type name.
    pub fn type_name(&self) -> &'static str {
        match self {
            ProgramKind::Xdp { .. } => "xdp",
            ProgramKind::SchedCls => "sched_cls",
            ProgramKind::SchedAct => "sched_act",
            ProgramKind::SocketFilter => "socket_filter",
            ProgramKind::Unsupported(_) => "unsupported",
        }
    }
}

impl fmt::Display for ProgramKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgramKind::Xdp { attach, frags } => {
                write!(f, "xdp")?;
                if *frags {
                    write!(f, " (frags)")?;
                }
                match attach {
                    XdpAttach::Device => Ok(()),
                    XdpAttach::Devmap => write!(f, " on devmap"),
                    XdpAttach::Cpumap => write!(f, " on cpumap"),
                }
            }
            other => f.write_str(other.type_name()),
        }
    }
}

/// A rough name of the kernel program type a section prefix stands for.
fn kernel_type_of(base: &str) -> &str {
    match base {
        "kprobe" | "kretprobe" | "uprobe" | "uretprobe" | "ksyscall" | "kretsyscall" => "kprobe",
        "tracepoint" | "tp" => "tracepoint",
        "raw_tracepoint" | "raw_tp" => "raw_tracepoint",
        "fentry" | "fexit" | "fmod_ret" | "lsm" | "iter" | "tp_btf" => "tracing",
        "cgroup" | "cgroup_skb" => "cgroup",
        "sk_skb" | "sk_msg" | "sk_lookup" | "sk_reuseport" | "sockops" => "socket-layer",
        "perf_event" => "perf_event",
        "struct_ops" => "struct_ops",
        "lwt_in" | "lwt_out" | "lwt_xmit" | "lwt_seg6local" => "lightweight-tunnel",
        "flow_dissector" => "flow_dissector",
        "syscall" => "syscall",
        _ => "non-packet",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_errors_name_what_was_given() {
        let e = ProgramKind::from_type_name("kprobe", None).unwrap_err();
        assert_eq!(e, ProgramTypeError::UnknownType("kprobe".into()));
        assert_eq!(
            e.to_string(),
            format!("--type kprobe: not a program type sluice runs ({TYPE_NAMES})")
        );
        let e = ProgramKind::from_type_name("xdp", Some("tcx_ingress")).unwrap_err();
        assert_eq!(
            e,
            ProgramTypeError::Mismatch {
                attach: "tcx_ingress".into(),
                ty: "xdp".into()
            }
        );
        let e = ProgramKind::from_type_name("tc", Some("nope")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--attach-type nope: not an attach type of the program types sluice runs (xdp, xdp_devmap, xdp_cpumap, tcx_ingress, tcx_egress, netkit_primary, netkit_peer)"
        );
    }
}
