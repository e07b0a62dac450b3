//! cls_bpf: eBPF programs as classifiers (the kernel's `cls_bpf`), run in
//! sluice's VM (the JIT where it can) after sluice's verifier accepted
//! them. Words and messages follow iproute2 6.1's `f_bpf.c`: `bpf obj FILE
//! [sec NAME] [da|direct-action] [skip_hw|skip_sw] [classid ID] [action
//! ...]`, the section `classifier` unless named. A filter's programs run
//! newest first (the kernel adds each at the head of its list):
//!
//! - direct-action: the program's return is the verdict (`ok`, `shot`,
//!   `stolen`, `trap`, `redirect`, `reclassify`; any other value goes on to
//!   the next program); its class is the rule's major with the minor the
//!   program wrote to `skb->tc_classid`;
//! - classid mode: 0 is no match, -1 the rule's class, any other value the
//!   class itself; then the rule's actions decide.

use std::path::Path;

use runtime::{Hook, Image, LoadOptions, PacketMeta, RedirectTarget, TcAction, Verdict};
use serde_json::{Value, json};

use crate::action::{ActionRef, Actions, Emitted};
use crate::action_parse::parse_actions;
use crate::action_show::{action_json, action_text};
use crate::argv::{get_u32, incomplete, matches};
use crate::classifier::{Classifier, Cx, Match};
use crate::control::Control;
use crate::error::TcError;
use crate::handle::{format_classid, parse_classid};
use crate::skb::Skb;

const SKIP_HW: u32 = 1;
const SKIP_SW: u32 = 2;
/// The kernel's program name length (`BPF_OBJ_NAME_LEN` less the NUL).
const NAME_LEN: usize = 15;

struct Prog {
    handle: u32,
    /// `FILE:[SECTION]`, as tc names it.
    bpf_name: String,
    /// The program's function name (as the kernel keeps it, cut to 15).
    name: String,
    /// sluice's id for the loaded program (the kernel's differs).
    id: u32,
    jited: bool,
    direct: bool,
    classid: u32,
    flags: u32,
    actions: Vec<ActionRef>,
    hook: Hook,
}

impl std::fmt::Debug for Prog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bpf {} handle {:#x}", self.bpf_name, self.handle)
    }
}

/// A bpf filter: its programs, newest first.
#[derive(Debug, Default)]
pub struct Bpf {
    progs: Vec<Prog>,
    next_id: u32,
}

fn parse_handle(h: &str) -> Result<u32, TcError> {
    get_u32(h, 0).ok_or_else(|| TcError::Syntax(format!("Illegal \"handle\" \"{h}\"")))
}

/// Loads the program of `section` from `file` for a tc hook and verifies
/// it.
fn load(file: &str, section: &str) -> Result<(Hook, String, bool), TcError> {
    let unable = "\nUnable to load program";
    // Bounded: `obj /dev/zero` is refused, not read without end.
    let data = capture::read_whole(std::path::Path::new(file), capture::Limit::OBJECT, None)
        .map_err(|e| format!("Cannot initialize ELF context! ({e}){unable}"))?;
    let object = obj::Object::parse(&data).map_err(|e| format!("{file}: {e}{unable}"))?;
    let index = object
        .programs
        .iter()
        .position(|p| p.section == section)
        .ok_or_else(|| format!("object file doesn't contain sec {section}{unable}"))?;
    let name = object.programs[index].name.clone();
    if object.programs[index].kind != obj::ProgramKind::SchedCls {
        return Err(format!(
            "{file}: sec {section} is no tc classifier (section tc or classifier){unable}"
        )
        .into());
    }
    let image =
        Image::load(object, &LoadOptions::default()).map_err(|e| format!("{file}: {e}{unable}"))?;
    let mut hook = Hook::new(image, index, 0).map_err(|e| format!("{file}: {e}{unable}"))?;
    let jited = hook.enable_jit().is_ok();
    hook.verify_for_run().map_err(|e| format!("{e}{unable}"))?;
    Ok((hook, name, jited))
}

impl Bpf {
    fn parse(
        &mut self,
        handle: u32,
        args: &[&str],
        actions: &mut Actions,
    ) -> Result<Prog, TcError> {
        let mut w = args;
        if let [first, rest @ ..] = w
            && matches(first, "run")
        {
            w = rest;
        }
        let (mut file, mut section) = (None, "classifier".to_string());
        let (mut direct, mut classid, mut flags) = (false, 0, 0);
        let mut refs: Vec<ActionRef> = Vec::new();
        let fail = |refs: &[ActionRef], actions: &mut Actions, e: TcError| {
            actions.release(refs);
            Err(e)
        };
        while let [word, rest @ ..] = w {
            let word = *word;
            let value = rest.first().copied();
            match word {
                "obj" | "object-file" => {
                    let Some(v) = value else {
                        return fail(&refs, actions, incomplete());
                    };
                    file = Some(v.to_string());
                    w = &rest[1..];
                    continue;
                }
                "sec" | "section" => {
                    let Some(v) = value else {
                        return fail(&refs, actions, incomplete());
                    };
                    section = v.to_string();
                    w = &rest[1..];
                    continue;
                }
                "verbose" => {}
                "da" | "direct-action" => direct = true,
                "skip_hw" => flags |= SKIP_HW,
                "skip_sw" => flags |= SKIP_SW,
                "bytecode" | "bytecode-file" | "object-pinned" | "pinned" | "fd" | "export" => {
                    return fail(
                        &refs,
                        actions,
                        TcError::Syntax(format!(
                            "{word}: sluice's cls_bpf runs eBPF objects (obj FILE [sec NAME]); \
                             classic bytecode and pinned programs are not supported"
                        )),
                    );
                }
                "police" => {
                    return fail(&refs, actions, "police: use \"action police ...\"".into());
                }
                w2 if matches(w2, "classid") || w2 == "flowid" => {
                    let Some(v) = value else {
                        return fail(&refs, actions, incomplete());
                    };
                    match parse_classid(v) {
                        Ok(c) => classid = c,
                        Err(_) => return fail(&refs, actions, "Illegal \"classid\"".into()),
                    }
                    w = &rest[1..];
                    continue;
                }
                w2 if matches(w2, "action") => {
                    match parse_actions(w, actions) {
                        Ok((r, used)) => {
                            refs.extend(r);
                            w = &w[used.max(1)..];
                        }
                        Err(e) => {
                            return fail(
                                &refs,
                                actions,
                                TcError::Syntax(format!("{e}\nIllegal \"action\"")),
                            );
                        }
                    }
                    continue;
                }
                other => {
                    return fail(
                        &refs,
                        actions,
                        TcError::Syntax(format!("What is \"{other}\"?")),
                    );
                }
            }
            w = rest;
        }
        let Some(file) = file else {
            return fail(
                &refs,
                actions,
                "Either \"obj\" or \"bytecode\" is required".into(),
            );
        };
        if flags == SKIP_HW | SKIP_SW {
            return fail(
                &refs,
                actions,
                "skip_hw and skip_sw are mutually exclusive".into(),
            );
        }
        let (hook, name, jited) = match load(&file, &section) {
            Ok(l) => l,
            Err(e) => return fail(&refs, actions, e),
        };
        let base = Path::new(&file)
            .file_name()
            .map_or(file.clone(), |n| n.to_string_lossy().into_owned());
        self.next_id += 1;
        Ok(Prog {
            handle,
            bpf_name: format!("{base}:[{section}]"),
            name: name.chars().take(NAME_LEN).collect(),
            id: self.next_id,
            jited,
            direct,
            classid,
            flags,
            actions: refs,
            hook,
        })
    }

    /// Runs `p` on `skb`: the program's result and what it asked for.
    fn run(p: &mut Prog, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match> {
        if p.flags & SKIP_SW != 0 {
            return None;
        }
        let meta = PacketMeta {
            ifindex: skb.ifindex,
            timestamp_ns: skb.tstamp,
            ..PacketMeta::default()
        };
        // A run the VM stops (a run-time check) ends as the kernel's
        // program would not: sluice counts it as no match.
        let frame = skb.untagged().into_owned();
        let o = p.hook.run(&frame, &meta).ok()?;
        let r0 = o.r0 as i32;
        let verdict = match o.verdict {
            Verdict::Tc(a) => a,
            _ => TcAction::Unspec,
        };
        let written = o.skb.map_or(0, |f| f.tc_classid);
        if let Some(f) = o.skb {
            skb.mark = f.mark;
            skb.priority = f.priority;
        }
        for c in o.clones {
            cx.emitted.push(Emitted {
                dev: String::new(),
                ifindex: c.ifindex,
                frame: c.packet.clone(),
                ingress: c.ingress,
                vlan_in_meta: false,
            });
        }
        let redirect = match o.redirect.map(|r| r.target) {
            Some(RedirectTarget::Device { ifindex, ingress }) => Some((ifindex, ingress)),
            _ => None,
        };
        if o.packet != frame.as_slice() {
            skb.set_untagged(o.packet);
        }
        if p.direct {
            let control = match verdict {
                TcAction::Ok
                | TcAction::Shot
                | TcAction::Stolen
                | TcAction::Trap
                | TcAction::Redirect
                | TcAction::Reclassify => Control::Act(verdict),
                _ => return None,
            };
            if verdict == TcAction::Redirect {
                // Last, so the hook can tell the packet itself from copies.
                let (ifindex, ingress) = redirect?;
                cx.emitted.push(Emitted {
                    dev: String::new(),
                    ifindex,
                    ingress,
                    frame: skb.data.clone(),
                    vlan_in_meta: skb.vlan_in_meta,
                });
            }
            let classid = if written != 0 { written } else { p.classid };
            return Some(Match {
                classid: (p.classid & 0xffff_0000) | (classid & 0xffff),
                control,
            });
        }
        let classid = match r0 {
            0 => return None,
            -1 => p.classid,
            c => c as u32,
        };
        let control = cx.exec(&p.actions, skb);
        Some(Match { classid, control })
    }
}

impl Classifier for Bpf {
    fn kind(&self) -> &'static str {
        "bpf"
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn add(
        &mut self,
        handle: Option<&str>,
        args: &[&str],
        actions: &mut Actions,
    ) -> Result<(), TcError> {
        let handle = match handle.map(parse_handle).transpose()? {
            Some(h) if h != 0 => {
                if self.progs.iter().any(|p| p.handle == h) {
                    return Err("RTNETLINK answers: File exists".into());
                }
                h
            }
            _ => (1..)
                .find(|h| !self.progs.iter().any(|p| p.handle == *h))
                .unwrap_or(u32::MAX),
        };
        let p = self.parse(handle, args, actions)?;
        self.progs.insert(0, p);
        Ok(())
    }

    fn delete(&mut self, handle: &str, actions: &mut Actions) -> Result<bool, TcError> {
        let h = parse_handle(handle)?;
        let at = self
            .progs
            .iter()
            .position(|p| p.handle == h)
            .ok_or_else(|| format!("Error: Filter with specified handle {handle} not found."))?;
        let p = self.progs.remove(at);
        actions.release(&p.actions);
        Ok(self.progs.is_empty())
    }

    fn classify(&mut self, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match> {
        for p in &mut self.progs {
            if let Some(m) = Bpf::run(p, skb, cx)
                && m.control != Control::UNSPEC
            {
                return Some(m);
            }
        }
        None
    }

    fn show(&self, actions: &Actions, stats: bool) -> Vec<String> {
        self.progs
            .iter()
            .map(|p| {
                let mut s = format!("handle {:#x} ", p.handle);
                if p.classid != 0 {
                    s += &format!("flowid {} ", format_classid(p.classid));
                }
                s += &format!("{} ", p.bpf_name);
                if p.direct {
                    s += "direct-action ";
                }
                if p.flags & SKIP_HW != 0 {
                    s += "skip_hw ";
                }
                if p.flags & SKIP_SW != 0 {
                    s += "skip_sw ";
                }
                s += &format!("not_in_hw id {} name {} ", p.id, p.name);
                if p.jited {
                    s += "jited ";
                }
                for (i, r) in p.actions.iter().enumerate() {
                    if let Some(a) = actions.get(r) {
                        s += &action_text(i + 1, a, stats);
                    }
                }
                s
            })
            .collect()
    }

    fn json(&self, actions: &Actions, stats: bool) -> Vec<Value> {
        self.progs
            .iter()
            .map(|p| {
                let mut o = json!({ "handle": format!("{:#x}", p.handle) });
                if p.classid != 0 {
                    o["flowid"] = json!(format_classid(p.classid));
                }
                o["bpf_name"] = json!(p.bpf_name);
                if p.direct {
                    o["direct-action"] = json!(true);
                }
                if p.flags & SKIP_HW != 0 {
                    o["skip_hw"] = json!(true);
                }
                if p.flags & SKIP_SW != 0 {
                    o["skip_sw"] = json!(true);
                }
                o["not_in_hw"] = json!(true);
                o["prog"] = json!({ "id": p.id, "name": p.name, "jited": u8::from(p.jited) });
                if !p.actions.is_empty() {
                    let list: Vec<Value> = (p.actions.iter().enumerate())
                        .filter_map(|(i, r)| actions.get(r).map(|a| action_json(i + 1, a, stats)))
                        .collect();
                    o["actions"] = Value::Array(list);
                }
                o
            })
            .collect()
    }

    fn actions(&self) -> Vec<ActionRef> {
        self.progs.iter().flat_map(|p| p.actions.clone()).collect()
    }
}
