//! Actions, as the kernel's `tcf_action_exec` runs them: a rule's actions
//! in order, each counting the packet (bytes, packets, drops) and
//! returning a [`Control`]; `pipe` goes on to the next, `jump N` skips to
//! the Nth after it, anything else ends the list and is the rule's result.
//! Actions live in a table by kind and index (`tc actions`), so rules can
//! share one and its counters.

use std::collections::HashMap;

use runtime::TcAction;

use crate::act::{
    ActionHead, ActionStats, csum::Csum, pedit::Pedit, police::Police, skbedit::Skbedit, vlan::Vlan,
};
use crate::control::Control;
use crate::error::TcError;
use crate::skb::Skb;

/// gact's random determination: `random determ CONTROL N` gives every Nth
/// packet `other`; `random netrand CONTROL N` one packet in N on average
/// (a seeded generator: runs repeat).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Random {
    pub determ: bool,
    pub other: Control,
    pub every: u32,
}

/// Where mirred sends a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mirred {
    /// Into the port's ingress (else out of its egress).
    pub ingress: bool,
    /// A copy (mirror: the packet goes on) or the packet itself (redirect).
    pub mirror: bool,
    pub dev: String,
}

/// What an action does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The generic action: a control, maybe a random other one.
    Gact {
        random: Option<Random>,
    },
    Mirred(Mirred),
    Police(Box<Police>),
    Skbedit(Skbedit),
    Pedit(Pedit),
    Vlan(Vlan),
    Csum(Csum),
}

/// Every action kind sluice has, by its `tc` name.
pub const KINDS: [&str; 7] = [
    "gact", "mirred", "police", "skbedit", "pedit", "vlan", "csum",
];

/// The kind named `word`, as a `'static` name (for [`ActionRef`]).
pub fn kind_name(word: &str) -> Option<&'static str> {
    KINDS.iter().find(|k| **k == word).copied()
}

impl Kind {
    /// The kind's name in `tc` (`gact`, `mirred`, `police`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Gact { .. } => "gact",
            Kind::Mirred(_) => "mirred",
            Kind::Police(_) => "police",
            Kind::Skbedit(_) => "skbedit",
            Kind::Pedit(_) => "pedit",
            Kind::Vlan(_) => "vlan",
            Kind::Csum(_) => "csum",
        }
    }
}

/// One action: its kind, the control it returns, its counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    pub index: u32,
    pub kind: Kind,
    /// What it returns (mirred: `stolen` for a redirect, `pipe` for a
    /// mirror unless told otherwise).
    pub control: Control,
    pub stats: ActionStats,
    /// References held: one by each rule bound to it, one by the table
    /// when `tc actions add` made it on its own.
    pub refs: u32,
    /// Rules bound to it.
    pub binds: u32,
    /// Packets seen by a random determination.
    seen: u64,
    /// The netrand generator's state.
    rng: u64,
}

impl Action {
    pub fn new(index: u32, kind: Kind, control: Control) -> Action {
        Action {
            index,
            kind,
            control,
            stats: ActionStats::default(),
            refs: 0,
            binds: 0,
            seen: 0,
            rng: 0x9e37_79b9_7f4a_7c15 ^ u64::from(index),
        }
    }

    /// What a kind's `tc` text and JSON print of it beside the kind's own
    /// parameters.
    pub fn head(&self) -> ActionHead {
        ActionHead {
            index: self.index,
            control: self.control,
            refs: self.refs,
            binds: self.binds,
        }
    }

    /// Runs on `skb`; a packet mirred sends goes to `out` (unless its
    /// device is in `down`).
    fn act(
        &mut self,
        skb: &mut Skb,
        bytes: u64,
        out: &mut Vec<Emitted>,
        down: &std::collections::BTreeSet<String>,
    ) -> Control {
        self.stats.packets += 1;
        self.stats.bytes += bytes;
        let result = match &mut self.kind {
            Kind::Gact { random: None } => self.control,
            Kind::Gact {
                random: Some(r), ..
            } => {
                let r = *r;
                self.seen += 1;
                let pick = if r.determ {
                    self.seen.is_multiple_of(u64::from(r.every.max(1)))
                } else {
                    // xorshift64*: one packet in `every` on average.
                    self.rng ^= self.rng >> 12;
                    self.rng ^= self.rng << 25;
                    self.rng ^= self.rng >> 27;
                    let x = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
                    (x >> 32).is_multiple_of(u64::from(r.every.max(1)))
                };
                if pick { r.other } else { self.control }
            }
            // These count their own drops and overlimits, as the kernel's do.
            Kind::Police(p) => return p.act(bytes, skb.tstamp, self.control, &mut self.stats),
            Kind::Skbedit(e) => return e.act(skb, self.control, &mut self.stats),
            Kind::Pedit(p) => return p.act(skb, self.control, &mut self.stats),
            Kind::Vlan(v) => return v.act(skb, self.control, &mut self.stats),
            Kind::Csum(c) => return c.act(skb, self.control, &mut self.stats),
            Kind::Mirred(m) if down.contains(&m.dev) => {
                self.stats.overlimits += 1;
                return if m.mirror {
                    self.control
                } else {
                    Control::SHOT
                };
            }
            Kind::Mirred(m) => {
                out.push(Emitted {
                    dev: m.dev.clone(),
                    ifindex: 0,
                    ingress: m.ingress,
                    frame: skb.data.clone(),
                    vlan_in_meta: skb.vlan_in_meta,
                });
                self.control
            }
        };
        if result == Control::SHOT {
            self.stats.drops += 1;
        }
        result
    }
}

/// A packet an action or a program sent somewhere (mirred, bpf_redirect).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emitted {
    /// The device by name (mirred), or empty where only the index is known
    /// (a program's redirect) until the configuration names it.
    pub dev: String,
    /// Its index (0 until the configuration looks the name up).
    pub ifindex: u32,
    pub ingress: bool,
    pub frame: Vec<u8>,
    /// Whether the frame's outer VLAN tag is in the skb's metadata
    /// ([`Skb::vlan_in_meta`](crate::Skb::vlan_in_meta)).
    pub vlan_in_meta: bool,
}

/// An action named by kind and index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ActionRef {
    pub kind: &'static str,
    pub index: u32,
}

/// Every action of a configuration, by kind and index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Actions {
    /// Hashed: every matched rule looks its actions up here (a search
    /// tree's string compares grew with the table); listed sorted.
    table: HashMap<ActionRef, Action>,
    /// Devices whose link is down when the configuration runs: mirred
    /// sends them nothing ([`Actions::find_links_down`]).
    down: std::collections::BTreeSet<String>,
}

impl Actions {
    /// Looks up the link of every mirred target that is an interface of
    /// this namespace: one that is down (not up, or no carrier) gets
    /// nothing, as in the kernel (`tcf_mirred_act`: the action counts an
    /// overlimit; a redirect drops the packet, a mirror lets it go on).
    pub fn find_links_down(&mut self) {
        self.down = self
            .table
            .values()
            .filter_map(|a| match &a.kind {
                Kind::Mirred(m) if crate::devices::link_down(&m.dev) => Some(m.dev.clone()),
                _ => None,
            })
            .collect();
    }

    /// Adds `action` (index 0: the kind's next free index) and returns its
    /// reference; an index in use is refused.
    pub fn add(&mut self, mut action: Action) -> Result<ActionRef, TcError> {
        let kind = action.kind.name();
        if action.index == 0 {
            action.index = self.next_index(kind);
        }
        let r = ActionRef {
            kind,
            index: action.index,
        };
        if self.table.contains_key(&r) {
            return Err(TcError::ActionExists {
                kind,
                index: action.index,
            });
        }
        self.table.insert(r.clone(), action);
        Ok(r)
    }

    /// The kind's lowest unused index from 1.
    pub fn next_index(&self, kind: &'static str) -> u32 {
        (1..)
            .find(|&i| !self.table.contains_key(&ActionRef { kind, index: i }))
            .unwrap_or(u32::MAX)
    }

    pub fn get(&self, r: &ActionRef) -> Option<&Action> {
        self.table.get(r)
    }

    pub fn get_mut(&mut self, r: &ActionRef) -> Option<&mut Action> {
        self.table.get_mut(r)
    }

    /// Binds a rule to an existing action.
    pub fn bind(&mut self, r: &ActionRef) -> Result<(), TcError> {
        let a = self.table.get_mut(r).ok_or(TcError::NoAction {
            kind: r.kind,
            index: r.index,
        })?;
        a.refs += 1;
        a.binds += 1;
        Ok(())
    }

    /// A rule lets go of its actions: each one no one else holds goes.
    pub fn release(&mut self, refs: &[ActionRef]) {
        for r in refs {
            if let Some(a) = self.table.get_mut(r) {
                a.refs = a.refs.saturating_sub(1);
                a.binds = a.binds.saturating_sub(1);
                if a.refs == 0 {
                    self.table.remove(r);
                }
            }
        }
    }

    /// `tc actions del`: removes an action no rule is bound to.
    pub fn remove(&mut self, r: &ActionRef) -> Result<Action, TcError> {
        match self.table.get(r) {
            None => Err(TcError::NoAction {
                kind: r.kind,
                index: r.index,
            }),
            Some(a) if a.binds > 0 => Err(TcError::ActionBound {
                kind: r.kind,
                index: r.index,
                binds: a.binds,
            }),
            Some(_) => Ok(self.table.remove(r).expect("present")),
        }
    }

    /// Every action, by kind and index.
    pub fn iter(&self) -> impl Iterator<Item = &Action> {
        let mut all: Vec<(&ActionRef, &Action)> = self.table.iter().collect();
        all.sort_unstable_by(|a, b| a.0.cmp(b.0));
        all.into_iter().map(|(_, a)| a)
    }

    /// Runs `list` on `skb` as `tcf_action_exec` does; `bytes` is what
    /// each action counts (the kernel's `qdisc_pkt_len`). No actions: `ok`.
    /// `jump N` starts the list again with its first N actions skipped
    /// (the kernel's count is from the start, not from the jumping
    /// action); N of 0 or past the end, or 32 jumps in one packet, end
    /// the list with `ok`; `repeat` runs an action again, 32 times at most.
    pub fn exec(
        &mut self,
        list: &[ActionRef],
        skb: &mut Skb,
        bytes: u64,
        out: &mut Vec<Emitted>,
    ) -> Control {
        let mut ret = Control::OK;
        let mut skip = 0;
        let mut jumps_left = 32;
        'restart: loop {
            for r in list {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                let Some(a) = self.table.get_mut(r) else {
                    return Control::SHOT;
                };
                ret = a.act(skb, bytes, out, &self.down);
                let mut repeats_left = 32;
                while ret == Control::Act(TcAction::Repeat) {
                    repeats_left -= 1;
                    if repeats_left == 0 {
                        return Control::OK;
                    }
                    ret = a.act(skb, bytes, out, &self.down);
                }
                if let Control::Jump(n) = ret {
                    jumps_left -= 1;
                    if n == 0 || n as usize > list.len() || jumps_left == 0 {
                        return Control::OK;
                    }
                    skip = n as usize;
                    continue 'restart;
                }
                if ret != Control::PIPE {
                    return ret;
                }
            }
            return ret;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gact(actions: &mut Actions, c: Control) -> ActionRef {
        actions
            .add(Action::new(0, Kind::Gact { random: None }, c))
            .unwrap()
    }

    #[test]
    fn pipe_goes_on_jump_skips_and_the_last_result_stands() {
        let mut a = Actions::default();
        let mut skb = Skb::from_frame(&[0; 60], 1);
        let pipe = gact(&mut a, Control::PIPE);
        let jump = gact(&mut a, Control::Jump(3));
        let drop = gact(&mut a, Control::SHOT);
        let pass = gact(&mut a, Control::OK);
        let mut out = Vec::new();
        // pipe, jump 3 (from the start: over pipe, jump and drop), pass.
        let list = [pipe.clone(), jump.clone(), drop.clone(), pass.clone()];
        assert_eq!(a.exec(&list, &mut skb, 46, &mut out), Control::OK);
        assert_eq!(a.get(&drop).unwrap().stats.packets, 0);
        assert_eq!(a.get(&jump).unwrap().stats.packets, 1);
        assert_eq!(
            a.get(&pipe).unwrap().stats,
            ActionStats {
                bytes: 46,
                packets: 1,
                drops: 0,
                overlimits: 0
            }
        );
        // A list ending in pipe returns pipe; drop counts a drop.
        assert_eq!(
            a.exec(std::slice::from_ref(&pipe), &mut skb, 46, &mut out),
            Control::PIPE
        );
        assert_eq!(
            a.exec(&[pipe.clone(), drop.clone()], &mut skb, 46, &mut out),
            Control::SHOT
        );
        assert_eq!(a.get(&drop).unwrap().stats.drops, 1);
        // A jump past the end: ok.
        let far = gact(&mut a, Control::Jump(9));
        assert_eq!(a.exec(&[far, drop], &mut skb, 46, &mut out), Control::OK);
        assert_eq!(a.exec(&[], &mut skb, 46, &mut out), Control::OK);
    }

    #[test]
    fn determ_gives_every_nth_packet_the_other_control() {
        let mut a = Actions::default();
        let mut skb = Skb::from_frame(&[0; 60], 1);
        let r = a
            .add(Action::new(
                0,
                Kind::Gact {
                    random: Some(Random {
                        determ: true,
                        other: Control::SHOT,
                        every: 3,
                    }),
                },
                Control::OK,
            ))
            .unwrap();
        let got: Vec<Control> = (0..6)
            .map(|_| a.exec(std::slice::from_ref(&r), &mut skb, 1, &mut Vec::new()))
            .collect();
        use Control as C;
        assert_eq!(got, [C::OK, C::OK, C::SHOT, C::OK, C::OK, C::SHOT]);
    }

    #[test]
    fn indexes_are_unique_per_kind_and_used_actions_stay() {
        let mut a = Actions::default();
        let g = gact(&mut a, Control::OK);
        // Made on its own (`tc actions add`): the table holds a reference.
        a.get_mut(&g).unwrap().refs = 1;
        assert_eq!(g.index, 1);
        assert!(
            a.add(Action::new(1, Kind::Gact { random: None }, Control::OK))
                .is_err()
        );
        a.bind(&g).unwrap();
        assert!(a.remove(&g).unwrap_err().to_string().contains("bound to 1"));
        a.release(std::slice::from_ref(&g));
        // The table's reference keeps it after the rule went.
        assert!(a.remove(&g).is_ok());
        // An inline action (its rule's reference only) goes with the rule.
        let mut inline = Action::new(0, Kind::Gact { random: None }, Control::OK);
        inline.refs = 1;
        inline.binds = 1;
        let i = a.add(inline).unwrap();
        a.release(std::slice::from_ref(&i));
        assert!(a.get(&i).is_none());
    }
}
