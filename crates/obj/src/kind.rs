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

impl ProgramKind {
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
