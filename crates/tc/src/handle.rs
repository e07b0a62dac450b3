//! tc's 32-bit handles and class ids: a 16-bit major and a 16-bit minor,
//! written `MAJ:MIN` in hexadecimal (`1:10` is 0x0001_0010, `ffff:` is
//! 0xffff_0000), as iproute2 reads and prints them.

use crate::error::TcError;

/// `TC_H_ROOT`.
pub const ROOT: u32 = 0xffff_ffff;
/// The clsact (and ingress) qdisc's handle, `ffff:`.
pub const CLSACT: u32 = 0xffff_0000;
/// `TC_H_MIN_INGRESS` / `TC_H_MIN_EGRESS` under clsact.
pub const INGRESS: u32 = 0xffff_fff2;
pub const EGRESS: u32 = 0xffff_fff3;

/// Reads a class id or handle: `root`, `none`, `MAJ:MIN`, `MAJ:`, `:MIN`,
/// or a bare hexadecimal number (the whole 32 bits).
pub fn parse_classid(s: &str) -> Result<u32, TcError> {
    let bad = |why: &'static str| TcError::ClassId {
        given: s.to_string(),
        why,
    };
    match s {
        "root" => return Ok(ROOT),
        "none" => return Ok(0),
        _ => {}
    }
    let hex = |t: &str, what: &'static str| -> Result<u32, TcError> {
        if t.is_empty() {
            return Ok(0);
        }
        let t = t.strip_prefix("0x").unwrap_or(t);
        let v = u32::from_str_radix(t, 16).map_err(|_| bad(what))?;
        Ok(v)
    };
    match s.split_once(':') {
        Some((maj, min)) => {
            let (maj, min) = (
                hex(maj, "the major is not hexadecimal")?,
                hex(min, "the minor is not hexadecimal")?,
            );
            if maj > 0xffff || min > 0xffff {
                return Err(bad("a part is over 16 bits"));
            }
            Ok(maj << 16 | min)
        }
        None if s.is_empty() => Err(bad("empty")),
        None => hex(s, "it is not hexadecimal"),
    }
}

/// How tc prints a class id (`1:10`, `1:`, `:10`, `root`, `none`).
pub fn format_classid(h: u32) -> String {
    match h {
        ROOT => "root".into(),
        0 => "none".into(),
        h if h & 0xffff == 0 => format!("{:x}:", h >> 16),
        h if h >> 16 == 0 => format!(":{:x}", h & 0xffff),
        h => format!("{:x}:{:x}", h >> 16, h & 0xffff),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_ids_read_and_print_as_tc_does() {
        for (s, h) in [
            ("1:10", 0x0001_0010),
            ("ffff:", CLSACT),
            (":fff2", 0xfff2),
            ("root", ROOT),
            ("0x10", 0x10),
        ] {
            assert_eq!(parse_classid(s), Ok(h), "{s}");
        }
        assert_eq!(format_classid(0x0001_0010), "1:10");
        assert_eq!(format_classid(CLSACT), "ffff:");
        assert!(
            parse_classid("1:10000")
                .unwrap_err()
                .to_string()
                .contains("16 bits")
        );
        assert!(parse_classid("x:1").is_err());
        assert!(parse_classid("").is_err());
    }
}
