//! The megaflow cache in the kernel (`--offload xdp`, the OVS-eBPF
//! paper's datapath on XDP): `programs/tools/switch_xdp.c` sits on every
//! port in front of the AF_XDP sockets, parses the same flow key as
//! [`crate::flow::extract`] for the frames it can (Ethernet, one VLAN tag,
//! unfragmented IPv4 with its ports, other ethertypes) and looks it up under
//! each mask in use; a hit is dropped, sent back (`XDP_TX`) or redirected
//! to the output port through a devmap without leaving the kernel, a miss
//! goes up to the user-space switch.
//!
//! [`XdpFlows`] is the datapaths' [`Offload`]: the megaflows whose actions
//! the program can carry out (drop, or a single output) are put into its
//! hash map under their mask's index; their counters sit in an mmapped
//! array that the datapaths read without a system call. The ports'
//! counters of the frames the program forwarded are pulled into the
//! switch's ([`XdpOffload::pull_ports`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use datapath::redirect::OwnProgram;
use kernel::{KernelObject, MapInfo};

use crate::core::Core;
use crate::dpif::{Counts, Megaflow, Offload};
use crate::error::SwitchError;
use crate::flow::{PackedKey, slot};
use crate::odp::DpAction;
use crate::pmd::PortRef;

/// The key words the program parses (the rest are zero for its frames).
const KEY_WORDS: usize = 6;
const MAX_MASKS: usize = 32;
const MAX_FLOWS: u32 = 65536;
const MAX_PORTS: usize = 64;
/// A port's sockets are at `xsks[position * QUEUE_STRIDE + queue]`.
const QUEUE_STRIDE: u32 = 16;
const BPF_NOEXIST: u64 = 1;

const ACT_DROP: u32 = 1;
const ACT_TX: u32 = 2;
const ACT_REDIRECT: u32 = 3;

/// The loaded program; the datapath attaches it to the ports.
pub struct XdpOffload {
    _object: KernelObject,
    prog_fd: i32,
    xsks: MapInfo,
    port_stats: MapInfo,
    flows: Arc<XdpFlows>,
    /// Per port slot: the counts already added to the switch's ports.
    pulled: Mutex<Vec<XdpPortCounts>>,
    ports: Vec<PortRef>,
}

/// One port's counters in the program (summed over the CPUs).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct XdpPortCounts {
    /// Frames forwarded or dropped in the kernel.
    pub hits: u64,
    pub hit_bytes: u64,
    /// Frames sent up to the user-space switch.
    pub misses: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
}

/// What the kernel fast path did over a run.
#[derive(Clone, Debug, Default)]
pub struct OffloadReport {
    pub hits: u64,
    pub misses: u64,
    /// Megaflows in the kernel now, and the masks they use.
    pub megaflows: usize,
    pub masks: usize,
}

impl XdpOffload {
    /// Loads the program for `ports` (in the order the datapath opens
    /// them).
    pub fn load(ports: &[PortRef]) -> Result<XdpOffload, SwitchError> {
        if ports.len() > MAX_PORTS {
            return Err(SwitchError::OffloadTooManyPorts {
                max: MAX_PORTS,
                given: ports.len(),
            });
        }
        let bytes = programs::tool("switch_xdp").ok_or(SwitchError::OffloadNotBuilt)?;
        let object = KernelObject::load(bytes, "switch_xdp", &kernel::LoadOptions::default())
            .map_err(SwitchError::OffloadLoad)?;
        let prog_fd = object
            .program("sluice_switch")
            .map_err(SwitchError::OffloadMap)?
            .fd;
        let maps = object.maps().map_err(SwitchError::OffloadMap)?;
        let map = |name: &str| {
            maps.iter()
                .find(|m| m.name == name)
                .cloned()
                .ok_or_else(|| SwitchError::OffloadNoMap(name.to_string()))
        };
        let (port_map, egress) = (map("ports")?, map("egress")?);
        for (i, p) in ports.iter().enumerate() {
            let mut value = Vec::with_capacity(16);
            for v in [p.port_no, i as u32, i as u32 * QUEUE_STRIDE, 0] {
                value.extend_from_slice(&v.to_le_bytes());
            }
            let e = |source| SwitchError::OffloadPort {
                port: p.port_no,
                source,
            };
            port_map
                .update(&p.ifindex.to_le_bytes(), &value, 0)
                .map_err(e)?;
            egress
                .update(&p.port_no.to_le_bytes(), &p.ifindex.to_le_bytes(), 0)
                .map_err(e)?;
        }
        let stats = map("stats")?;
        let flows = XdpFlows {
            ports: ports.to_vec(),
            stats: StatsView::map(&stats)?,
            flows: map("flows")?,
            masks: map("masks")?,
            n_masks: map("n_masks")?,
            state: Mutex::new(State::default()),
        };
        Ok(XdpOffload {
            prog_fd,
            xsks: map("xsks")?,
            port_stats: map("port_stats")?,
            flows: Arc::new(flows),
            pulled: Mutex::new(vec![XdpPortCounts::default(); ports.len()]),
            ports: ports.to_vec(),
            _object: object,
        })
    }

    /// The program for the datapath to attach in place of its own.
    pub fn own_program(&self) -> OwnProgram {
        OwnProgram {
            prog_fd: self.prog_fd,
            xsks: self.xsks.clone(),
            stride: QUEUE_STRIDE,
        }
    }

    /// The datapaths' lower cache.
    pub fn flows(&self) -> Arc<dyn Offload> {
        self.flows.clone()
    }

    /// The counters of the port in slot `i`, summed over the CPUs.
    pub fn port_counts(&self, i: usize) -> Result<XdpPortCounts, SwitchError> {
        let v = self
            .port_stats
            .lookup(&(i as u32).to_le_bytes())
            .map_err(SwitchError::OffloadMap)?
            .unwrap_or_default();
        let mut c = XdpPortCounts::default();
        // Per CPU: five u64s.
        for cpu in v.chunks_exact(40) {
            let f = |n: usize| u64::from_le_bytes(cpu[n * 8..n * 8 + 8].try_into().unwrap());
            c.hits += f(0);
            c.hit_bytes += f(1);
            c.misses += f(2);
            c.tx_packets += f(3);
            c.tx_bytes += f(4);
        }
        Ok(c)
    }

    /// Adds what the program forwarded since the last pull to the switch's
    /// port counters (frames it sent up are counted by the switch itself).
    pub fn pull_ports(&self, core: &Core) {
        let table = core.port_table();
        let mut pulled = self.pulled.lock().unwrap_or_else(|p| p.into_inner());
        for (i, p) in self.ports.iter().enumerate() {
            let Ok(now) = self.port_counts(i) else {
                continue;
            };
            let was = std::mem::replace(&mut pulled[i], now);
            if let Some(c) = table.get(p.port_no) {
                let add = |a: &AtomicU64, n: u64| a.fetch_add(n, Ordering::Relaxed);
                add(&c.rx_packets, now.hits - was.hits);
                add(&c.rx_bytes, now.hit_bytes - was.hit_bytes);
                add(&c.tx_packets, now.tx_packets - was.tx_packets);
                add(&c.tx_bytes, now.tx_bytes - was.tx_bytes);
            }
        }
    }

    pub fn report(&self) -> OffloadReport {
        let mut r = OffloadReport::default();
        for i in 0..self.ports.len() {
            if let Ok(c) = self.port_counts(i) {
                r.hits += c.hits;
                r.misses += c.misses;
            }
        }
        let state = self.flows.lock();
        r.megaflows = state.flows;
        r.masks = state.masks.iter().flatten().count();
        r
    }
}

/// The program's flow tables, shared by the datapaths.
pub struct XdpFlows {
    ports: Vec<PortRef>,
    flows: MapInfo,
    masks: MapInfo,
    n_masks: MapInfo,
    stats: StatsView,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Each mask index's mask and how many megaflows use it.
    masks: Vec<Option<([u64; KEY_WORDS], u32)>>,
    free_stats: Vec<u32>,
    next_stats: u32,
    flows: usize,
}

impl XdpFlows {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the program does for `mf`: (kind, port, its slot); None when
    /// it cannot do it.
    fn action(&self, mf: &Megaflow) -> Option<(u32, u32, u32)> {
        let in_port = slot::IN_PORT.get(&mf.key) as u32;
        match mf.actions.as_slice() {
            [] => Some((ACT_DROP, 0, 0)),
            [DpAction::Output(p)] if *p == in_port => Some((ACT_TX, 0, 0)),
            [DpAction::Output(p)] => {
                let at = self.ports.iter().position(|r| r.port_no == *p)?;
                Some((ACT_REDIRECT, *p, at as u32))
            }
            _ => None,
        }
    }

    /// The mask index for `mask`, taken once more (a new one if needed).
    fn take_mask(&self, state: &mut State, mask: [u64; KEY_WORDS]) -> Option<u32> {
        if let Some(i) = state
            .masks
            .iter()
            .position(|m| m.is_some_and(|(w, _)| w == mask))
        {
            state.masks[i].as_mut()?.1 += 1;
            return Some(i as u32);
        }
        let i = match state.masks.iter().position(Option::is_none) {
            Some(i) => i,
            None if state.masks.len() < MAX_MASKS => {
                state.masks.push(None);
                state.masks.len() - 1
            }
            None => return None,
        };
        self.masks
            .update(&(i as u32).to_le_bytes(), &words(&mask), 0)
            .ok()?;
        state.masks[i] = Some((mask, 1));
        self.n_masks
            .update(
                &0u32.to_le_bytes(),
                &(state.masks.len() as u32).to_le_bytes(),
                0,
            )
            .ok()?;
        Some(i as u32)
    }

    /// Gives mask index `i` back; the last user clears it.
    fn put_mask(&self, state: &mut State, i: u32) {
        let Some(Some((_, refs))) = state.masks.get_mut(i as usize) else {
            return;
        };
        *refs -= 1;
        if *refs > 0 {
            return;
        }
        state.masks[i as usize] = None;
        let _ = self
            .masks
            .update(&i.to_le_bytes(), &words(&[0; KEY_WORDS]), 0);
        while state.masks.last() == Some(&None) {
            state.masks.pop();
        }
        let _ = self.n_masks.update(
            &0u32.to_le_bytes(),
            &(state.masks.len() as u32).to_le_bytes(),
            0,
        );
    }
}

/// A handle: the mask index above the stats index.
fn handle(mask: u32, stats: u32) -> u32 {
    (mask << 16) | stats
}

fn parts(handle: u32) -> (u32, u32) {
    (handle >> 16, handle & 0xffff)
}

/// The program's flow key: mask index, padding, the masked words.
fn flow_key(mask: u32, key: &PackedKey) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + 8 * KEY_WORDS);
    k.extend_from_slice(&mask.to_le_bytes());
    k.extend_from_slice(&[0; 4]);
    k.extend_from_slice(&words(key[..KEY_WORDS].try_into().unwrap()));
    k
}

fn words(w: &[u64; KEY_WORDS]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Offload for XdpFlows {
    fn install(&self, mf: &Megaflow) -> Option<(u32, Counts)> {
        // The program's frames have zeros past its words: a megaflow that
        // wants anything else there is not for them.
        if mf.key[KEY_WORDS..].iter().any(|&w| w != 0) {
            return None;
        }
        let (kind, port, out_slot) = self.action(mf)?;
        let mut state = self.lock();
        let mask = self.take_mask(&mut state, mf.mask[..KEY_WORDS].try_into().unwrap())?;
        let stats = match state.free_stats.pop() {
            Some(s) => s,
            None if state.next_stats < MAX_FLOWS => {
                state.next_stats += 1;
                state.next_stats - 1
            }
            None => {
                self.put_mask(&mut state, mask);
                return None;
            }
        };
        // The counters may hold a removed megaflow's: later counts are
        // taken from here.
        let base = self.stats.counts(stats);
        let mut value = Vec::with_capacity(16);
        for v in [kind, port, out_slot, stats] {
            value.extend_from_slice(&v.to_le_bytes());
        }
        // Another thread's datapath may have put the same megaflow there.
        if self
            .flows
            .update(&flow_key(mask, &mf.key), &value, BPF_NOEXIST)
            .is_err()
        {
            state.free_stats.push(stats);
            self.put_mask(&mut state, mask);
            return None;
        }
        state.flows += 1;
        Some((handle(mask, stats), base))
    }

    fn counts(&self, handle: u32) -> Counts {
        self.stats.counts(parts(handle).1)
    }

    fn remove(&self, handle: u32, mf: &Megaflow) -> Counts {
        let (mask, stats) = parts(handle);
        let mut state = self.lock();
        let _ = self.flows.delete(&flow_key(mask, &mf.key));
        let last = self.stats.counts(stats);
        state.free_stats.push(stats);
        state.flows -= 1;
        self.put_mask(&mut state, mask);
        last
    }
}

/// The program's per-megaflow counters, mapped into this process.
struct StatsView {
    base: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is shared memory that lives as long as the view;
// it is only read, with atomic loads (the program adds atomically).
unsafe impl Send for StatsView {}
// SAFETY: as above: shared reads of atomics only.
unsafe impl Sync for StatsView {}

impl StatsView {
    fn map(info: &MapInfo) -> Result<StatsView, SwitchError> {
        if info.value_size != 16 || info.max_entries != MAX_FLOWS {
            return Err(SwitchError::OffloadStatsShape);
        }
        let len = (16 * MAX_FLOWS as usize).next_multiple_of(4096);
        // SAFETY: mapping a BPF_F_MMAPABLE array map's values read-only.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                info.fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(SwitchError::OffloadCounters(std::io::Error::last_os_error()));
        }
        Ok(StatsView { base, len })
    }

    fn counts(&self, i: u32) -> Counts {
        assert!(i < MAX_FLOWS);
        // SAFETY: entry i's two u64s lie inside the mapping, 8-aligned.
        let at = |n: usize| unsafe {
            (*(self.base as *const AtomicU64).add(2 * i as usize + n)).load(Ordering::Relaxed)
        };
        Counts {
            packets: at(0),
            bytes: at(1),
        }
    }
}

impl Drop for StatsView {
    fn drop(&mut self) {
        // SAFETY: unmapping what `map` mapped.
        unsafe { libc::munmap(self.base, self.len) };
    }
}
