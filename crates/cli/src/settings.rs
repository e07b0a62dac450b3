//! `--set NAME=VALUE`, `--map-size NAME=N`, `--map-size-default N` and
//! `--type`/`--attach-type`, shared by every command that loads an object
//! (into the VM, the kernel, or both): the arguments of
//! [`engine::Settings`], which applies them.

#[derive(clap::Args, Clone, Default)]
pub struct ObjectSettings {
    /// Set a global variable (volatile const or not) before loading: NAME=VALUE
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Set a map's max_entries: NAME=N
    #[arg(long = "map-size", value_name = "NAME=N")]
    pub map_size: Vec<String>,
    /// max_entries of every map that declares 0 (its loader sets it) and has no --map-size
    #[arg(long = "map-size-default", value_name = "N")]
    pub map_size_default: Option<u32>,
    /// Program type of the programs whose section names none (from-netdev, 2/0...), or of program PROG: xdp, xdp.frags, xdp/devmap, xdp/cpumap, tc, action, socket (or the kernel's sched_cls, sched_act, socket_filter)
    #[arg(long = "type", value_name = "[PROG=]TYPE")]
    pub prog_type: Vec<String>,
    /// Expected attach type with --type, as bpftool names it: xdp, xdp_devmap, xdp_cpumap, tcx_ingress, tcx_egress, netkit_primary, netkit_peer
    #[arg(long = "attach-type", value_name = "[PROG=]TYPE")]
    pub attach_type: Vec<String>,
}

impl ObjectSettings {
    /// The settings as the engine takes them.
    pub fn spec(&self) -> engine::Settings {
        engine::Settings {
            set: self.set.clone(),
            map_size: self.map_size.clone(),
            map_size_default: self.map_size_default,
            prog_type: self.prog_type.clone(),
            attach_type: self.attach_type.clone(),
        }
    }
}
