//! Reads actions from `tc` words, as iproute2's `parse_action` does:
//! `action KIND ARGS` (or `actions ...`, `action CONTROL` for gact), one
//! after another until a word no action takes. Each new action goes into
//! the table; `action KIND index N` alone binds the existing action N.

use crate::act;
use crate::action::{Action, ActionRef, Actions, KINDS, Kind, Mirred, Random, kind_name};
use crate::control::{Control, parse_control};
use crate::error::TcError;

/// Parses the actions at the start of `words` (each introduced by
/// `action` or `actions`), adds them to `table` (a rule then holds a
/// reference each), and says how many words they took. On an error the
/// actions read so far are released again: nothing is half-added.
pub fn parse_actions(
    words: &[&str],
    table: &mut Actions,
) -> Result<(Vec<ActionRef>, usize), TcError> {
    if let Some(e) = crate::control::bad_goto(words) {
        return Err(e.into());
    }
    let mut refs = Vec::new();
    let mut at = 0;
    while matches!(words.get(at), Some(&"action" | &"actions")) {
        at += 1;
        match parse_one(&words[at..], table) {
            Ok((r, used)) => {
                at += used;
                refs.push(r);
            }
            Err(e) => {
                table.release(&refs);
                return Err(e);
            }
        }
    }
    Ok((refs, at))
}

/// One action (the words after `action`).
fn parse_one(words: &[&str], table: &mut Actions) -> Result<(ActionRef, usize), TcError> {
    let Some(&first) = words.first() else {
        return Err("\"action\" needs an action kind after it".into());
    };
    // `action KIND index N`: the existing action N, shared.
    if let [kind, "index", n, ..] = words
        && let Some(kind) = kind_name(kind)
        && let Ok(index) = n.parse::<u32>()
    {
        let r = ActionRef { kind, index };
        if table.bind(&r).is_ok() {
            return Ok((r, 3));
        }
    }
    let (kind, control, mut at) = match first {
        "gact" => {
            let (control, used) = parse_control(&words[1..]).unwrap_or((Control::OK, 0));
            (Kind::Gact { random: None }, control, 1 + used)
        }
        "mirred" => parse_mirred(words)?,
        "police" => {
            let (p, c, used) = act::police::parse(words)?;
            (Kind::Police(Box::new(p)), c, used)
        }
        "skbedit" => {
            let (e, c, used) = act::skbedit::parse(words)?;
            (Kind::Skbedit(e), c, used)
        }
        "pedit" => {
            let (p, c, used) = act::pedit::parse(words)?;
            (Kind::Pedit(p), c, used)
        }
        "vlan" => {
            let (v, c, used) = act::vlan::parse(words)?;
            (Kind::Vlan(v), c, used)
        }
        "csum" => {
            let (cs, c, used) = act::csum::parse(words)?;
            (Kind::Csum(cs), c, used)
        }
        w if parse_control(words).is_some() => {
            let _ = w;
            let (control, used) = parse_control(words).expect("checked");
            (Kind::Gact { random: None }, control, used)
        }
        other => {
            return Err(format!(
                "unknown action \"{other}\" (sluice has {})",
                KINDS.join(", ")
            )
            .into());
        }
    };
    let mut kind = kind;
    let mut control = control;
    let mut index = None;
    loop {
        match words.get(at..).unwrap_or(&[]) {
            ["random", how, rest @ ..] if matches!(kind, Kind::Gact { .. }) => {
                let determ = match *how {
                    "determ" => true,
                    "netrand" => false,
                    w => return Err(format!("random \"{w}\": determ or netrand").into()),
                };
                let (other, used) = parse_control(rest).ok_or_else(|| {
                    format!("random {how}: an action (drop, pass, ...) must follow")
                })?;
                let every: u32 = rest
                    .get(used)
                    .and_then(|v| v.parse().ok())
                    .filter(|&v| v > 0)
                    .ok_or_else(|| {
                        format!("random {how}: a value of 1 or more must follow the action")
                    })?;
                kind = Kind::Gact {
                    random: Some(Random {
                        determ,
                        other,
                        every,
                    }),
                };
                at += 2 + used + 1;
            }
            ["index", n, ..] => {
                let n: u32 = n
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("index \"{n}\": a number from 1"))?;
                index = Some(n);
                at += 2;
            }
            [w, ..] if matches!(kind, Kind::Mirred(_)) && parse_control(&words[at..]).is_some() => {
                let _ = w;
                let (c, used) = parse_control(&words[at..]).expect("checked");
                control = c;
                at += used;
            }
            _ => break,
        }
    }
    let mut action = Action::new(index.unwrap_or(0), kind, control);
    action.refs = 1;
    action.binds = 1;
    let r = table.add(action)?;
    Ok((r, at))
}

/// `mirred {egress|ingress} {redirect|mirror} dev DEV`.
fn parse_mirred(words: &[&str]) -> Result<(Kind, Control, usize), TcError> {
    let (ingress, mirror, dev) = match words {
        [_, dir, how, "dev", dev, ..] => {
            let ingress = match *dir {
                "egress" => false,
                "ingress" => true,
                w => return Err(format!("mirred \"{w}\": egress or ingress").into()),
            };
            let mirror = match *how {
                "mirror" => true,
                "redirect" => false,
                w => return Err(format!("mirred {dir} \"{w}\": redirect or mirror").into()),
            };
            (ingress, mirror, *dev)
        }
        _ => {
            return Err("mirred needs {egress|ingress} {redirect|mirror} dev DEV".into());
        }
    };
    let control = if mirror {
        Control::PIPE
    } else {
        Control::Act(runtime::TcAction::Stolen)
    };
    Ok((
        Kind::Mirred(Mirred {
            ingress,
            mirror,
            dev: dev.to_string(),
        }),
        control,
        5,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_until_a_word_no_action_takes() {
        let mut t = Actions::default();
        let words = [
            "action", "drop", "action", "gact", "pass", "random", "determ", "drop", "10",
            "actions", "mirred", "egress", "mirror", "dev", "v1", "index", "7", "flowid", "1:1",
        ];
        let (refs, used) = parse_actions(&words, &mut t).unwrap();
        assert_eq!(used, 17);
        assert_eq!(refs.len(), 3);
        assert_eq!(t.get(&refs[0]).unwrap().control, Control::SHOT);
        let g = t.get(&refs[1]).unwrap();
        assert_eq!(g.control, Control::OK);
        assert!(matches!(
            g.kind,
            Kind::Gact {
                random: Some(Random {
                    determ: true,
                    every: 10,
                    ..
                })
            }
        ));
        let m = t.get(&refs[2]).unwrap();
        assert_eq!((m.index, m.control), (7, Control::PIPE));
        // Binding an existing action by index shares it.
        let (again, used) = parse_actions(&["action", "mirred", "index", "7"], &mut t).unwrap();
        assert_eq!((again[0].clone(), used), (refs[2].clone(), 4));
        assert_eq!(t.get(&refs[2]).unwrap().binds, 2);
        // A new action at an index in use is refused.
        let e = parse_actions(&["action", "gact", "drop", "index", "1"], &mut t).unwrap_err();
        assert!(e.to_string().contains("exists already"), "{e}");
    }

    #[test]
    fn bad_actions_are_named() {
        let mut t = Actions::default();
        for (w, why) in [
            (
                &["action", "nat", "ingress", "1.1.1.1"][..],
                "unknown action \"nat\"",
            ),
            (
                &["action", "police", "rate", "1mbit"][..],
                "'burst' requires 'rate'",
            ),
            (
                &["action", "mirred", "sideways", "redirect", "dev", "x"][..],
                "egress or ingress",
            ),
            (
                &["action", "gact", "drop", "random", "determ", "pass", "0"][..],
                "1 or more",
            ),
            (&["action"][..], "needs an action kind"),
        ] {
            let e = parse_actions(w, &mut t).unwrap_err();
            assert!(e.to_string().contains(why), "{w:?}: {e}");
        }
    }
}
