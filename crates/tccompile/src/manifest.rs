//! Which counter slot is which: slot N of `rule_stats` is the Nth rule
//! of the manifest, slot N of `action_stats` its Nth action. Rules are
//! numbered in the order the chains list them (chain, priority, then the
//! kind's own order); an action shared by rules (one index in `tc
//! actions`) has one slot, as it has one set of counters in tc.

use tc::{ActionRef, ClsactHook};

/// The rule counters' map: per slot `{ u64 packets; u64 bytes; }`.
pub const RULE_MAP: &str = "rule_stats";
/// The action counters' map: per slot `{ u64 packets; u64 bytes; u64 drops; }`.
pub const ACTION_MAP: &str = "action_stats";

/// A rule's slot: where it is and how tc names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleSlot {
    pub chain: u32,
    pub prio: u16,
    /// `flower`, `u32` or `matchall`.
    pub kind: &'static str,
    /// The rule's handle (u32: the knode's full handle).
    pub handle: u32,
    /// The rule as `tc filter show` words it (first line).
    pub text: String,
}

/// An action's slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionSlot {
    pub action: ActionRef,
}

/// The slots of one compiled hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub dev: String,
    pub hook: ClsactHook,
    pub rules: Vec<RuleSlot>,
    pub actions: Vec<ActionSlot>,
}

impl Manifest {
    /// The slot of an action, added when new.
    pub(crate) fn action_slot(&mut self, a: &ActionRef) -> u32 {
        match self.actions.iter().position(|s| s.action == *a) {
            Some(i) => i as u32,
            None => {
                self.actions.push(ActionSlot { action: a.clone() });
                (self.actions.len() - 1) as u32
            }
        }
    }

    /// Adds a rule's slot.
    pub(crate) fn rule_slot(&mut self, r: RuleSlot) -> u32 {
        self.rules.push(r);
        (self.rules.len() - 1) as u32
    }

    /// The manifest as text: one line a slot.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "# {} {}: map {RULE_MAP} (packets, bytes)\n",
            self.dev,
            self.hook.name()
        );
        for (i, r) in self.rules.iter().enumerate() {
            s += &format!(
                "{i}\tchain {} pref {} {} handle {:#x}\t{}\n",
                r.chain, r.prio, r.kind, r.handle, r.text
            );
        }
        s += &format!("# map {ACTION_MAP} (packets, bytes, drops)\n");
        for (i, a) in self.actions.iter().enumerate() {
            s += &format!("{i}\taction {} index {}\n", a.action.kind, a.action.index);
        }
        s
    }
}
