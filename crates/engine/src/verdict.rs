//! [`ProgramVerdict`]: what `sluice verify` says of one program of a
//! [`Verifiable`] object: sluice's verifier's verdict, where and why it
//! rejects (the instruction, its source line from BTF line info, the
//! kernel-style message), its figures, and the running kernel's verdict
//! beside it when asked ([`KernelVerdict`]). It serializes as one program
//! of `sluice verify --json`.

use serde::Serialize;
use verifier::{SafetyRule, VerifyOptions};

use crate::verify::Verifiable;

/// What to check a program with.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// As an unprivileged loader (no CAP_PERFMON): pointer leaks and
    /// uninitialised stack reads are refused.
    pub unprivileged: bool,
    /// Keep the whole walk, kernel-style ([`ProgramVerdict::log`]).
    pub log: bool,
    /// Ask the running kernel too (needs root; see [`Verifiable::kernel_at_hand`]).
    pub kernel: bool,
}

/// The kernel's verdict on a program.
#[derive(Serialize, Clone, Debug)]
pub struct KernelVerdict {
    /// `accept`, `reject`, or `error` (the kernel could not be asked).
    pub verdict: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub insns_processed: Option<u64>,
    pub micros: Option<u64>,
}

/// sluice's verifier's verdict on one program, as `sluice verify` reports it.
#[derive(Serialize, Clone, Debug)]
pub struct ProgramVerdict {
    pub name: String,
    pub section: String,
    /// `accept`, `reject`, or `unsupported` (a feature the verifier does
    /// not check yet).
    pub verdict: &'static str,
    /// The instruction at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insn: Option<usize>,
    /// Its source line, `FILE:LINE` (from BTF line info).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<SafetyRule>,
    /// Why, in one plain sentence, with what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why, as the kernel's verifier says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_message: Option<String>,
    /// The registers and stack on the failing path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registers: Option<String>,
    pub insns_processed: usize,
    pub states: usize,
    pub stack_depth: usize,
    pub micros: u128,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelVerdict>,
    /// The instruction at fault, disassembled.
    #[serde(skip)]
    pub disasm: Option<String>,
    /// The text of its source line.
    #[serde(skip)]
    pub source: Option<String>,
    /// The walk, with [`CheckOptions::log`].
    #[serde(skip)]
    pub log: Vec<String>,
}

impl ProgramVerdict {
    /// Whether the kernel's verdict agrees (`None`: no kernel verdict to
    /// compare, or sluice's verifier did not decide).
    pub fn agrees(&self) -> Option<bool> {
        match (self.verdict, self.kernel.as_ref()?.verdict) {
            (_, "error") | ("unsupported", _) => None,
            (a, b) => Some(a == b),
        }
    }
}

impl Verifiable {
    /// Whether the running kernel can be asked (root, or CAP_BPF).
    pub fn kernel_at_hand() -> bool {
        kernel::privileged()
    }

    /// Verifies `p` (a program of this object) with sluice's verifier and,
    /// with [`CheckOptions::kernel`], the running kernel.
    pub fn check(&self, p: &obj::Program, opts: &CheckOptions) -> ProgramVerdict {
        let vopts = VerifyOptions {
            privileged: !opts.unprivileged,
            log: opts.log,
            helpers: runtime::helpers::ids_for(&p.kind),
            ..VerifyOptions::default()
        };
        let r = verifier::verify(p, &self.maps, &vopts);
        let mut pr = ProgramVerdict {
            name: p.name.clone(),
            section: p.section.clone(),
            verdict: "accept",
            insn: None,
            line: None,
            rule: None,
            reason: None,
            kernel_message: None,
            registers: None,
            insns_processed: r.insns_processed,
            states: r.states,
            stack_depth: r.stack_depth,
            micros: r.micros,
            kernel: None,
            disasm: None,
            source: None,
            log: r.log,
        };
        if let Err(e) = &r.result {
            pr.verdict = if e.rule == SafetyRule::Unsupported {
                "unsupported"
            } else {
                "reject"
            };
            pr.insn = Some(e.insn);
            pr.rule = Some(e.rule);
            pr.kernel_message = Some(e.kernel.clone());
            pr.registers = (!e.state.is_empty()).then(|| e.state.clone());
            let mut reason = e.reason.clone();
            if let Some(origin) = e.origin
                && let Some(l) = p.line_at(origin)
            {
                reason.push_str(&format!(
                    " (the value comes from insn {origin}, {}:{})",
                    l.file, l.line
                ));
            }
            pr.reason = Some(reason);
            if let Some(l) = p.line_at(e.insn) {
                pr.line = Some(format!("{}:{}", l.file, l.line));
                pr.source = Some(l.source.trim().to_string());
            }
            pr.disasm = verifier::insn_at(&p.insns, e.insn);
        }
        if opts.kernel && p.kind.is_runnable() {
            pr.kernel = Some(self.kernel_verdict(p));
        }
        pr
    }

    fn kernel_verdict(&self, p: &obj::Program) -> KernelVerdict {
        let data_of = |i: usize| self.data_of(i);
        match kernel::verify::verify_program(p, &self.defs, self.object.btf.as_ref(), &data_of) {
            Ok(v) => KernelVerdict {
                verdict: if v.accepted { "accept" } else { "reject" },
                message: (!v.accepted).then(|| v.reason().to_string()),
                insns_processed: v.insns_processed,
                micros: v.micros,
            },
            Err(e) => KernelVerdict {
                verdict: "error",
                message: Some(e.to_string()),
                insns_processed: None,
                micros: None,
            },
        }
    }
}
