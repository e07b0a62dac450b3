//! u32 handles: 12 bits of hash table id, 8 bits of bucket, 12 bits of
//! node id (`ht:bucket:node`, hexadecimal), as iproute2's
//! `get_u32_handle` reads them and `sprint_u32_handle` prints them.

/// The table id part (`TC_U32_HTID`).
pub fn htid(h: u32) -> u32 {
    h & 0xfff0_0000
}

/// The bucket (`TC_U32_HASH`).
pub fn bucket(h: u32) -> u32 {
    (h >> 12) & 0xff
}

/// The node id (`TC_U32_NODE`).
pub fn node(h: u32) -> u32 {
    h & 0xfff
}

/// Bucket and node (`TC_U32_KEY`): 0 for a hash table.
pub fn key(h: u32) -> u32 {
    h & 0xfffff
}

/// `TC_U32_ROOT`: "this filter's root table".
pub const ROOT: u32 = 0xfff0_0000;

/// The handle of the first filter's root table, `800:`.
pub const FIRST_ROOT: u32 = 0x8000_0000;

/// Reads `HT:BUCKET:NODE` (each part hexadecimal and optional, `800::1`,
/// `1:`, `:2:`) or a `0x` number; `None` for anything else or a part out
/// of range (table >= 0x1000, bucket >= 0x100, node >= 0x1000).
pub fn parse(s: &str) -> Option<u32> {
    let Some((ht, rest)) = s.split_once(':') else {
        let hex = s.strip_prefix("0x")?;
        return u32::from_str_radix(hex, 16).ok();
    };
    let part = |t: &str, limit: u32| -> Option<u32> {
        if t.is_empty() {
            return Some(0);
        }
        let v = u32::from_str_radix(t, 16).ok()?;
        (v < limit).then_some(v)
    };
    let (b, n) = rest.split_once(':').unwrap_or((rest, ""));
    Some(part(ht, 0x1000)? << 20 | part(b, 0x100)? << 12 | part(n, 0x1000)?)
}

/// How tc prints a u32 handle: `800:`, `800::801`, `1:5:800`, `none`.
pub fn format(h: u32) -> String {
    if h == 0 {
        return "none".into();
    }
    let mut s = String::new();
    if htid(h) != 0 {
        s += &format!("{:x}:", h >> 20);
    }
    if bucket(h) != 0 {
        s += &format!("{:x}", bucket(h));
    }
    if node(h) != 0 {
        s += &format!(":{:x}", node(h));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_read_and_print_as_iproute2_does() {
        for (s, h) in [
            ("800:", 0x8000_0000),
            ("800::801", 0x8000_0801),
            ("1:5:800", 0x0010_5800),
            ("::7", 0x7),
            ("1:3:", 0x0010_3000),
            ("0x80000801", 0x8000_0801),
        ] {
            assert_eq!(parse(s), Some(h), "{s}");
        }
        for bad in ["1000:", "1:100:", "1:1:1000", "x:", "12", "1:g"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(format(0x8000_0801), "800::801");
        assert_eq!(format(0x0010_5800), "1:5:800");
        assert_eq!(format(0x8000_0000), "800:");
        assert_eq!(format(0), "none");
        assert_eq!(
            (htid(0x0010_5800), bucket(0x0010_5800), node(0x0010_5800)),
            (0x0010_0000, 5, 0x800)
        );
    }
}
