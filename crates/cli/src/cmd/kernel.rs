//! The kernel commands: `sluice load`, `attach`, `detach`, `status` and
//! `map dump|update` on pinned maps (like bpftool, xdp-loader and tc).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use engine::KernelSpec;
use kernel::attach::{self, TcDir, XdpMode};
use kernel::{KernelObject, PinnedMap};
use serde::Serialize;

use crate::report::print_json;
use crate::settings::ObjectSettings;
use engine::mapfmt;

/// Where sluice pins what it loads, under bpffs.
const PIN_ROOT: &str = "/sys/fs/bpf/sluice";

pub(crate) fn need_privilege(what: &str) -> Result<(), String> {
    if kernel::privileged() {
        Ok(())
    } else {
        Err(format!(
            "{what} needs root (or CAP_BPF and CAP_NET_ADMIN): run it with sudo"
        ))
    }
}

fn object_name(path: &Path) -> String {
    KernelSpec::new(path).kernel_name()
}

/// Loads `path` into the kernel with the same global data and map sizes
/// sluice's own loader computes (`--set`, `--map-size`): the engine's
/// [`KernelSpec`].
fn load_object(path: &Path, settings: &ObjectSettings) -> Result<KernelObject, String> {
    let spec = KernelSpec {
        settings: settings.spec(),
        ..KernelSpec::new(path)
    };
    spec.load(Some(crate::signals::flag()))
        .map_err(|e| e.to_string())
}

/// Load an object into the kernel and pin its programs and maps (like bpftool prog loadall)
#[derive(clap::Args)]
pub struct LoadArgs {
    /// Object file built by clang -target bpf
    object: PathBuf,
    /// Pin directory (programs as DIR/NAME, maps as DIR/maps/NAME) [default: /sys/fs/bpf/sluice/OBJECT]
    #[arg(long)]
    pin: Option<PathBuf>,
    #[command(flatten)]
    settings: ObjectSettings,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Loaded {
    programs: Vec<PinnedProg>,
    maps: Vec<String>,
}

#[derive(Serialize)]
struct PinnedProg {
    name: String,
    id: u32,
    tag: String,
    pinned: String,
}

pub fn load(a: LoadArgs) -> Result<ExitCode, String> {
    need_privilege("sluice load")?;
    let mut kobj = load_object(&a.object, &a.settings)?;
    let dir = a
        .pin
        .unwrap_or_else(|| Path::new(PIN_ROOT).join(object_name(&a.object)));
    if dir.exists() {
        return Err(format!(
            "{} exists: remove it (rm -r) or pin elsewhere with --pin",
            dir.display()
        ));
    }
    let pinned = kobj
        .pin_programs(&dir)
        .and_then(|progs| Ok((progs, kobj.pin_maps(&dir.join("maps"))?)));
    let (progs, maps) = pinned.map_err(|e| {
        // Nothing half pinned stays behind.
        let _ = std::fs::remove_dir_all(&dir);
        e.to_string()
    })?;
    let mut out = Loaded {
        programs: Vec::new(),
        maps: maps.iter().map(|p| p.display().to_string()).collect(),
    };
    for (p, path) in kobj.programs().iter().zip(&progs) {
        let info = attach::prog_by_fd(p.fd).map_err(|e| e.to_string())?;
        out.programs.push(PinnedProg {
            name: p.name.clone(),
            id: info.id,
            tag: info.tag,
            pinned: path.display().to_string(),
        });
    }
    if a.json {
        print_json(&out)?;
    } else {
        for p in &out.programs {
            out!(
                "loaded {} (id {}, tag {}) pinned at {}",
                p.name,
                p.id,
                p.tag,
                p.pinned
            );
        }
        for m in &out.maps {
            out!("map pinned at {m}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Copy, Clone, clap::ValueEnum)]
pub enum ModeArg {
    Native,
    Skb,
}

#[derive(Copy, Clone, clap::ValueEnum)]
pub enum TcArg {
    Ingress,
    Egress,
}

impl From<TcArg> for TcDir {
    fn from(t: TcArg) -> TcDir {
        match t {
            TcArg::Ingress => TcDir::Ingress,
            TcArg::Egress => TcDir::Egress,
        }
    }
}

/// Where an attachment's maps are pinned unless --pin says otherwise.
fn default_pin(dev: &str, tc: Option<TcDir>) -> PathBuf {
    match tc {
        None => Path::new(PIN_ROOT).join(dev),
        Some(d) => Path::new(PIN_ROOT).join(format!("{dev}-tc-{}", d.name())),
    }
}

/// Attach a program to an interface: XDP (native or skb mode) or tc (clsact, direct action)
#[derive(clap::Args)]
pub struct AttachArgs {
    /// Object file built by clang -target bpf
    object: PathBuf,
    /// Program to attach (a function name; needed when the object has several)
    #[arg(long)]
    prog: Option<String>,
    /// Interface
    #[arg(long)]
    dev: String,
    /// XDP mode
    #[arg(long, value_enum, default_value = "native", conflicts_with = "tc")]
    mode: ModeArg,
    /// Attach as a tc filter on this clsact hook instead of XDP
    #[arg(long, value_enum)]
    tc: Option<TcArg>,
    /// Pin the maps here [default: /sys/fs/bpf/sluice/DEV, or DEV-tc-ingress|egress]
    #[arg(long)]
    pin: Option<PathBuf>,
    #[command(flatten)]
    settings: ObjectSettings,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct AttachReport {
    dev: String,
    hook: String,
    program: String,
    id: u32,
    tag: String,
    pinned: String,
}

pub fn attach(a: AttachArgs) -> Result<ExitCode, String> {
    need_privilege("sluice attach")?;
    kernel::netdev::ifindex(&a.dev).map_err(|e| e.to_string())?;
    let tc = a.tc.map(TcDir::from);
    let dir = a.pin.clone().unwrap_or_else(|| default_pin(&a.dev, tc));
    if dir.exists() {
        return Err(format!(
            "{} exists: is a program attached already? (sluice status; sluice detach --dev {})",
            dir.display(),
            a.dev
        ));
    }
    let mut kobj = load_object(&a.object, &a.settings)?;
    let progs = kobj.programs();
    let prog = match &a.prog {
        Some(name) => kobj.program(name).map_err(|e| e.to_string())?,
        None if progs.len() == 1 => progs[0].clone(),
        None => {
            let names: Vec<&str> = progs.iter().map(|p| p.name.as_str()).collect();
            return Err(format!(
                "{}: the object has {} programs ({}); pick one with --prog",
                a.object.display(),
                progs.len(),
                names.join(", ")
            ));
        }
    };
    let result = match tc {
        None => {
            let mode = match a.mode {
                ModeArg::Native => XdpMode::Native,
                ModeArg::Skb => XdpMode::Skb,
            };
            attach::xdp_attach(&a.dev, prog.fd, mode).map(|()| format!("XDP {} mode", mode.name()))
        }
        Some(dir) => attach::tc_attach(&a.dev, prog.fd, dir).map(|()| format!("tc {}", dir.name())),
    };
    let hook = result.map_err(|e| e.to_string())?;
    // Pin the maps so `sluice map dump` reads them while the program runs;
    // undo the attachment if that fails, so nothing is left half done.
    if let Err(e) = kobj.pin_maps(&dir) {
        let _ = match tc {
            None => attach::xdp_detach(&a.dev).map(drop),
            Some(d) => attach::tc_detach(&a.dev, d, false).map(drop),
        };
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e.to_string());
    }
    let info = attach::prog_by_fd(prog.fd).map_err(|e| e.to_string())?;
    let r = AttachReport {
        dev: a.dev.clone(),
        hook,
        program: prog.name.clone(),
        id: info.id,
        tag: info.tag,
        pinned: dir.display().to_string(),
    };
    if a.json {
        print_json(&r)?;
    } else {
        out!(
            "attached {} (id {}, tag {}) to {} ({}); maps pinned under {}",
            r.program,
            r.id,
            r.tag,
            r.dev,
            r.hook,
            r.pinned
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Detach sluice's program from an interface and remove its pinned maps
#[derive(clap::Args)]
pub struct DetachArgs {
    /// Interface
    #[arg(long)]
    dev: String,
    /// Detach the tc filter on this hook instead of XDP
    #[arg(long, value_enum)]
    tc: Option<TcArg>,
    /// With --tc: remove the clsact qdisc too (and any other filter on it)
    #[arg(long, requires = "tc")]
    qdisc: bool,
    /// The pin directory given to attach [default: /sys/fs/bpf/sluice/DEV, or DEV-tc-ingress|egress]
    #[arg(long)]
    pin: Option<PathBuf>,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct DetachReport {
    dev: String,
    detached: Vec<String>,
    removed: Option<String>,
}

pub fn detach(a: DetachArgs) -> Result<ExitCode, String> {
    need_privilege("sluice detach")?;
    let tc = a.tc.map(TcDir::from);
    let what = match tc {
        None => {
            let gone = attach::xdp_detach(&a.dev).map_err(|e| e.to_string())?;
            gone.iter()
                .map(|g| format!("XDP program id {} ({} mode)", g.prog_id, g.mode.name()))
                .collect::<Vec<_>>()
        }
        Some(d) => attach::tc_detach(&a.dev, d, a.qdisc)
            .map_err(|e| e.to_string())?
            .map(|id| vec![format!("tc {} program id {id}", d.name())])
            .unwrap_or_default(),
    };
    let dir = a.pin.unwrap_or_else(|| default_pin(&a.dev, tc));
    let removed = if dir.starts_with("/sys/fs/bpf") && dir.is_dir() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        true
    } else {
        false
    };
    if what.is_empty() && !removed {
        return Err(format!("nothing of sluice's is attached to {}", a.dev));
    }
    if a.json {
        print_json(&DetachReport {
            dev: a.dev.clone(),
            detached: what,
            removed: removed.then(|| dir.display().to_string()),
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    for w in &what {
        out!("detached {w} from {}", a.dev);
    }
    if removed {
        out!("removed {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Show the XDP programs, and sluice's tc filters, on every interface (like xdp-loader status)
#[derive(clap::Args)]
pub struct StatusArgs {
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct StatusLine {
    interface: String,
    ifindex: u32,
    hook: String,
    program: String,
    id: u32,
    tag: String,
    map_ids: Vec<u32>,
}

pub fn status(a: StatusArgs) -> Result<ExitCode, String> {
    need_privilege("sluice status")?;
    let lines: Vec<StatusLine> = attach::status()
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|s| StatusLine {
            interface: s.dev,
            ifindex: s.ifindex,
            hook: s.hook,
            program: s.prog.name,
            id: s.prog.id,
            tag: s.prog.tag,
            map_ids: s.prog.map_ids,
        })
        .collect();
    if a.json {
        print_json(&lines)?;
        return Ok(ExitCode::SUCCESS);
    }
    out!(
        "{:<16} {:<12} {:<20} {:>6}  {:<16}  map ids",
        "interface",
        "hook",
        "program",
        "id",
        "tag"
    );
    if lines.is_empty() {
        out!("(nothing attached)");
    }
    for l in &lines {
        let ids: Vec<String> = l.map_ids.iter().map(u32::to_string).collect();
        out!(
            "{:<16} {:<12} {:<20} {:>6}  {:<16}  {}",
            l.interface,
            l.hook,
            l.program,
            l.id,
            l.tag,
            ids.join(",")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Read and write maps pinned in bpffs (while their program runs)
#[derive(clap::Args)]
pub struct MapArgs {
    #[command(subcommand)]
    command: MapCommand,
}

#[derive(clap::Subcommand)]
enum MapCommand {
    /// Print every entry of a pinned map
    Dump {
        /// Path of the pinned map, e.g. /sys/fs/bpf/sluice/eth0/drop_stats
        #[arg(long)]
        pinned: PathBuf,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Add or replace an entry: KEY VALUE (integer, IP address, ADDR/LEN for LPM keys, or hex:BYTES)
    Update {
        /// Path of the pinned map, e.g. /sys/fs/bpf/sluice/eth0/blocklist_v4
        #[arg(long)]
        pinned: PathBuf,
        /// The key: integer, IP address, ADDR/LEN for LPM keys, or hex:BYTES
        key: String,
        /// The value: integer, IP address, or hex:BYTES
        value: String,
    },
    /// Delete an entry
    Delete {
        /// Path of the pinned map
        #[arg(long)]
        pinned: PathBuf,
        /// The key: integer, IP address, ADDR/LEN for LPM keys, or hex:BYTES
        key: String,
    },
}

#[derive(Serialize)]
struct PinnedDump {
    name: String,
    #[serde(rename = "type")]
    map_type: String,
    id: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    /// Array entries whose value is all zeros (not listed).
    zero_entries: usize,
    entries: Vec<mapfmt::EntryDump>,
}

/// Little-endian integers for 1-, 2-, 4- and 8-byte fields, hex otherwise.
fn show(bytes: &[u8]) -> String {
    match bytes.len() {
        1 | 2 | 4 | 8 => {
            let mut b = [0u8; 8];
            b[..bytes.len()].copy_from_slice(bytes);
            u64::from_le_bytes(b).to_string()
        }
        _ => mapfmt::hex(bytes),
    }
}

pub fn map(a: MapArgs) -> Result<ExitCode, String> {
    need_privilege("sluice map")?;
    match a.command {
        MapCommand::Dump { pinned, json } => {
            let m = PinnedMap::open(&pinned).map_err(|e| e.to_string())?;
            let info = &m.info;
            let map_type = maps::MapType::from_id(info.map_type)
                .map(|t| t.name().to_string())
                .unwrap_or_else(|_| format!("type {}", info.map_type));
            let elem = (info.value_size as usize).next_multiple_of(8);
            // The object's BTF, which libbpf handed the kernel with the map.
            let btf = (info.btf_id != 0)
                .then(|| kernel::kmap::btf_raw(info.btf_id).ok())
                .flatten()
                .and_then(|raw| obj::Btf::parse(&raw).ok());
            let ty = |t: u32| (t != 0).then_some(t);
            let fmt = |t: u32, b: &[u8]| match &btf {
                Some(btf) if t != 0 => mapfmt::format(Some(btf), ty(t), b),
                _ => show(b),
            };
            let is_array = matches!(info.map_type, 2 | 6);
            let all = info.entries().map_err(|e| e.to_string())?;
            let total = all.len();
            let entries: Vec<mapfmt::EntryDump> = all
                .into_iter()
                .filter(|(_, v)| !is_array || v.iter().any(|&b| b != 0))
                .map(|(k, v)| {
                    let key = fmt(info.btf_key_type, &k);
                    if info.is_percpu() {
                        let cpus: Vec<String> = v
                            .chunks(elem)
                            .map(|c| fmt(info.btf_value_type, &c[..info.value_size as usize]))
                            .collect();
                        mapfmt::EntryDump {
                            key,
                            value: cpus.first().cloned().unwrap_or_default(),
                            cpus,
                            summed: false,
                        }
                    } else {
                        mapfmt::EntryDump {
                            key,
                            value: fmt(info.btf_value_type, &v),
                            cpus: Vec::new(),
                            summed: false,
                        }
                    }
                })
                .collect();
            let zero_entries = total - entries.len();
            let dump = PinnedDump {
                name: info.name.clone(),
                map_type,
                id: info.id,
                key_size: info.key_size,
                value_size: info.value_size,
                max_entries: info.max_entries,
                zero_entries,
                entries,
            };
            if json {
                print_json(&dump)?;
            } else {
                out!(
                    "{} ({}, id {}, key {} B, value {} B, max {}):",
                    dump.name,
                    dump.map_type,
                    dump.id,
                    dump.key_size,
                    dump.value_size,
                    dump.max_entries
                );
                if dump.zero_entries > 0 {
                    out!("  ({} entries are all zeros)", dump.zero_entries);
                }
                for e in &dump.entries {
                    if e.cpus.is_empty() {
                        out!("  {} = {}", e.key, e.value);
                    } else {
                        out!("  {} = [{}]", e.key, e.cpus.join(", "));
                    }
                }
            }
        }
        MapCommand::Update { pinned, key, value } => {
            let m = PinnedMap::open(&pinned).map_err(|e| e.to_string())?;
            let t = maps::MapType::from_id(m.info.map_type).map_err(|e| e.to_string())?;
            let k = mapfmt::parse(&key, m.info.key_size as usize, t, true)
                .map_err(|e| e.to_string())?;
            let v = mapfmt::parse(&value, m.info.user_value_len(), t, false)
                .map_err(|e| e.to_string())?;
            m.info.update(&k, &v, 0).map_err(|e| e.to_string())?;
        }
        MapCommand::Delete { pinned, key } => {
            let m = PinnedMap::open(&pinned).map_err(|e| e.to_string())?;
            let t = maps::MapType::from_id(m.info.map_type).map_err(|e| e.to_string())?;
            let k = mapfmt::parse(&key, m.info.key_size as usize, t, true)
                .map_err(|e| e.to_string())?;
            m.info.delete(&k).map_err(|e| e.to_string())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
