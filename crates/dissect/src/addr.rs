//! Addresses as tcpdump prints them with `-n`: MAC `aa:bb:..`, dotted
//! IPv4, and IPv6 with the longest run (two or more) of zero groups
//! shortened to `::` and an embedded IPv4 tail for `::a.b.c.d` and
//! `::ffff:a.b.c.d`.

use std::fmt::Write;

pub(crate) fn mac(b: &[u8]) -> String {
    let mut s = String::with_capacity(17);
    for (i, x) in b.iter().enumerate() {
        if i > 0 {
            s.push(':');
        }
        let _ = write!(s, "{x:02x}");
    }
    s
}

pub(crate) fn ipv4(b: &[u8]) -> String {
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

pub(crate) fn ipv6(b: &[u8]) -> String {
    let words: Vec<u16> = b
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    // The longest run of zero words, the first of equals.
    let (mut best, mut best_len, mut cur, mut cur_len) = (None, 0, None, 0);
    for (i, &w) in words.iter().enumerate() {
        if w == 0 {
            if cur.is_none() {
                cur = Some(i);
                cur_len = 0;
            }
            cur_len += 1;
            if cur_len > best_len {
                best = cur;
                best_len = cur_len;
            }
        } else {
            cur = None;
        }
    }
    if best_len < 2 {
        best = None;
    }
    let mut s = String::with_capacity(39);
    let mut i = 0;
    while i < 8 {
        if Some(i) == best {
            s.push(':');
            i += best_len;
            if i == 8 {
                s.push(':');
            }
            continue;
        }
        if i > 0 {
            s.push(':');
        }
        if i == 6 && best == Some(0) && (best_len == 6 || (best_len == 5 && words[5] == 0xffff)) {
            s.push_str(&ipv4(&b[12..16]));
            break;
        }
        let _ = write!(s, "{:x}", words[i]);
        i += 1;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::ipv6;

    fn v6(s: &str) -> String {
        ipv6(&s.parse::<std::net::Ipv6Addr>().unwrap().octets())
    }

    #[test]
    fn compresses_like_tcpdump() {
        assert_eq!(v6("fe80::1"), "fe80::1");
        assert_eq!(v6("ff02::1:ff00:1"), "ff02::1:ff00:1");
        assert_eq!(v6("::"), "::");
        assert_eq!(v6("2001:db8:0:1:0:0:0:1"), "2001:db8:0:1::1");
        assert_eq!(v6("1:0:2:3:4:5:6:7"), "1:0:2:3:4:5:6:7");
        assert_eq!(v6("::ffff:1.2.3.4"), "::ffff:1.2.3.4");
    }
}
