//! Verification before a run: sluice's verifier over the programs a hook
//! may run, against the hook's own maps; a hook whose programs all pass
//! runs without per-access checks.

use verifier::{MapView, SafetyRule, VerifyOptions};

use super::Hook;

/// The verifier rejects the program a hook starts with; the message names
/// the instruction, the rule in the kernel's words and what to do next.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the verifier rejects {program} at {}: {reason}\n  kernel-style: {kernel}\n  (`sluice verify` explains more; --no-verify replays it anyway, with run-time checks)",
    at(*insn, line.as_deref())
)]
pub struct Rejection {
    /// The program's name.
    pub program: String,
    /// The instruction at fault.
    pub insn: usize,
    /// Its source line, `FILE:LINE`, when the object has line info.
    pub line: Option<String>,
    /// Why, in sluice's words.
    pub reason: String,
    /// Why, as the kernel's verifier says it (on one line).
    pub kernel: String,
}

/// `insn N (FILE:LINE)`, or `insn N` without line info.
fn at(insn: usize, line: Option<&str>) -> String {
    match line {
        Some(l) => format!("insn {insn} ({l})"),
        None => format!("insn {insn}"),
    }
}

impl Hook {
    /// Verifies the programs this hook is about to run (the entry and its
    /// tail-call targets) with sluice's verifier. A rejected entry is an
    /// error (the caller may run it anyway, with run-time checks); when
    /// every program is accepted the hook runs without per-access checks;
    /// otherwise the note returned says why the checks stay.
    pub fn verify_for_run(&mut self) -> Result<Option<String>, Rejection> {
        let hook = &*self;
        let object = hook.object();
        let data_of = |i: usize| -> Option<Vec<u8>> {
            object.maps[i].data.as_ref()?;
            hook.maps()[i].user_lookup(&0u32.to_le_bytes()).ok()
        };
        let mut maps = MapView::of_object(object, &data_of);
        for (info, map) in maps.iter_mut().zip(hook.maps()) {
            info.max_entries = map.spec().max_entries;
        }
        let entry = hook.program();
        let opts = VerifyOptions {
            helpers: crate::helpers::ids_for(&entry.kind),
            ..VerifyOptions::default()
        };
        let line = |p: &obj::Program, insn: usize| {
            p.line_at(insn).map(|l| format!("{}:{}", l.file, l.line))
        };
        // The entry first, so its rejection is the one reported.
        let mut order: Vec<&obj::Program> = vec![entry];
        order.extend(
            hook.runnable()
                .map(|i| &object.programs[i])
                .filter(|p| !std::ptr::eq(*p, entry)),
        );
        let mut unproven = None;
        let mut stack_depth = 0;
        for p in order {
            let report = verifier::verify(p, &maps, &opts);
            stack_depth = stack_depth.max(report.stack_depth);
            let Err(e) = report.result else {
                continue;
            };
            if e.rule != SafetyRule::Unsupported && std::ptr::eq(p, entry) {
                return Err(Rejection {
                    program: p.name.clone(),
                    insn: e.insn,
                    line: line(p, e.insn),
                    reason: e.reason.clone(),
                    kernel: e.kernel.replace('\n', " / "),
                });
            }
            let what = if e.rule == SafetyRule::Unsupported {
                "is not verified"
            } else {
                "(a tail-call target) is rejected"
            };
            unproven = Some(format!(
                "{} {what} ({}: {}); replaying with run-time checks",
                p.name,
                at(e.insn, line(p, e.insn).as_deref()),
                e.reason
            ));
            break;
        }
        if unproven.is_none() {
            // SAFETY: the verifier accepted every program the hook may
            // run, against the hook's own maps (sizes and frozen contents).
            unsafe { self.trust_verified() };
            self.set_stack_depth(stack_depth);
        }
        Ok(unproven)
    }
}
