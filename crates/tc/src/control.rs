//! What an action returns (the kernel's `TC_ACT_*`): a verdict for the
//! packet, or one of the two extended opcodes that steer the walk itself,
//! `jump N` (skip actions of the same rule) and `goto chain N`. A rule's
//! actions run in order while each says `pipe`; the first other result
//! ends them.

use runtime::TcAction;

/// `TC_ACT_JUMP`'s opcode (the count in the low 28 bits).
const JUMP: i32 = 1 << 28;
/// `TC_ACT_GOTO_CHAIN`'s opcode (the chain index in the low 28 bits).
const GOTO_CHAIN: i32 = 2 << 28;
/// The value bits of an extended opcode.
const EXT_VALUE: i32 = (1 << 28) - 1;

/// An action's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Act(TcAction),
    /// Skip the next N - 1 actions (`jump 1` is the next one).
    Jump(u32),
    /// Classify again from chain N.
    GotoChain(u32),
}

impl Control {
    pub const OK: Control = Control::Act(TcAction::Ok);
    pub const PIPE: Control = Control::Act(TcAction::Pipe);
    pub const SHOT: Control = Control::Act(TcAction::Shot);
    pub const UNSPEC: Control = Control::Act(TcAction::Unspec);

    /// The kernel's number for it.
    pub fn code(self) -> i32 {
        match self {
            Control::Act(a) => match a {
                TcAction::Unspec => -1,
                TcAction::Ok => 0,
                TcAction::Reclassify => 1,
                TcAction::Shot => 2,
                TcAction::Pipe => 3,
                TcAction::Stolen => 4,
                TcAction::Queued => 5,
                TcAction::Repeat => 6,
                TcAction::Redirect => 7,
                TcAction::Trap => 8,
                TcAction::Invalid(n) => n as i32,
            },
            Control::Jump(n) => JUMP | (n as i32 & EXT_VALUE),
            Control::GotoChain(n) => GOTO_CHAIN | (n as i32 & EXT_VALUE),
        }
    }

    /// The control of a kernel number.
    pub fn from_code(c: i32) -> Control {
        match c & !EXT_VALUE {
            JUMP => Control::Jump((c & EXT_VALUE) as u32),
            GOTO_CHAIN => Control::GotoChain((c & EXT_VALUE) as u32),
            _ => Control::Act(TcAction::from_r0(c as i64 as u64)),
        }
    }

    /// The control a `tc` keyword names (`ok`, `pass`, `drop`, `shot`,
    /// `reclassify`, `continue`, `pipe`, `trap`); the two-word
    /// `jump N` and `goto chain N` are parsed by [`parse_control`].
    pub fn keyword(word: &str) -> Option<Control> {
        Some(Control::Act(match word {
            "ok" | "pass" => TcAction::Ok,
            "drop" | "shot" => TcAction::Shot,
            "reclassify" => TcAction::Reclassify,
            "continue" => TcAction::Unspec,
            "pipe" => TcAction::Pipe,
            "trap" => TcAction::Trap,
            _ => return None,
        }))
    }

    /// How `tc` prints it (`pass`, `drop`, `pipe`, `continue`, `jump 2`,
    /// `goto chain 5`, ...).
    pub fn name(self) -> String {
        match self {
            Control::Act(a) => match a {
                TcAction::Unspec => "continue".into(),
                TcAction::Ok => "pass".into(),
                TcAction::Reclassify => "reclassify".into(),
                TcAction::Shot => "drop".into(),
                TcAction::Pipe => "pipe".into(),
                TcAction::Stolen => "stolen".into(),
                TcAction::Queued => "queued".into(),
                TcAction::Repeat => "repeat".into(),
                TcAction::Redirect => "redirect".into(),
                TcAction::Trap => "trap".into(),
                TcAction::Invalid(n) => format!("{n:#x}"),
            },
            Control::Jump(n) => format!("jump {n}"),
            Control::GotoChain(n) => format!("goto chain {n}"),
        }
    }
}

/// Reads a control at `words[0]`: a keyword, `jump N` or `goto chain N`;
/// the control and how many words it took.
pub fn parse_control(words: &[&str]) -> Option<(Control, usize)> {
    match words {
        ["jump", n, ..] => Some((Control::Jump(n.parse().ok()?), 2)),
        ["goto", "chain", n, ..] => Some((Control::GotoChain(chain_index(n)?), 3)),
        [w, ..] => Control::keyword(w).map(|c| (c, 1)),
        [] => None,
    }
}

/// A chain index as tc reads one (decimal, at most 0x0fffffff: the low 28
/// bits of `TC_ACT_GOTO_CHAIN`, and the kernel's limit for `chain N`).
pub(crate) fn chain_index(s: &str) -> Option<u32> {
    s.parse().ok().filter(|&n| n <= EXT_VALUE as u32)
}

/// tc's refusal of a `goto chain N` among `words` whose N is no chain
/// index (`goto chain 4294967295`), if there is one.
pub(crate) fn bad_goto(words: &[&str]) -> Option<String> {
    words.windows(3).find_map(|w| match w {
        ["goto", "chain", n] if chain_index(n).is_none() => Some(format!(
            "Illegal \"chain index\" \"{n}\" (0 to {EXT_VALUE})"
        )),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_keywords_parse() {
        for c in [
            Control::OK,
            Control::SHOT,
            Control::PIPE,
            Control::UNSPEC,
            Control::Jump(3),
            Control::GotoChain(7),
        ] {
            assert_eq!(Control::from_code(c.code()), c);
        }
        assert_eq!(Control::GotoChain(1).code(), 0x2000_0001);
        assert_eq!(
            parse_control(&["goto", "chain", "4", "x"]),
            Some((Control::GotoChain(4), 3))
        );
        assert_eq!(parse_control(&["jump", "2"]), Some((Control::Jump(2), 2)));
        assert_eq!(parse_control(&["shot"]), Some((Control::SHOT, 1)));
        assert_eq!(parse_control(&["jump", "x"]), None);
        assert_eq!(parse_control(&["goto", "chain", "4294967295"]), None);
        assert_eq!(chain_index("268435455"), Some(0x0fff_ffff));
        assert!(bad_goto(&["action", "goto", "chain", "268435456"]).is_some());
        assert!(bad_goto(&["action", "goto", "chain", "268435455"]).is_none());
        assert_eq!(Control::SHOT.name(), "drop");
    }
}
