//! Splitting `ovs-ofctl` text into `key=value` tokens and parsing the
//! values' basic shapes (numbers, Ethernet, IPv4 and IPv6 addresses).

use super::OfctlError;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One `key`, `key=value`, `key:value` or `key(value)` item.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub key: &'a str,
    pub value: &'a str,
    /// The value was written in parentheses (`write_actions(...)`).
    pub paren: bool,
}

fn is_delim(b: u8) -> bool {
    matches!(b, b',' | b' ' | b'\t' | b'\r' | b'\n')
}

/// Splits `text` as `ovs-ofctl` does: items separated by commas or white
/// space; a key ends at `=`, `:` or `(`; a value runs to the next separator
/// outside parentheses. Slicing is at ASCII bytes only, so always on
/// character boundaries.
pub(crate) fn tokens(text: &str) -> Result<Vec<Token<'_>>, OfctlError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && is_delim(b[i]) {
            i += 1;
        }
        if i == b.len() {
            return Ok(out);
        }
        let start = i;
        while i < b.len() && !is_delim(b[i]) && !matches!(b[i], b'=' | b':' | b'(' | b')') {
            i += 1;
        }
        let key = &text[start..i];
        if key.is_empty() {
            return Err(OfctlError::Syntax(format!(
                "missing keyword before `{}`",
                &text[i..]
            )));
        }
        match b.get(i) {
            Some(b'(') => {
                let end = closing_paren(b, i).ok_or_else(|| unbalanced(text))?;
                out.push(Token {
                    key,
                    value: &text[i + 1..end],
                    paren: true,
                });
                i = end + 1;
                if i < b.len() && !is_delim(b[i]) {
                    return Err(OfctlError::Syntax(format!(
                        "{key}: unexpected `{}` after `)`",
                        &text[i..]
                    )));
                }
            }
            Some(b'=') | Some(b':') => {
                i += 1;
                let vstart = i;
                let mut depth = 0usize;
                while i < b.len() {
                    match b[i] {
                        b'(' => depth += 1,
                        b')' if depth == 0 => return Err(unbalanced(text)),
                        b')' => depth -= 1,
                        c if depth == 0 && is_delim(c) => break,
                        _ => {}
                    }
                    i += 1;
                }
                if depth != 0 {
                    return Err(unbalanced(text));
                }
                out.push(Token {
                    key,
                    value: &text[vstart..i],
                    paren: false,
                });
            }
            Some(b')') => return Err(unbalanced(text)),
            _ => out.push(Token {
                key,
                value: "",
                paren: false,
            }),
        }
    }
}

fn unbalanced(text: &str) -> OfctlError {
    OfctlError::Syntax(format!("unbalanced parentheses in `{text}`"))
}

/// The index of the `)` closing the `(` at `open`.
fn closing_paren(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A decimal or `0x` hexadecimal number.
pub(crate) fn number(s: &str) -> Option<u128> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    // from_str_radix takes a leading `+`, ovs-ofctl does not.
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u128::from_str_radix(digits, radix).ok()
}

/// A number that fits in `bits` bits.
pub(crate) fn number_bits(s: &str, bits: u32) -> Option<u128> {
    number(s).filter(|&v| bits >= 128 || v >> bits == 0)
}

/// `xx:xx:xx:xx:xx:xx` (one or two hex digits per byte).
pub(crate) fn mac(s: &str) -> Option<u128> {
    let mut v = 0u128;
    let mut n = 0;
    for part in s.split(':') {
        if part.is_empty() || part.len() > 2 || !part.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        v = (v << 8) | u128::from_str_radix(part, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(v)
}

pub(crate) fn ipv4(s: &str) -> Option<u128> {
    s.parse::<Ipv4Addr>().ok().map(|a| u128::from(u32::from(a)))
}

pub(crate) fn ipv6(s: &str) -> Option<u128> {
    s.parse::<Ipv6Addr>().ok().map(u128::from)
}

/// A prefix length as a mask of `bits` bits.
pub(crate) fn prefix_mask(len: &str, bits: u32) -> Option<u128> {
    if len.is_empty() || len.len() > 3 || !len.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n: u32 = len.parse().ok()?;
    if n > bits {
        return None;
    }
    let all = ones(bits);
    Some(if n == 0 { 0 } else { all & !(all >> n) })
}

/// A mask of the low `bits` bits.
pub(crate) fn ones(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(text: &str) -> Vec<(&str, &str, bool)> {
        tokens(text)
            .unwrap()
            .into_iter()
            .map(|t| (t.key, t.value, t.paren))
            .collect()
    }

    #[test]
    fn splits_keys_values_and_parentheses() {
        assert_eq!(
            kv("ip, nw_src=1.2.3.4 output:1,write_actions(output:2,group:3),x"),
            vec![
                ("ip", "", false),
                ("nw_src", "1.2.3.4", false),
                ("output", "1", false),
                ("write_actions", "output:2,group:3", true),
                ("x", "", false),
            ]
        );
        assert_eq!(
            kv("set_field:00:11:22:33:44:55->eth_src"),
            vec![("set_field", "00:11:22:33:44:55->eth_src", false)]
        );
        assert_eq!(
            kv("bucket=actions=output:1"),
            vec![("bucket", "actions=output:1", false)]
        );
    }

    #[test]
    fn rejects_unbalanced_parentheses() {
        assert!(tokens("write_actions(output:1").is_err());
        assert!(tokens("a=b)").is_err());
        assert!(tokens("a(b)c").is_err());
        assert!(tokens("=5").is_err());
    }

    #[test]
    fn numbers_and_addresses() {
        assert_eq!(number("0x1F"), Some(31));
        assert_eq!(number("42"), Some(42));
        assert_eq!(number("+4"), None);
        assert_eq!(number("0x"), None);
        assert_eq!(number_bits("256", 8), None);
        assert_eq!(mac("0:1:22:33:44:55"), Some(0x0001_2233_4455));
        assert_eq!(mac("00:11:22:33:44"), None);
        assert_eq!(ipv4("10.0.0.300"), None);
        assert_eq!(prefix_mask("8", 32), Some(0xff00_0000));
        assert_eq!(prefix_mask("0", 32), Some(0));
        assert_eq!(prefix_mask("33", 32), None);
    }
}
