//! The actions beyond gact and mirred, one file each: its parameters, its
//! effect on the skb (as the kernel's `net/sched/act_*.c`), its parser
//! (as iproute2's `tc/m_*.c`) and its `tc` text and JSON. What they share
//! is here: the counters every action keeps ([`ActionStats`]), what every
//! action's print shows beside its kind ([`ActionHead`]), iproute2's
//! number, size and rate words and how it prints them. (The [`Action`]
//! that holds a kind is in `action.rs`, which uses these; they never use
//! it.)
//!
//! [`Action`]: crate::Action

pub mod csum;
pub mod pedit;
pub mod police;
pub mod skbedit;
pub mod vlan;

use serde_json::{Value, json};

use crate::control::Control;
use crate::error::TcError;

/// An action's counters, as `tc -s actions show` prints them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ActionStats {
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
}

/// What every action has beside its kind, as the kind's `tc` text and
/// JSON print it (`index N ref N bind N`, its control):
/// [`Action::head`](crate::Action::head).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActionHead {
    pub index: u32,
    pub control: Control,
    pub refs: u32,
    pub binds: u32,
}

/// `get_u32(.., 0)`: decimal, `0x` hexadecimal or `0` octal.
pub(crate) fn parse_u32(s: &str) -> Option<u32> {
    crate::argv::get_u32(s, 0)
}

/// `get_u64(.., 0)`.
pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    crate::argv::strtoul(s, 0)
}

/// iproute2's `get_integer(.., 0)`: a signed number in any base.
pub(crate) fn parse_i32(s: &str) -> Option<i32> {
    crate::argv::get_int(s)
}

/// Splits a number from its unit (`strtod`'s end).
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let n: f64 = s[..end].parse().ok()?;
    Some((n, &s[end..]))
}

/// `get_rate64`: a rate in bits per second with iproute2's units (`bit`,
/// `kbit`, `mbit`, `gbit`, `tbit`, `Kibit`..., `Bps`, `KBps`, `KiBps`...;
/// none: bits), as bytes per second.
pub(crate) fn parse_rate(s: &str) -> Option<u64> {
    let (n, unit) = number_and_unit(s)?;
    const UNITS: [(&str, f64); 18] = [
        ("bit", 1.),
        ("kibit", 1024.),
        ("kbit", 1000.),
        ("mibit", 1024. * 1024.),
        ("mbit", 1e6),
        ("gibit", 1024. * 1024. * 1024.),
        ("gbit", 1e9),
        ("tibit", 1024. * 1024. * 1024. * 1024.),
        ("tbit", 1e12),
        ("bps", 8.),
        ("kibps", 8. * 1024.),
        ("kbps", 8000.),
        ("mibps", 8. * 1024. * 1024.),
        ("mbps", 8e6),
        ("gibps", 8. * 1024. * 1024. * 1024.),
        ("gbps", 8e9),
        ("tibps", 8. * 1024. * 1024. * 1024. * 1024.),
        ("tbps", 8e12),
    ];
    let scale = if unit.is_empty() {
        1.
    } else {
        UNITS.iter().find(|(u, _)| u.eq_ignore_ascii_case(unit))?.1
    };
    Some((n * scale / 8.) as u64)
}

/// `get_size`: bytes with `k`/`kb`, `m`/`mb`, `g`/`gb`, `kbit`, `mbit`,
/// `gbit` or `b`.
pub(crate) fn parse_size(s: &str) -> Option<u32> {
    let (n, unit) = number_and_unit(s)?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.,
        "k" | "kb" => 1024.,
        "m" | "mb" => 1024. * 1024.,
        "g" | "gb" => 1024. * 1024. * 1024.,
        "kbit" => 1024. / 8.,
        "mbit" => 1024. * 1024. / 8.,
        "gbit" => 1024. * 1024. * 1024. / 8.,
        _ => return None,
    };
    let v = n * scale;
    (v <= f64::from(u32::MAX)).then_some(v as u32)
}

/// `get_size_and_cell`: `SIZE[/CELL]`, the cell a power of two (its log).
pub(crate) fn parse_size_and_cell(s: &str) -> Option<(u32, Option<u8>)> {
    let (size, cell) = match s.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let size = parse_size(size)?;
    let cell_log = match cell {
        None => None,
        Some(c) => {
            let c = parse_size(c)?;
            if !c.is_power_of_two() {
                return None;
            }
            Some(c.trailing_zeros() as u8)
        }
    };
    Some((size, cell_log))
}

/// `sprint_size`: `2Kb`, `1Mb`, `100b`.
pub(crate) fn sprint_size(sz: u32) -> String {
    let (kilo, mega) = (1024.0_f64, 1024.0_f64 * 1024.0);
    let t = f64::from(sz);
    if t >= mega && (mega * (t / mega).round() - t).abs() < 1024. {
        format!("{}Mb", (t / mega).round())
    } else if t >= kilo && (kilo * (t / kilo).round() - t).abs() < 16. {
        format!("{}Kb", (t / kilo).round())
    } else {
        format!("{sz}b")
    }
}

/// `sprint_rate` (SI units): `1Mbit`, `800Kbit`, `1500bit`, of bytes/s.
pub(crate) fn sprint_rate(bytes_ps: u64) -> String {
    let mut rate = bytes_ps << 3;
    let units = ["", "K", "M", "G", "T"];
    let mut i = 0;
    while i < units.len() - 1 {
        if rate < 1000 || (!rate.is_multiple_of(1000) && rate < 1000 * 1000) {
            break;
        }
        rate /= 1000;
        i += 1;
    }
    format!("{rate}{}bit", units[i])
}

/// `print_action_control`'s JSON object.
pub(crate) fn control_json(c: Control) -> Value {
    json!({ "type": c.name() })
}

/// iproute2's `invarg`: `Error: argument "ARG" is wrong: WHY`.
pub(crate) fn invarg(why: &str, arg: &str) -> TcError {
    TcError::Syntax(format!("Error: argument \"{arg}\" is wrong: {why}"))
}

/// iproute2's `duparg`.
pub(crate) fn duparg(key: &str, arg: &str) -> TcError {
    TcError::Syntax(format!(
        "Error: duplicate \"{key}\": \"{arg}\" is the second value."
    ))
}

/// The word after `words[i]`, or an error naming `words[i]` (`NEXT_ARG`).
pub(crate) fn next<'a>(words: &[&'a str], i: usize) -> Result<&'a str, TcError> {
    words.get(i + 1).copied().ok_or_else(|| {
        TcError::Syntax(format!(
            "Command line is not complete. Try option \"help\" (after \"{}\")",
            words[i]
        ))
    })
}

/// An action's control at `words[i]` if there is one (`parse_action_control_dflt`).
pub(crate) fn control_at(words: &[&str], i: usize, dflt: Control) -> (Control, usize) {
    match crate::control::parse_control(words.get(i..).unwrap_or(&[])) {
        Some((c, used)) => (c, i + used),
        None => (dflt, i),
    }
}

/// The Internet checksum's one's-complement sum of `data` added to `sum`.
pub(crate) fn csum_add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if let [b] = chunks.remainder() {
        sum = sum.wrapping_add(u32::from(*b) << 8);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

/// Folds a sum to the 16-bit checksum (its complement).
pub(crate) fn csum_fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_sizes_and_rates_read_and_print_as_iproute2_does() {
        assert_eq!(parse_u32("0x10"), Some(16));
        assert_eq!(parse_u32("010"), Some(8));
        assert_eq!(parse_u32("x"), None);
        assert_eq!(parse_i32("-4"), Some(-4));
        assert_eq!(parse_rate("1mbit"), Some(125_000));
        assert_eq!(parse_rate("8000"), Some(1000));
        assert_eq!(parse_rate("1KBps"), Some(1000));
        assert_eq!(parse_rate("1furlong"), None);
        assert_eq!(parse_size("10k"), Some(10240));
        assert_eq!(parse_size("1500"), Some(1500));
        assert_eq!(parse_size("1q"), None);
        assert_eq!(parse_size_and_cell("10k/8"), Some((10240, Some(3))));
        assert_eq!(parse_size_and_cell("10k/7"), None);
        assert_eq!(sprint_size(2040), "2Kb");
        assert_eq!(sprint_size(10240), "10Kb");
        assert_eq!(sprint_size(1500), "1500b");
        assert_eq!(sprint_size(u32::MAX), "4096Mb");
        assert_eq!(sprint_rate(125_000), "1Mbit");
        assert_eq!(sprint_rate(100_000), "800Kbit");
        assert_eq!(sprint_rate(0), "0bit");
        assert_eq!(sprint_rate(1_000_001), "8Mbit");
        assert_eq!(sprint_rate(1_500), "12Kbit");
    }
}
