//! A tc configuration as the packet pipeline's hook: each packet arrives
//! at one device's clsact hook (ingress or egress), runs its filters and
//! actions, and what mirred (or a classifier's program) sends elsewhere
//! goes through the target device's own hook in turn, as in the kernel,
//! to a depth of 4 (`MIRRED_NEST_LIMIT`: deeper, the packet is dropped).
//! Packets that leave a hook alive are the outcome's clones, by device.

use std::collections::BTreeMap;

use runtime::{
    Cloned, Outcome, PacketHook, PacketMeta, Redirect, RedirectTarget, SiblingError, SkbFields,
    TcAction, Verdict,
};
use vm::{Stats, VmError};

use crate::action::Emitted;
use crate::config::{ClsactHook, Config};
use crate::control::Control;
use crate::skb::Skb;

/// The kernel's limit on mirred redirects inside redirects.
const MIRRED_NEST_LIMIT: u32 = 4;

/// Where packets went besides the arrival hook's verdict, by (device,
/// hook).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Packets that left a device's hook alive (out of its egress or up
    /// its ingress).
    pub delivered: BTreeMap<(String, ClsactHook), u64>,
    /// Packets a device's hook dropped or took (a redirect: it goes on
    /// from there, counted again).
    pub consumed: BTreeMap<(String, ClsactHook), u64>,
    /// Packets dropped past the nesting limit.
    pub too_deep: u64,
}

/// A configuration running packets that arrive at `dev`'s `hook`.
pub struct Runner {
    config: Config,
    dev: String,
    hook: ClsactHook,
    ifindex: u32,
    sent: Sent,
    packet: Vec<u8>,
    clones: Vec<Cloned>,
    skb: SkbFields,
    stats: Stats,
    /// The packet time of the packet running (policers' clock).
    now: u64,
    /// Packets arrive at the device whose index their metadata gives
    /// (ports of a datapath), not at one device.
    by_port: bool,
}

impl Runner {
    /// Packets arrive at `dev`'s `hook`; `dev` needs no qdisc (without
    /// one every packet goes on unmatched).
    pub fn new(mut config: Config, dev: &str, hook: ClsactHook) -> Runner {
        config.actions.find_links_down();
        // (No device for a runner whose packets arrive by port.)
        let ifindex = if dev.is_empty() {
            0
        } else {
            config.devices.index(dev)
        };
        Runner {
            config,
            dev: dev.to_string(),
            hook,
            ifindex,
            sent: Sent::default(),
            packet: Vec::new(),
            clones: Vec::new(),
            skb: SkbFields::default(),
            stats: Stats::default(),
            now: 0,
            by_port: false,
        }
    }

    /// Packets arrive at `hook` of the device their metadata's `ifindex`
    /// names (the configuration's [`Devices`](crate::Devices) must hold
    /// the ports' real indexes): a datapath's ports, each with its own
    /// filters.
    pub fn at_ports(config: Config, hook: ClsactHook) -> Runner {
        let mut r = Runner::new(config, "", hook);
        r.by_port = true;
        r
    }

    /// The arrival device's index (the pipeline's `ifindex` should be it).
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn into_config(self) -> Config {
        self.config
    }

    pub fn sent(&self) -> &Sent {
        &self.sent
    }

    /// Runs one frame at the arrival hook; what the hook decided, the skb
    /// as the actions left it.
    pub fn classify(&mut self, frame: &[u8], tstamp: u64) -> (crate::Classification, Skb) {
        self.now = tstamp;
        // The last packet's buffer, refilled (no allocation per packet).
        let buffer = std::mem::take(&mut self.packet);
        let mut skb = Skb::from_frame_in(buffer, frame, self.ifindex).at(tstamp);
        skb.vlan_in_meta = self.hook == ClsactHook::Ingress;
        let out = self.config.classify(&self.dev, self.hook, &mut skb);
        (out, skb)
    }

    /// Takes a packet an action sent to another device through that
    /// device's hook, and on; the packet as it left that hook alive, if
    /// it did (what it sent on is delivered in turn, into `clones`).
    fn deliver(&mut self, e: Emitted, depth: u32) -> Option<Vec<u8>> {
        if depth > MIRRED_NEST_LIMIT {
            self.sent.too_deep += 1;
            return None;
        }
        let hook = if e.ingress {
            ClsactHook::Ingress
        } else {
            ClsactHook::Egress
        };
        let mut skb = Skb::from_frame(&e.frame, e.ifindex).at(self.now);
        skb.vlan_in_meta = e.vlan_in_meta;
        let out = self.config.classify(&e.dev, hook, &mut skb);
        let key = (e.dev.clone(), hook);
        let alive = !consumed(out.verdict);
        *if alive {
            self.sent.delivered.entry(key)
        } else {
            self.sent.consumed.entry(key)
        }
        .or_default() += 1;
        for next in out.emitted {
            let (ifindex, ingress) = (next.ifindex, next.ingress);
            if let Some(packet) = self.deliver(next, depth + 1) {
                self.clones.push(Cloned {
                    ifindex,
                    ingress,
                    packet,
                });
            }
        }
        alive.then_some(skb.data)
    }
}

/// Whether a hook's result ends the packet there.
fn consumed(verdict: TcAction) -> bool {
    // A redirect takes the packet on: it is delivered from there.
    matches!(
        verdict,
        TcAction::Shot | TcAction::Stolen | TcAction::Queued | TcAction::Trap | TcAction::Redirect
    )
}

impl PacketHook for Runner {
    fn run(&mut self, packet: &[u8], meta: &PacketMeta) -> Result<Outcome<'_>, VmError> {
        if self.by_port && meta.ifindex != self.ifindex {
            self.ifindex = meta.ifindex;
            self.dev = self.config.devices.name(meta.ifindex);
        }
        let (mut out, skb) = self.classify(packet, meta.timestamp_ns);
        self.clones.clear();
        // A program's redirect takes the packet itself (the last thing
        // sent): the verdict stays `redirect` if it leaves the target's
        // hook alive, else it is what that hook did to it.
        let mut verdict = out.verdict;
        let mut redirect = None;
        self.packet = skb.data;
        if verdict == TcAction::Redirect
            && let Some(e) = out.emitted.pop()
        {
            let target = RedirectTarget::Device {
                ifindex: e.ifindex,
                ingress: e.ingress,
            };
            match self.deliver(e, 1) {
                Some(p) => {
                    self.packet = p;
                    redirect = Some(Redirect { target, map: None });
                }
                None => verdict = TcAction::Stolen,
            }
        }
        for e in out.emitted {
            let (ifindex, ingress) = (e.ifindex, e.ingress);
            if let Some(packet) = self.deliver(e, 1) {
                self.clones.push(Cloned {
                    ifindex,
                    ingress,
                    packet,
                });
            }
        }
        self.skb = SkbFields {
            mark: skb.mark,
            priority: skb.priority,
            tc_index: u32::from(skb.tc_index),
            tc_classid: out.classid,
            ..SkbFields::default()
        };
        Ok(Outcome {
            r0: Control::Act(verdict).code() as i64 as u64,
            verdict: Verdict::Tc(verdict),
            packet: &self.packet,
            meta: &[],
            frags: &[],
            redirect,
            stats: &self.stats,
            trace: &[],
            clones: &self.clones,
            skb: Some(&self.skb),
            followup: None,
        })
    }

    fn sibling(&self, _cpu: u32) -> Result<Runner, SiblingError> {
        Err(SiblingError::OneThread(
            "a tc configuration runs on one thread (its counters and \
             policers are shared by every packet)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmdline::ShowOptions;

    fn udp_frame() -> Vec<u8> {
        let mut f = vec![0u8; 14 + 28];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[14 + 9] = 17;
        f
    }

    #[test]
    fn mirred_goes_through_the_target_hook_and_loops_stop_at_the_limit() {
        let mut c = Config::default();
        c.run_batch(
            "qdisc add dev v0 clsact\n\
             qdisc add dev v1 clsact\n\
             filter add dev v0 ingress prio 1 u32 match u32 0 0 action mirred egress mirror dev v1\n\
             filter add dev v1 egress prio 1 u32 match ip protocol 6 0xff action mirred egress redirect dev v1",
            ShowOptions::default(),
        )
        .unwrap();
        let mut r = Runner::new(c, "v0", ClsactHook::Ingress);
        let meta = PacketMeta::default();
        let v1 = r.config().devices.get("v1").unwrap();
        let o = r.run(&udp_frame(), &meta).unwrap();
        // Not TCP: v1's egress lets the copy out; the packet goes on.
        assert_eq!(o.verdict, Verdict::Tc(TcAction::Pipe));
        assert_eq!(o.clones.len(), 1);
        assert_eq!((o.clones[0].ifindex, o.clones[0].ingress), (v1, false));
        // TCP: v1's egress redirects to itself, again and again.
        let mut tcp = udp_frame();
        tcp[14 + 9] = 6;
        let o = r.run(&tcp, &meta).unwrap();
        assert!(o.clones.is_empty());
        let s = r.sent();
        assert_eq!(s.too_deep, 1);
        assert_eq!(s.delivered[&("v1".to_string(), ClsactHook::Egress)], 1);
        assert_eq!(s.consumed[&("v1".to_string(), ClsactHook::Egress)], 4);
    }
}
