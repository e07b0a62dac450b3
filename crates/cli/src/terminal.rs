//! Text for a terminal: every line the command prints passes through
//! [`escape`], so bytes that others wrote (assembly and `tc` lines,
//! tcpdump expressions, flows, file names, BTF and map names, packet
//! bytes) cannot reach the terminal as control sequences.
//!
//! The rule, as tcpdump's for what it prints of a packet: a control
//! character is shown, never sent. C0 controls other than newline and tab,
//! DEL and the C1 controls (U+0080 to U+009F, which some terminals also
//! obey) print as Rust escapes: `\x1b`, `\r`, `\u{9b}`. Newlines stay (the
//! reports have several lines), tabs stay (they move the cursor and nothing
//! else). JSON needs nothing more: serde escapes controls in strings.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with its control characters escaped; borrowed when it has none
/// (the common case costs one scan).
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_unsafe(c) {
            out.push(c);
            continue;
        }
        match c {
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

fn is_unsafe(c: char) -> bool {
    c != '\n' && c != '\t' && c.is_control()
}

/// `println!` whose text is [`escape`]d (for standard output).
macro_rules! out {
    () => { println!() };
    ($($arg:tt)*) => {
        println!("{}", $crate::terminal::escape(&format!($($arg)*)))
    };
}

/// `print!` whose text is [`escape`]d.
macro_rules! out_part {
    ($($arg:tt)*) => {
        print!("{}", $crate::terminal::escape(&format!($($arg)*)))
    };
}

/// `eprintln!` whose text is [`escape`]d (warnings, notes, errors).
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::terminal::escape(&format!($($arg)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn controls_are_shown_not_sent() {
        assert_eq!(escape("a\x1b[31mb"), "a\\x1b[31mb");
        assert_eq!(escape("x\ry\0z\x7f"), "x\\ry\\0z\\x7f");
        assert_eq!(escape("\u{9b}2J"), "\\u{9b}2J");
        assert_eq!(escape("two\nlines\tand a tab é"), "two\nlines\tand a tab é");
        assert!(matches!(escape("plain"), std::borrow::Cow::Borrowed(_)));
    }
}
