//! matchall: one rule that every packet matches (the kernel's
//! `cls_matchall`): it counts the hit, sets the class and runs its
//! actions. A filter holds one rule; words and messages follow iproute2
//! 6.1's `f_matchall.c`, including its quirk that `skip_hw`/`skip_sw`
//! cannot end the command.

use serde_json::{Value, json};

use crate::action::{ActionRef, Actions};
use crate::action_parse::parse_actions;
use crate::action_show::{action_json, action_text};
use crate::argv::{get_u32, incomplete, matches};
use crate::classifier::{Classifier, Cx, Match};
use crate::error::TcError;
use crate::handle::{format_classid, parse_classid};
use crate::skb::Skb;

const SKIP_HW: u32 = 1;
const SKIP_SW: u32 = 2;

#[derive(Debug, Default)]
struct Rule {
    handle: u32,
    classid: u32,
    flags: u32,
    actions: Vec<ActionRef>,
    hits: u64,
}

/// A matchall filter (at most one rule).
#[derive(Debug, Default)]
pub struct Matchall {
    rule: Option<Rule>,
}

/// Whether `w` is a prefix of `word` (iproute2's `matches`).
fn parse_handle(h: &str) -> Result<u32, TcError> {
    get_u32(h, 0)
        .ok_or_else(|| TcError::Syntax(format!("Illegal handle \"{h}\", must be numeric.")))
}

impl Matchall {
    /// The rule, for readers (`tc compile`): handle, class, whether it is
    /// `skip_sw`, and its actions.
    pub fn rule(&self) -> Option<(u32, u32, bool, &[ActionRef])> {
        let r = self.rule.as_ref()?;
        Some((r.handle, r.classid, r.flags & SKIP_SW != 0, &r.actions))
    }

    /// Sets the rule's hit count (`rule hit`), counted elsewhere.
    pub fn set_hits(&mut self, hits: u64) {
        if let Some(r) = &mut self.rule {
            r.hits = hits;
        }
    }
}

impl Classifier for Matchall {
    fn kind(&self) -> &'static str {
        "matchall"
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }

    fn add(
        &mut self,
        handle: Option<&str>,
        args: &[&str],
        actions: &mut Actions,
    ) -> Result<(), TcError> {
        let handle = handle.map(parse_handle).transpose()?.unwrap_or(0);
        if self.rule.is_some() {
            return Err("RTNETLINK answers: File exists (a matchall filter holds one rule)".into());
        }
        let mut rule = Rule {
            // The kernel's default handle.
            handle: if handle == 0 { 1 } else { handle },
            ..Rule::default()
        };
        let mut at = 0;
        let fail = |rule: &Rule, actions: &mut Actions, e: TcError| {
            actions.release(&rule.actions);
            Err(e)
        };
        while at < args.len() {
            let w = args[at];
            if matches(w, "classid") || w == "flowid" {
                let Some(v) = args.get(at + 1) else {
                    return fail(&rule, actions, incomplete());
                };
                match parse_classid(v) {
                    Ok(c) => rule.classid = c,
                    Err(_) => return fail(&rule, actions, "Illegal \"classid\"".into()),
                }
                at += 2;
            } else if matches(w, "action") {
                if at + 1 >= args.len() {
                    return fail(&rule, actions, incomplete());
                }
                let (refs, used) = match parse_actions(&args[at..], actions) {
                    Ok(r) => r,
                    Err(e) => {
                        return fail(
                            &rule,
                            actions,
                            TcError::Syntax(format!("{e}\nIllegal \"action\"")),
                        );
                    }
                };
                rule.actions.extend(refs);
                at += used.max(1);
            } else if w == "skip_hw" || w == "skip_sw" {
                if at + 1 >= args.len() {
                    return fail(&rule, actions, incomplete());
                }
                rule.flags |= if w == "skip_hw" { SKIP_HW } else { SKIP_SW };
                at += 1;
            } else {
                return fail(&rule, actions, TcError::Syntax(format!("What is \"{w}\"?")));
            }
        }
        if rule.flags == SKIP_HW | SKIP_SW {
            return fail(
                &rule,
                actions,
                "skip_hw and skip_sw are mutually exclusive".into(),
            );
        }
        self.rule = Some(rule);
        Ok(())
    }

    fn delete(&mut self, handle: &str, actions: &mut Actions) -> Result<bool, TcError> {
        let h = parse_handle(handle)?;
        match &self.rule {
            Some(r) if r.handle == h => {
                actions.release(&r.actions);
                self.rule = None;
                Ok(true)
            }
            _ => Err(format!("Error: Filter with specified handle {handle} not found.").into()),
        }
    }

    fn classify(&mut self, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match> {
        let rule = self.rule.as_mut()?;
        if rule.flags & SKIP_SW != 0 {
            return None;
        }
        rule.hits += 1;
        let control = cx.exec(&rule.actions, skb);
        Some(Match {
            classid: rule.classid,
            control,
        })
    }

    fn show(&self, actions: &Actions, stats: bool) -> Vec<String> {
        let Some(r) = &self.rule else {
            return Vec::new();
        };
        let mut s = format!("handle 0x{:x} ", r.handle);
        if r.classid != 0 {
            s += &format!("flowid {} ", format_classid(r.classid));
        }
        if r.flags & SKIP_HW != 0 {
            s += "\n  skip_hw";
        }
        if r.flags & SKIP_SW != 0 {
            s += "\n  skip_sw";
        }
        // Nothing is ever offloaded.
        s += "\n  not_in_hw";
        if stats {
            s += &format!(" (rule hit {})", r.hits);
        }
        for (i, a) in r.actions.iter().enumerate() {
            if let Some(a) = actions.get(a) {
                s += &action_text(i + 1, a, stats);
            }
        }
        vec![s]
    }

    fn json(&self, actions: &Actions, stats: bool) -> Vec<Value> {
        let Some(r) = &self.rule else {
            return Vec::new();
        };
        let mut o = json!({ "handle": r.handle });
        if r.classid != 0 {
            o["flowid"] = json!(format_classid(r.classid));
        }
        if r.flags & SKIP_HW != 0 {
            o["skip_hw"] = json!(true);
        }
        if r.flags & SKIP_SW != 0 {
            o["skip_sw"] = json!(true);
        }
        o["not_in_hw"] = json!(true);
        if stats {
            o["rule_hit"] = json!(r.hits);
        }
        if !r.actions.is_empty() {
            let list: Vec<Value> = (r.actions.iter().enumerate())
                .filter_map(|(i, a)| actions.get(a).map(|a| action_json(i + 1, a, stats)))
                .collect();
            o["actions"] = Value::Array(list);
        }
        vec![o]
    }

    fn actions(&self) -> Vec<ActionRef> {
        self.rule.as_ref().map_or(Vec::new(), |r| r.actions.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClsactHook, Config, ShowOptions};

    #[test]
    fn every_packet_matches_and_counts() {
        let mut c = Config::default();
        let show = ShowOptions::default();
        c.run_batch(
            "qdisc add dev v0 clsact\n\
             qdisc add dev v1 clsact\n\
             filter add dev v0 ingress prio 3 matchall classid 1:7 action mirred egress mirror dev v1",
            show,
        )
        .unwrap();
        for _ in 0..3 {
            let out = c.classify("v0", ClsactHook::Ingress, &mut Skb::from_frame(&[0; 20], 1));
            assert_eq!((out.classid, out.emitted.len()), (0x1_0007, 1));
        }
        let text = c
            .run(
                &["-s", "filter", "show", "dev", "v0", "ingress"][1..],
                ShowOptions {
                    stats: true,
                    ..show
                },
            )
            .unwrap();
        assert!(
            text.contains("matchall chain 0 handle 0x1 flowid 1:7 \n  not_in_hw (rule hit 3)"),
            "{text}"
        );
        assert!(text.contains("Sent 18 bytes 3 pkt"), "{text}");
    }

    #[test]
    fn one_rule_a_filter_and_tc_refusals() {
        let mut m = Matchall::default();
        let mut a = Actions::default();
        let add = |m: &mut Matchall, a: &mut Actions, w: &str| {
            let w: Vec<&str> = w.split_whitespace().collect();
            m.add(None, &w, a)
        };
        assert!(
            add(&mut m, &mut a, "skip_sw")
                .unwrap_err()
                .to_string()
                .contains("not complete")
        );
        assert!(
            add(&mut m, &mut a, "skip_sw skip_hw classid 1:1")
                .unwrap_err()
                .to_string()
                .contains("mutually")
        );
        assert_eq!(
            add(&mut m, &mut a, "bogus").unwrap_err().to_string(),
            "What is \"bogus\"?"
        );
        assert!(add(&mut m, &mut a, "action drop classid zz").is_err());
        // Nothing was kept: the action of the refused rule is gone.
        assert_eq!(a.iter().count(), 0);
        add(&mut m, &mut a, "cl 1:2 action drop").unwrap();
        assert!(
            add(&mut m, &mut a, "")
                .unwrap_err()
                .to_string()
                .contains("File exists")
        );
        assert_eq!(m.delete("1", &mut a), Ok(true));
        assert_eq!(a.iter().count(), 0);
    }
}
