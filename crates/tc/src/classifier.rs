//! What every classifier gives the chain walk: run on a packet, a
//! classifier finds its first matching rule, runs that rule's actions, and
//! says what they returned; a rule whose actions say `continue` (or a
//! classifier with no match) lets the walk go on to the next filter.

use crate::action::{Actions, Emitted};
use crate::control::Control;
use crate::error::TcError;
use crate::skb::Skb;

/// One filter (a classifier at a chain, priority and protocol), as a
/// block's chains hold it.
#[derive(Debug)]
pub struct Filter {
    pub prio: u16,
    pub protocol: u16,
    pub classifier: Box<dyn Classifier>,
}

/// A matching rule's class and its actions' result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Match {
    /// The rule's `classid`/`flowid` (0: none given).
    pub classid: u32,
    pub control: Control,
}

/// What a classifier may use while classifying.
pub struct Cx<'a> {
    pub actions: &'a mut Actions,
    /// Packets actions sent elsewhere (mirred).
    pub emitted: &'a mut Vec<Emitted>,
    /// What each action counts for this packet.
    pub bytes: u64,
}

impl Cx<'_> {
    /// Runs a rule's actions (`tcf_exts_exec`).
    pub fn exec(&mut self, list: &[crate::action::ActionRef], skb: &mut Skb) -> Control {
        self.actions.exec(list, skb, self.bytes, self.emitted)
    }
}

/// One classifier instance (the kernel's `tcf_proto`): every rule added at
/// one chain, priority and protocol.
pub trait Classifier: Send + std::fmt::Debug {
    /// The kind's name in `tc` (`u32`, `flower`, `matchall`, `bpf`).
    fn kind(&self) -> &'static str;

    /// The instance as its own type (the fast path and `tc compile` read
    /// a kind's rules through it).
    fn as_any(&self) -> &dyn std::any::Any;

    /// The instance as its own type, to change or run: the fast path runs
    /// the rule its lookup found through it, `tc compile` writes counters
    /// read from elsewhere; `None` for kinds that allow neither.
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }

    /// Adds a rule: `handle` as given after `handle` (the kind reads it),
    /// `args` the words after the kind's name (`match ... flowid 1:1
    /// action drop`); its actions go into `actions`. A bad rule changes
    /// nothing (its actions are not added either) and says why, naming
    /// the word.
    fn add(
        &mut self,
        handle: Option<&str>,
        args: &[&str],
        actions: &mut Actions,
    ) -> Result<(), TcError>;

    /// `tc filter change|replace`: changes the rule `handle` names (as
    /// the kernel's `change` of an existing handle); `None` when the
    /// command should add the rule instead (no such rule and `create`,
    /// which replace allows and change does not; or a kind that changes
    /// no rule in place).
    fn change(
        &mut self,
        _handle: Option<&str>,
        _args: &[&str],
        _actions: &mut Actions,
        _create: bool,
    ) -> Option<Result<(), TcError>> {
        None
    }

    /// Removes the rule `handle` (and releases its actions' references);
    /// `Ok(true)` when no rule is left.
    fn delete(&mut self, handle: &str, actions: &mut Actions) -> Result<bool, TcError>;

    /// The first match whose actions do not say `continue`, if any.
    fn classify(&mut self, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match>;

    /// The rules as `tc filter show` prints them, one entry per rule
    /// (its lines after `filter parent ... pref N PROTO KIND chain C`);
    /// `stats` adds counters as `tc -s` does.
    fn show(&self, actions: &Actions, stats: bool) -> Vec<String>;

    /// The rules as `tc -j filter show` gives them (the `options` object
    /// of each).
    fn json(&self, actions: &Actions, stats: bool) -> Vec<serde_json::Value>;

    /// Every action reference the rules hold (to release them).
    fn actions(&self) -> Vec<crate::action::ActionRef>;

    /// The devices rules may name (`indev`), told before each `add`.
    fn set_devices(&mut self, _devices: &crate::devices::Devices) {}
}
