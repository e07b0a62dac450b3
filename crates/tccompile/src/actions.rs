//! A rule's actions, decided when compiling: gact and mirred return a
//! fixed control, so the walk `tc::Actions::exec` makes through a list
//! (pipe on, `jump N` from the start again, at most 32 jumps) is the same
//! for every packet. It is made here once, and the rule's code counts the
//! actions it ran, sends mirror copies, and ends with its result (and a
//! redirect). Everything else (police, pedit, gact's random
//! determination, `trap`, a redirect that does not end the list) is
//! refused by name.

use runtime::TcAction;
use tc::{ActionRef, Actions, Control, Kind};

use crate::manifest::Manifest;

/// `BPF_F_INGRESS`.
const F_INGRESS: u32 = 1;

/// What running one action does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Count action slot `slot` (a drop too when it returned `drop`).
    Count { slot: u32, drop: bool },
    /// Send a copy to a device (`bpf_clone_redirect`).
    Mirror { ifindex: u32, flags: u32 },
}

/// A rule's actions, run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    pub steps: Vec<Step>,
    pub control: Control,
    /// A redirect ending the list: ifindex and flags.
    pub redirect: Option<(u32, u32)>,
}

/// Where the compiler is (for messages and device indexes).
pub struct Cx<'a> {
    pub config: &'a tc::Config,
    pub opts: &'a crate::CompileOptions,
    pub manifest: Manifest,
    pub refused: Vec<String>,
}

impl Cx<'_> {
    fn ifindex(&self, dev: &str) -> Option<u32> {
        self.opts
            .ifindex
            .get(dev)
            .copied()
            .or_else(|| self.config.devices.get(dev))
    }

    /// Walks `list` as `tc::Actions::exec` would; `what` names the rule
    /// in refusals. `None`: refused (the reason is in `refused`).
    pub fn run(&mut self, what: &str, list: &[ActionRef]) -> Option<Run> {
        let table: &Actions = &self.config.actions;
        let mut run = Run {
            steps: Vec::new(),
            control: Control::OK,
            redirect: None,
        };
        // Check every action first (a refusal names each, run or not).
        let mut ok = true;
        for r in list {
            if let Err(e) = self.check(table, r) {
                self.refused.push(format!(
                    "{what}: action {} index {}: not compiled: {e}",
                    r.kind, r.index
                ));
                ok = false;
            }
        }
        if !ok {
            return None;
        }
        let mut ret = Control::OK;
        let mut skip = 0;
        let mut jumps_left = 32;
        'restart: loop {
            for r in list {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                let Some(a) = table.get(r) else {
                    run.control = Control::SHOT;
                    return Some(run);
                };
                ret = a.control;
                let slot = self.manifest.action_slot(r);
                run.steps.push(Step::Count {
                    slot,
                    drop: ret == Control::SHOT,
                });
                if let Kind::Mirred(m) = &a.kind {
                    let Some(ifindex) = self.ifindex(&m.dev) else {
                        self.refused.push(format!(
                            "{what}: action mirred index {}: not compiled: no ifindex for device {} (give one)",
                            r.index, m.dev
                        ));
                        return None;
                    };
                    let flags = if m.ingress { F_INGRESS } else { 0 };
                    if m.mirror {
                        run.steps.push(Step::Mirror { ifindex, flags });
                    } else {
                        run.redirect = Some((ifindex, flags));
                    }
                }
                if let Control::Jump(n) = ret {
                    jumps_left -= 1;
                    if n == 0 || n as usize > list.len() || jumps_left == 0 {
                        run.control = Control::OK;
                        return Some(run);
                    }
                    skip = n as usize;
                    continue 'restart;
                }
                if ret != Control::PIPE {
                    run.control = ret;
                    return Some(run);
                }
            }
            run.control = ret;
            return Some(run);
        }
    }

    /// Whether one action can be compiled.
    fn check(&self, table: &Actions, r: &ActionRef) -> Result<(), String> {
        let Some(a) = table.get(r) else {
            return Ok(());
        };
        if a.control == Control::Act(TcAction::Trap) {
            return Err("trap (a hardware offload control) has no eBPF equivalent".into());
        }
        match &a.kind {
            Kind::Gact { random: None } => Ok(()),
            Kind::Gact { random: Some(_) } => Err(
                "gact random determination counts or draws per action; the compiled program has no such state"
                    .into(),
            ),
            Kind::Mirred(m) => {
                if !m.mirror && a.control != Control::Act(TcAction::Stolen) {
                    return Err(format!(
                        "a redirect that returns {} (not stolen) does not end the packet's walk",
                        a.control.name()
                    ));
                }
                if self.opts.xdp && m.mirror {
                    return Err(
                        "mirror: XDP cannot send a copy (compile without the XDP program: --no-xdp)"
                            .into(),
                    );
                }
                if self.opts.xdp && m.ingress {
                    return Err("redirect to a device's ingress: XDP cannot (compile without the XDP program: --no-xdp)".into());
                }
                Ok(())
            }
            k => Err(format!("{} actions are not compiled", k.name())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tc::{ShowOptions, Skb};

    /// The walk made when compiling runs the actions `tc::Actions::exec`
    /// runs, as often, with the same result.
    #[test]
    fn the_walk_is_the_one_exec_makes() {
        for list in [
            "action pass",
            "action pipe action drop",
            "action pipe action pipe",
            "action gact jump 1 action drop action pass",
            "action gact jump 2 action drop action pass",
            "action gact jump 9 action drop",
            "action pipe action gact jump 1",
            "action continue action drop",
            "action gact goto chain 3 action drop",
            "action reclassify",
            "action mirred egress redirect dev v1",
        ] {
            let mut c = tc::Config::default();
            c.run_batch(
                &format!(
                    "qdisc add dev v0 clsact\nqdisc add dev v1 clsact\nfilter add dev v0 ingress prio 1 protocol all matchall {list}"
                ),
                ShowOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{list}: {e}"));
            let q = c.clsact("v0").unwrap();
            let f = &q.ingress.chain(0)[0];
            let m = f
                .classifier
                .as_any()
                .downcast_ref::<tc::Matchall>()
                .unwrap();
            let refs = m.rule().unwrap().3.to_vec();
            let opts = crate::CompileOptions::default();
            let mut cx = Cx {
                config: &c,
                opts: &opts,
                manifest: Manifest {
                    dev: "v0".into(),
                    hook: tc::ClsactHook::Ingress,
                    rules: Vec::new(),
                    actions: Vec::new(),
                },
                refused: Vec::new(),
            };
            let run = cx.run(list, &refs).unwrap();
            let mut table = c.actions.clone();
            let mut out = Vec::new();
            let control = table.exec(&refs, &mut Skb::from_frame(&[0; 60], 1), 1, &mut out);
            assert_eq!(run.control, control, "{list}");
            for (slot, s) in cx.manifest.actions.iter().enumerate() {
                let n = run
                    .steps
                    .iter()
                    .filter(|st| matches!(st, Step::Count { slot: x, .. } if *x == slot as u32))
                    .count() as u64;
                assert_eq!(
                    table.get(&s.action).unwrap().stats.packets,
                    n,
                    "{list}: slot {slot}"
                );
            }
            assert_eq!(run.redirect.is_some(), !out.is_empty(), "{list}");
        }
    }
}
