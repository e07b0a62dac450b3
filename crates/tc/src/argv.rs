//! How iproute2 reads its words, shared by every parser here: `matches`
//! (a keyword by any prefix), C's `strtoul` with its bases, and the
//! message for a keyword whose value is missing.

use crate::error::TcError;

/// iproute2's `matches`: `word` is a non-empty prefix of `full`.
pub(crate) fn matches(word: &str, full: &str) -> bool {
    !word.is_empty() && full.starts_with(word)
}

/// `strtoul` in `base` over the whole word (0: `0x` hexadecimal, `0`
/// octal, else decimal; 16 takes an optional `0x`).
pub(crate) fn strtoul(s: &str, base: u32) -> Option<u64> {
    let s = s.strip_prefix('+').unwrap_or(s);
    let (digits, radix) = match base {
        16 => (
            s.strip_prefix("0x").or(s.strip_prefix("0X")).unwrap_or(s),
            16,
        ),
        0 if s.starts_with("0x") || s.starts_with("0X") => (&s[2..], 16),
        0 if s.len() > 1 && s.starts_with('0') => (&s[1..], 8),
        0 => (s, 10),
        b => (s, b),
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `get_u32(.., base)`.
pub(crate) fn get_u32(s: &str, base: u32) -> Option<u32> {
    strtoul(s, base).and_then(|v| u32::try_from(v).ok())
}

/// `get_integer(.., 0)`: a signed int in any base.
pub(crate) fn get_int(s: &str) -> Option<i32> {
    match s.strip_prefix('-') {
        Some(r) => strtoul(r, 0)
            .and_then(|v| i64::try_from(v).ok())
            .and_then(|v| i32::try_from(-v).ok()),
        None => strtoul(s, 0).and_then(|v| i32::try_from(v).ok()),
    }
}

/// tc's words when a keyword ends the command without its value.
pub(crate) fn incomplete() -> TcError {
    TcError::Syntax("Command line is not complete. Try option \"help\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_c_reads_them() {
        assert_eq!(strtoul("0x1f", 0), Some(31));
        assert_eq!(strtoul("017", 0), Some(15));
        assert_eq!(strtoul("1f", 16), Some(31));
        assert_eq!(strtoul("+5", 0), Some(5));
        assert_eq!(strtoul("0x", 0), None);
        assert_eq!(strtoul("--1", 0), None);
        assert_eq!(get_int("-0x10"), Some(-16));
        assert_eq!(get_u32("0x100000000", 0), None);
        assert!(matches("cl", "classid") && !matches("", "classid"));
    }
}
