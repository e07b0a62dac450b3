//! Differential testing: every packet goes through the sluice VM and through
//! the kernel (`BPF_PROG_TEST_RUN`, one packet per call), from the same map
//! contents, and the two are compared: return value, output packet, the
//! context fields the kernel writes back, and every map afterwards.
//!
//! What cannot agree by nature is made to agree or is labelled: programs
//! that read the clock or random numbers get the same values on both sides
//! (the kernel's copy reads them from a map, see [`kernel::clock`]; the
//! clock follows the packets' timestamps); both sides run on CPU 0; a
//! difference after a helper nobody can reproduce (jiffies, the kernel's
//! seeded flow hash), or for a packet the kernel's test run refuses, is
//! counted as "not comparable" with the reason.
//!
//! Maps are compared by what changed: after each packet, the entries the
//! VM's run changed (added, removed or written: [`maps::Map::changes`])
//! are looked up in the kernel, one lookup each; maps the VM's run left
//! alone are not read. Every entry of every map is compared as well, so
//! that a change the kernel made alone is found too: every
//! [`Differ::full_every`] packets, after a packet with any difference or
//! with a helper the VM cannot reproduce, and at the end of the run.

mod bpffs;
mod compare;
mod error;
mod report;
mod source;
pub mod tc;

pub use error::DiffError;

use std::collections::BTreeMap;

use kernel::clock::{Clock, SLOTS};
use kernel::{KernelObject, MapInfo, ProgInfo};
use runtime::{Hook, PacketMeta};

pub use compare::{Difference, hex_diff};
pub use report::{DiffSummary, Divergence, NotComparable};

/// How one packet went.
#[derive(Clone, Debug)]
pub enum Comparison {
    Same,
    Diverged(Divergence),
    NotComparable(NotComparable),
}

/// How a VM map is compared with its kernel twin.
enum Pairing {
    /// Same key/value bytes on both sides.
    Bytes(MapInfo),
    /// Not compared, with the reason (reported in the summary).
    Skipped(String),
}

/// The interface index both sides see packets arrive on (loopback: the
/// kernel's test run receives on it).
const LOOPBACK: u32 = 1;

/// The largest packet a tc test run takes: a page less `NET_SKB_PAD` and
/// `skb_shared_info` (`NET_IP_ALIGN` is 0 on x86-64).
const SKB_TEST_MAX: usize = 4096 - 64 - 320;
/// The largest XDP test-run packet: 3520 linear bytes and `MAX_SKB_FRAGS`
/// pages.
const XDP_TEST_MAX: usize = 3520 + 17 * 4096;

/// Differential runs of this process, for unique pin directories.
static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Both engines, loaded with the same object, ready for packets.
pub struct Differ {
    hook: Hook,
    kobj: KernelObject,
    prog: ProgInfo,
    maps: Vec<Pairing>,
    /// The shared clock, when a program reads one.
    clock: Option<Clock>,
    /// Where maps pinned by name go for this run (removed on drop, after
    /// the kernel object).
    _pin_root: bpffs::PinRoot,
    /// Random numbers handed to both sides (xorshift64 state).
    rng: u64,
    xdp: bool,
    summary: DiffSummary,
    keep: usize,
    /// Per map: the VM state its changes are measured from (compared maps
    /// a program may write).
    trackers: Vec<Option<maps::Tracker>>,
    /// Packets since the maps were last compared in full, and how many may
    /// pass between full comparisons.
    since_full: u64,
    full_every: u64,
    /// The last packet compared (index, length), for the final comparison.
    last: Option<(u64, usize)>,
    /// The first packet since the last full comparison that had something
    /// the VM cannot reproduce, and what.
    uncertain_since_full: Option<(u64, String)>,
}

/// Maps with more entries are never read whole from the kernel (about
/// half a microsecond an entry, 25 s for 50 million): their full
/// comparisons look up the entries the VM holds.
const FULL_LIMIT: u32 = 1 << 20;

/// The keys of a VM map's entries (arrays: the non-zero ones).
fn vm_keys(m: &maps::Map) -> Vec<Vec<u8>> {
    let entries = match m.map_type() {
        maps::MapType::Array | maps::MapType::PercpuArray => m.entries_skipping_zeros().0,
        _ => m.entries(),
    };
    entries.into_iter().map(|(k, _)| k).collect()
}

/// Full map comparisons cost about this many packets' worth of entries
/// each (at least): sparser for larger maps.
const FULL_EVERY_MIN: u64 = 64;

/// Runs the calling thread on CPU 0 only, so the kernel's per-CPU map
/// slots and `bpf_get_smp_processor_id` match the VM's CPU 0.
fn pin_to_cpu0() -> Result<(), DiffError> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(0, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
            return Err(DiffError::PinCpu(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

impl Differ {
    /// Loads the object of `hook` into the kernel as well (`object` is its
    /// ELF bytes, `name` its name), gives programs that read the clock a
    /// shared one, and copies the VM's map contents into the kernel's maps.
    /// `keep`: divergences kept in full for the report.
    pub fn new(hook: Hook, object: &[u8], name: &str, keep: usize) -> Result<Differ, DiffError> {
        let possible = kernel::possible_cpus();
        if let Some(m) = hook.maps().iter().find(|m| m.ncpus() as usize != possible) {
            return Err(DiffError::Cpus {
                map: m.name().to_string(),
                vm: m.ncpus() as usize,
                kernel: possible,
            });
        }
        pin_to_cpu0()?;
        let mut notes = Vec::new();
        let mut opts = kernel::load_options(hook.object(), hook.maps());
        // Maps pinned by name go to a directory of this run's own, not to
        // /sys/fs/bpf where a running program may share them.
        let pin_root = bpffs::PinRoot::new(&format!(
            "sluice-diff-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ))?;
        notes.extend(pin_root.note.clone());
        opts.pin_root = Some(pin_root.path.clone());
        let mut kobj = match KernelObject::load(object, name, &opts) {
            Ok(k) => k,
            // Another program of the object may be what the kernel refuses:
            // try the one under test alone (tail calls into the others then
            // fail in the kernel only, and the comparison shows it).
            Err(all) => {
                let mut alone = opts.clone();
                alone.only = vec![hook.program().name.clone()];
                let Ok(k) = KernelObject::load(object, name, &alone) else {
                    return Err(all.into());
                };
                notes.push(format!(
                    "the kernel refused the whole object, so only {} was loaded: {}",
                    hook.program().name,
                    all.to_string().lines().next().unwrap_or_default()
                ));
                k
            }
        };
        // BPF_PROG_TEST_RUN refuses devmap and cpumap entry programs: the
        // kernel runs a plain-XDP copy of their instructions.
        kobj.plain_xdp();
        let clock = kobj.share_clock()?;
        if kobj
            .plain_xdp_copies()
            .iter()
            .any(|p| *p == hook.program().name)
        {
            notes.push(format!(
                "{} is a {} entry program, which the kernel's test run refuses: the kernel \
                 ran a copy of its instructions loaded as a plain XDP program",
                hook.program().name,
                if hook.program().section.contains("cpumap") {
                    "cpumap"
                } else {
                    "devmap"
                }
            ));
        }
        let prog = kobj.program(&hook.program().name)?;
        let kmaps = kobj.maps()?;
        let maps = hook
            .maps()
            .iter()
            .map(|m| pair(m, &kmaps))
            .collect::<Vec<_>>();
        let xdp = hook.kind().is_xdp();
        let mut d = Differ {
            hook,
            kobj,
            prog,
            maps,
            clock,
            _pin_root: pin_root,
            rng: 0x5eed_d1ff_5eed_d1ff,
            xdp,
            summary: DiffSummary {
                notes,
                ..DiffSummary::default()
            },
            keep,
            trackers: Vec::new(),
            since_full: 0,
            full_every: FULL_EVERY_MIN,
            last: None,
            uncertain_since_full: None,
        };
        let mut entries = 0u64;
        for (i, p) in d.maps.iter().enumerate() {
            match p {
                Pairing::Skipped(why) => {
                    d.summary
                        .maps_not_compared
                        .insert(d.hook.maps()[i].name().to_string(), why.clone());
                }
                Pairing::Bytes(k) if k.max_entries > FULL_LIMIT => {
                    d.summary.notes.push(format!(
                        "map {} has {} entries: it is compared at the entries the VM changed \
                         and, in full comparisons, at the entries the VM holds (non-zero), \
                         not read whole from the kernel",
                        k.name, k.max_entries
                    ));
                }
                Pairing::Bytes(k) => entries += u64::from(k.max_entries),
            }
        }
        // A full comparison reads every entry of every map: spread its cost
        // over as many packets as a map of 64 entries per packet would.
        d.full_every = (entries / FULL_EVERY_MIN).max(FULL_EVERY_MIN);
        // The kernel's maps are new: arrays are zeros (global data was
        // loaded with the VM's bytes), the others empty.
        for i in 0..d.maps.len() {
            d.sync(i, true)?;
        }
        d.trackers = d
            .maps
            .iter()
            .zip(d.hook.maps())
            .map(|(p, m)| match p {
                Pairing::Bytes(_) if !m.is_frozen() => m.track(),
                _ => None,
            })
            .collect();
        Ok(d)
    }

    /// Packets between full comparisons of the maps.
    pub fn full_every(&self) -> u64 {
        self.full_every
    }

    /// Sets the packets between full comparisons of the maps (1: after
    /// every packet).
    pub fn set_full_every(&mut self, packets: u64) {
        self.full_every = packets.max(1);
    }

    /// The VM side (for map updates before the run, and reports).
    pub fn hook(&self) -> &Hook {
        &self.hook
    }

    pub fn kernel_object(&self) -> &KernelObject {
        &self.kobj
    }

    /// Copies every compared VM map into its kernel twin.
    pub fn sync_all(&mut self) -> Result<(), DiffError> {
        for i in 0..self.maps.len() {
            self.sync(i, false)?;
        }
        Ok(())
    }

    /// Copies VM map `i` into its kernel twin; `fresh`: the kernel's map
    /// is as created (arrays all zeros), so zero entries need no writes.
    fn sync(&self, i: usize, fresh: bool) -> Result<(), DiffError> {
        let Pairing::Bytes(k) = &self.maps[i] else {
            return Ok(());
        };
        let vm = &self.hook.maps()[i];
        if vm.is_frozen() {
            // .rodata: loaded with the same bytes and frozen on both sides.
            return Ok(());
        }
        let is_array = matches!(
            vm.map_type(),
            maps::MapType::Array | maps::MapType::PercpuArray
        );
        if is_array {
            if !fresh {
                // Only the entries that differ are written.
                let mut ignored = Vec::new();
                let keys = if k.max_entries > FULL_LIMIT {
                    compare::map_keys(vm, k, &vm_keys(vm), &mut ignored)
                } else {
                    compare::map(vm, k, &mut ignored)
                };
                let keys = keys.map_err(|()| DiffError::KernelMap(vm.name().to_string()))?;
                return self.resync_keys(i, &keys);
            }
            // Entries never written are zeros on both sides.
            for (key, value) in vm.entries_skipping_zeros().0 {
                k.update(&key, &value, 0)?;
            }
            return Ok(());
        }
        let want: BTreeMap<Vec<u8>, Vec<u8>> = vm.entries().into_iter().collect();
        if !fresh {
            for key in k.keys()? {
                if !want.contains_key(&key) {
                    k.delete(&key)?;
                }
            }
        }
        for (key, value) in &want {
            k.update(key, value, 0)?;
        }
        Ok(())
    }

    /// Brings entries `keys` of kernel map `i` to the VM's values (arrays;
    /// other maps are copied whole, their keys being exact only there).
    fn resync_keys(&self, i: usize, keys: &[Vec<u8>]) -> Result<(), DiffError> {
        let Pairing::Bytes(k) = &self.maps[i] else {
            return Ok(());
        };
        let vm = &self.hook.maps()[i];
        if !matches!(
            vm.map_type(),
            maps::MapType::Array | maps::MapType::PercpuArray
        ) {
            return self.sync(i, false);
        }
        for key in keys {
            if let Ok(value) = vm.user_lookup(key) {
                k.update(key, &value, 0)?;
            }
        }
        Ok(())
    }

    /// Compares the maps after a packet: the entries the VM changed, or
    /// every entry (`full`, or when the changed ones differ). Returns the
    /// differing keys by map (`None`: the map could not be read), and
    /// whether this was a periodic full comparison (one that may find what
    /// earlier packets changed).
    #[allow(clippy::type_complexity)]
    fn compare_maps(
        &mut self,
        mut full: bool,
        diffs: &mut Vec<Difference>,
    ) -> (Vec<(usize, Option<Vec<Vec<u8>>>)>, bool) {
        let maps = self.hook.maps();
        let changes: Vec<Option<maps::Changes>> = self
            .trackers
            .iter_mut()
            .zip(maps)
            .map(|(t, m)| t.as_mut().map(|t| m.changes(t)))
            .collect();
        self.since_full += 1;
        let periodic = !full && self.since_full >= self.full_every;
        full |= periodic;
        if !full {
            let mut found = Vec::new();
            for (i, p) in self.maps.iter().enumerate() {
                let Pairing::Bytes(k) = p else { continue };
                let differs = match &changes[i] {
                    None => false,
                    Some(maps::Changes::Keys(keys)) if keys.is_empty() => false,
                    Some(maps::Changes::Keys(keys)) => {
                        compare::map_keys(&maps[i], k, keys, &mut found)
                            .map_or(true, |d| !d.is_empty())
                    }
                    Some(maps::Changes::All) => {
                        compare::map(&maps[i], k, &mut found).map_or(true, |d| !d.is_empty())
                    }
                };
                if differs {
                    // Compare everything, to list and resync all of it.
                    full = true;
                    break;
                }
            }
            if !full {
                return (Vec::new(), false);
            }
        }
        self.since_full = 0;
        self.summary.full_map_comparisons += 1;
        let mut differing = Vec::new();
        for (i, p) in self.maps.iter().enumerate() {
            let Pairing::Bytes(k) = p else { continue };
            let compared = if k.max_entries > FULL_LIMIT {
                compare::map_keys(&maps[i], k, &vm_keys(&maps[i]), diffs)
            } else {
                compare::map(&maps[i], k, diffs)
            };
            match compared {
                Ok(keys) if keys.is_empty() => {}
                Ok(keys) => differing.push((i, Some(keys))),
                Err(()) => differing.push((i, None)),
            }
        }
        (differing, periodic)
    }

    /// Brings the kernel's maps back to the VM's state where they differ.
    fn resync(&self, differing: &[(usize, Option<Vec<Vec<u8>>>)]) -> Result<(), DiffError> {
        for (i, keys) in differing {
            match keys {
                Some(keys) => self.resync_keys(*i, keys)?,
                None => self.sync(*i, false)?,
            }
        }
        Ok(())
    }

    /// Compares every entry of every map if some packets went by since the
    /// last full comparison: a difference found is a divergence at the last
    /// packet. [`Differ::into_summary`] does it.
    pub fn finish(&mut self) {
        let Some((index, len)) = self.last else {
            return;
        };
        if self.since_full == 0 {
            return;
        }
        let since = (index + 1).saturating_sub(self.since_full);
        self.since_full = self.full_every; // forces the full comparison
        let mut diffs = Vec::new();
        let (differing, _) = self.compare_maps(true, &mut diffs);
        if diffs.is_empty() {
            return;
        }
        if let Err(e) = self.resync(&differing) {
            diffs.push(Difference::Resync {
                error: e.to_string(),
            });
        }
        if let Some((at, why)) = self.uncertain_since_full.take() {
            let reason = format!("after packet {at}: {why}");
            self.summary.not_comparable += 1;
            *self
                .summary
                .not_comparable_reasons
                .entry(reason.clone())
                .or_default() += 1;
            if self.summary.first_not_comparable.len() < self.keep {
                self.summary.first_not_comparable.push(NotComparable {
                    packet: index,
                    len,
                    reason,
                });
            }
            return;
        }
        self.summary.divergences += 1;
        if self.summary.first.len() < self.keep {
            self.summary.first.push(Divergence {
                packet: index,
                len,
                differences: diffs,
                since_packet: Some(since),
            });
        }
    }

    /// Runs packet number `index`, which arrived at `timestamp_ns`, through
    /// both sides and compares.
    pub fn packet(&mut self, index: u64, timestamp_ns: u64, frame: &[u8]) -> Comparison {
        self.summary.packets += 1;
        let verdict = self.compare(index, timestamp_ns, frame);
        match &verdict {
            Comparison::Same => self.summary.compared += 1,
            Comparison::Diverged(d) => {
                self.summary.compared += 1;
                self.summary.divergences += 1;
                if self.summary.first.len() < self.keep {
                    self.summary.first.push(d.clone());
                }
            }
            Comparison::NotComparable(n) => {
                self.summary.not_comparable += 1;
                *self
                    .summary
                    .not_comparable_reasons
                    .entry(n.reason.clone())
                    .or_default() += 1;
                if self.summary.first_not_comparable.len() < self.keep {
                    self.summary.first_not_comparable.push(n.clone());
                }
            }
        }
        verdict
    }

    fn next_random(&mut self) -> u32 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x >> 32) as u32
    }

    fn compare(&mut self, index: u64, timestamp_ns: u64, frame: &[u8]) -> Comparison {
        let not_comparable = |reason: String| {
            Comparison::NotComparable(NotComparable {
                packet: index,
                len: frame.len(),
                reason,
            })
        };
        if frame.len() < 14 {
            // bpf_test_init refuses anything shorter than an Ethernet header.
            return not_comparable(
                "the kernel's test run needs at least 14 bytes (an Ethernet header)".into(),
            );
        }
        // The clock reads the packet's arrival time, one nanosecond more per
        // reading, as the VM's simulated clock does.
        let (mut ns, mut randoms) = (Vec::new(), Vec::new());
        if self.clock.is_some() {
            ns = (0..SLOTS as u64).map(|i| timestamp_ns + i).collect();
            randoms = (0..SLOTS).map(|_| self.next_random()).collect();
        }
        if let Some(c) = &self.clock
            && let Err(e) = c.set(&ns, &randoms)
        {
            return not_comparable(format!("setting the shared clock failed: {e}"));
        }
        let ctx = compare::ctx_in(self.xdp, frame.len(), LOOPBACK, timestamp_ns);
        let input = kernel::testrun::RunInput {
            data: frame,
            ctx: Some(&ctx),
            ctx_out: ctx.len(),
            repeat: 1,
            data_out: true,
            ..Default::default()
        };
        let kout = match kernel::testrun::run(self.prog.fd, &input) {
            Ok(o) => o,
            Err(e) => {
                // Refused before the program ran: the VM does not run either,
                // so both sides keep the same maps.
                let why = match (self.xdp, e.kind) {
                    (false, kernel::ErrorKind::Invalid) if frame.len() > SKB_TEST_MAX => {
                        format!(" (tc test runs take at most {SKB_TEST_MAX} bytes)")
                    }
                    (true, _) if frame.len() > XDP_TEST_MAX => format!(
                        " (XDP test runs take at most {XDP_TEST_MAX} bytes: a page and 17 fragments)"
                    ),
                    _ => String::new(),
                };
                return not_comparable(format!(
                    "the kernel's test run refused the packet: {e}{why}"
                ));
            }
        };
        let mut uncertain: Vec<String> = Vec::new();
        let kernel_used = match &self.clock {
            Some(c) => match c.used() {
                Ok(u) => u,
                Err(e) => return not_comparable(format!("reading the shared clock failed: {e}")),
            },
            None => (0, 0),
        };
        if kernel_used.0 as usize > SLOTS || kernel_used.1 as usize > SLOTS {
            uncertain.push(format!(
                "the program read the clock or random numbers more than {SLOTS} times"
            ));
        }
        if self.clock.is_some() {
            let sim = &mut self.hook.env_mut().sim;
            sim.replay_ns = ns.into();
            sim.replay_u32 = randoms.into();
        }
        let meta = PacketMeta {
            ifindex: LOOPBACK,
            rx_queue: 0,
            timestamp_ns,
            egress_ifindex: 0,
            dev_addr: [0; 6],
            dev_broadcast: [0; 6],
        };
        let mut diffs = Vec::new();
        match self.hook.run(frame, &meta) {
            Ok(out) => {
                compare::outcome(self.xdp, &out, &kout, &mut diffs);
            }
            Err(e) => {
                diffs.push(Difference::VmError {
                    error: e.to_string(),
                    kernel_retval: kout.retval,
                });
            }
        }
        let env = self.hook.env_mut();
        if self.clock.is_some() {
            let vm_used = (
                SLOTS - env.sim.replay_ns.len(),
                SLOTS - env.sim.replay_u32.len(),
            );
            env.sim.replay_ns.clear();
            env.sim.replay_u32.clear();
            if (vm_used.0, vm_used.1) != (kernel_used.0 as usize, kernel_used.1 as usize) {
                diffs.push(Difference::HelperCalls {
                    detail: format!(
                        "clock readings / random numbers: VM {}/{}, kernel {}/{}",
                        vm_used.0, vm_used.1, kernel_used.0, kernel_used.1
                    ),
                });
            }
        }
        // An LRU eviction removes different entries on the two sides: entries
        // the VM's run did not touch.
        let mut evicted = false;
        for name in env.unreproducible.drain(..) {
            evicted |= name == runtime::LRU_EVICTION;
            uncertain.push(format!(
                "{name}: the VM cannot reproduce what the kernel does"
            ));
        }
        self.last = Some((index, frame.len()));
        // Packets the VM and the kernel saw differently, or with an
        // eviction, compare every entry.
        let since = index.saturating_sub(self.since_full);
        let (differing, periodic) = self.compare_maps(!diffs.is_empty() || evicted, &mut diffs);
        let pending = if self.since_full == 0 {
            self.uncertain_since_full.take()
        } else {
            None
        };
        if diffs.is_empty() {
            if let (None, Some(u)) = (&self.uncertain_since_full, uncertain.first()) {
                self.uncertain_since_full = Some((index, u.clone()));
            }
            return Comparison::Same;
        }
        // A periodic full comparison's differences may come from an earlier
        // packet that had something the VM cannot reproduce.
        if periodic
            && uncertain.is_empty()
            && let Some((at, why)) = pending
        {
            uncertain.push(format!("after packet {at}: {why}"));
        }
        // Bring the kernel back to the VM's state, so the next packet
        // starts from the same maps again.
        if let Err(e) = self.resync(&differing) {
            diffs.push(Difference::Resync {
                error: e.to_string(),
            });
        }
        if !uncertain.is_empty() {
            return not_comparable(uncertain.join("; "));
        }
        // A periodic full comparison may find what an earlier packet did.
        Comparison::Diverged(Divergence {
            packet: index,
            len: frame.len(),
            differences: diffs,
            since_packet: (periodic && since < index).then_some(since),
        })
    }

    /// Totals so far.
    pub fn summary(&self) -> &DiffSummary {
        &self.summary
    }

    /// The totals, after the final comparison ([`Differ::finish`]).
    pub fn into_summary(mut self) -> DiffSummary {
        self.finish();
        std::mem::take(&mut self.summary)
    }
}

/// Finds the kernel twin of VM map `m` and how to compare them.
fn pair(m: &maps::Map, kmaps: &[MapInfo]) -> Pairing {
    use maps::MapType as T;
    let Some(k) = kmaps.iter().find(|k| kernel::same_map(&k.name, m.name())) else {
        return Pairing::Skipped("libbpf did not create it in the kernel".into());
    };
    match m.map_type() {
        T::ProgArray => Pairing::Skipped(
            "holds program references (ids differ between the VM and the kernel)".into(),
        ),
        T::ArrayOfMaps | T::HashOfMaps => Pairing::Skipped(
            "holds map references (ids differ between the VM and the kernel)".into(),
        ),
        T::Xskmap => {
            Pairing::Skipped("holds AF_XDP sockets, which user space cannot read back".into())
        }
        T::StackTrace | T::CgroupArray | T::SkStorage => Pairing::Skipped(
            m.map_type()
                .absent_reason()
                .unwrap_or("holds kernel objects")
                .into(),
        ),
        T::Ringbuf | T::PerfEventArray | T::Queue | T::Stack => Pairing::Skipped(
            "has no entries user space can read back without consuming them".into(),
        ),
        _ if k.key_size != m.spec().key_size || k.user_value_len() != m.user_value_len() => {
            Pairing::Skipped(format!(
                "key/value sizes differ: kernel {}/{}, VM {}/{}",
                k.key_size,
                k.user_value_len(),
                m.spec().key_size,
                m.user_value_len()
            ))
        }
        _ => Pairing::Bytes(k.clone()),
    }
}
