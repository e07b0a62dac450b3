//! `--set NAME=VALUE`, `--map-size NAME=N`, `--map-size-default N` and
//! `--type`/`--attach-type`, shared by every command that
//! loads an object (into the VM, the kernel, or both).

use runtime::LoadOptions;

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

fn split_pair<'a>(s: &'a str, what: &str) -> Result<(&'a str, &'a str), String> {
    s.split_once('=')
        .ok_or_else(|| format!("{what} takes NAME=VALUE, not `{s}`"))
}

/// An integer in decimal or `0x` hex, optionally negative.
pub fn parse_int(s: &str) -> Result<i128, String> {
    let t = s.trim();
    let (neg, body) = t.strip_prefix('-').map_or((false, t), |b| (true, b));
    let v = match body.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16),
        None => body.parse(),
    }
    .map_err(|_| format!("`{s}` is not an integer"))?;
    Ok(if neg { -v } else { v })
}

/// `[PROG=]VALUE`: the program (if named) and the value.
fn split_prog(s: &str) -> (Option<&str>, &str) {
    match s.split_once('=') {
        Some((p, v)) => (Some(p), v),
        None => (None, s),
    }
}

impl ObjectSettings {
    /// Gives programs the types of `--type` and `--attach-type`.
    pub fn retype(&self, object: &mut obj::Object) -> Result<(), String> {
        for a in &self.attach_type {
            let (prog, _) = split_prog(a);
            if !self.prog_type.iter().any(|t| split_prog(t).0 == prog) {
                return Err(format!(
                    "--attach-type {a}: give the program type too, with --type {}TYPE",
                    prog.map(|p| format!("{p}=")).unwrap_or_default()
                ));
            }
        }
        for t in &self.prog_type {
            let (prog, ty) = split_prog(t);
            let attach = self
                .attach_type
                .iter()
                .map(|a| split_prog(a))
                .find(|(p, _)| *p == prog)
                .map(|(_, a)| a);
            object
                .set_program_type(prog, ty, attach)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Gives programs their `--type`s, and adds the globals and map sizes
    /// to `opts`; map names are checked against `object`.
    pub fn apply(&self, object: &mut obj::Object, opts: &mut LoadOptions) -> Result<(), String> {
        self.retype(object)?;
        for s in &self.set {
            let (name, value) = split_pair(s, "--set")?;
            opts.globals.push((name.to_string(), parse_int(value)?));
        }
        for s in &self.map_size {
            let (name, n) = split_pair(s, "--map-size")?;
            if object.map_index(name).is_none() {
                return Err(format!("--map-size {name}: the object has no such map"));
            }
            let n = u32::try_from(parse_int(n)?)
                .map_err(|_| format!("--map-size {name}: out of range"))?;
            opts.map_sizes.insert(name.to_string(), n);
        }
        if self.map_size_default == Some(0) {
            return Err("--map-size-default: 0 is no size".into());
        }
        opts.map_size_default = self.map_size_default;
        Ok(())
    }
}
