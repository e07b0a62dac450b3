//! One filter's C function, as every kind (flower, u32, matchall) writes
//! it: the function around its body, a rule's hit (counters, copies, the
//! result) and comments safe inside C. `emit.rs` puts the kinds' functions
//! into the program; the kinds use this, never `emit.rs`.

use std::fmt::Write as _;

use runtime::TcAction;
use tc::Control;

use crate::actions::{Run, Step};

/// The code of one filter: its function's text and whether it needs
/// the flow key.
pub struct FilterCode {
    pub text: String,
    pub flow_key: bool,
}

/// A rule's hit: its counter, its actions' counters and copies, then its
/// result; `on_continue` is what the kind does when they say `continue`.
pub fn hit(slot: u32, classid: u32, run: &Run, indent: &str, on_continue: &str) -> String {
    hit_then(slot, classid, run, indent, on_continue, "return;")
}

/// [`hit`] ending with `done` (a function returning a value says which).
pub fn hit_then(
    slot: u32,
    classid: u32,
    run: &Run,
    indent: &str,
    on_continue: &str,
    done: &str,
) -> String {
    let mut s = format!("{indent}count_rule({slot}, p->bytes);\n");
    for st in &run.steps {
        match st {
            Step::Count { slot, drop } => {
                let _ = writeln!(
                    s,
                    "{indent}count_action({slot}, p->bytes, {});",
                    u8::from(*drop)
                );
            }
            Step::Mirror { ifindex, flags } => {
                let _ = writeln!(
                    s,
                    "{indent}if (!XDP)\n{indent}\tbpf_clone_redirect(ctx, {ifindex}, {flags});"
                );
            }
        }
    }
    let code = match run.control {
        Control::Act(TcAction::Unspec) => {
            let _ = writeln!(s, "{indent}/* continue */\n{indent}{on_continue}");
            return s;
        }
        // A jump past the list: the hook takes it as ok.
        Control::Jump(_) => "TC_ACT_OK".to_string(),
        Control::GotoChain(n) => format!("TC_ACT_GOTO_CHAIN | {n}"),
        Control::Act(TcAction::Ok) => "TC_ACT_OK".into(),
        Control::Act(TcAction::Shot) => "TC_ACT_SHOT".into(),
        Control::Act(TcAction::Reclassify) => "TC_ACT_RECLASSIFY".into(),
        Control::Act(TcAction::Pipe) => "TC_ACT_PIPE".into(),
        Control::Act(TcAction::Stolen) => "TC_ACT_STOLEN".into(),
        c => format!("{} /* {} */", c.code(), c.name()),
    };
    let _ = writeln!(s, "{indent}r->classid = {classid:#x};");
    if let Some((ifindex, flags)) = run.redirect {
        let _ = writeln!(
            s,
            "{indent}r->redirect = {ifindex};\n{indent}r->redirect_flags = {flags};"
        );
    }
    let _ = writeln!(s, "{indent}r->control = {code};\n{indent}{done}");
    s
}

/// A filter's function: `what` for its comment, `body` its statements
/// (which may `goto no_match`: no rule decided).
pub fn filter_function(name: &str, what: &str, body: &str, flow_key: bool) -> FilterCode {
    FilterCode {
        text: format!(
            "/* {what} */\n\
             static __always_inline void {name}(CTX *ctx, struct pkt *p, const struct flow_key *k, struct result *r)\n{{\n\
             {body}no_match: __attribute__((unused));\n\tr->control = NO_MATCH;\n}}\n"
        ),
        flow_key,
    }
}

/// Text safe inside a C comment, on one line.
pub fn comment(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("*/", "* /")
}
