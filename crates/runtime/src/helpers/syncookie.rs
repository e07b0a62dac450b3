//! `bpf_tcp_raw_gen_syncookie_ipv4/6` and `bpf_tcp_raw_check_syncookie_ipv4/6`.
//!
//! The cookie has the layout of Linux's (RFC 4987 style): a hash of the
//! 4-tuple and a minute counter, plus the MSS table index in the low bits.
//! The kernel keys its hash with a per-boot secret, so cookies are not
//! comparable across systems; sluice uses a fixed key, so its own cookies
//! always check.

use maps::Errno;
use vm::HelperFn;

use super::{Ctx, Ret, err, read};
use crate::Env;

pub const HELPERS: &[(&str, HelperFn<Env>)] = &[
    ("tcp_raw_gen_syncookie_ipv4", gen_v4),
    ("tcp_raw_gen_syncookie_ipv6", gen_v6),
    ("tcp_raw_check_syncookie_ipv4", check_v4),
    ("tcp_raw_check_syncookie_ipv6", check_v6),
];

const MSS_V4: [u16; 4] = [536, 1300, 1440, 1460];
const MSS_V6: [u16; 4] = [1280 - 60, 1480 - 60, 1500 - 60, 9000 - 60];
const COOKIEBITS: u32 = 24;
const COOKIEMASK: u32 = (1 << COOKIEBITS) - 1;
const MAX_AGE: u32 = 2;
const EACCES: i32 = 13;

fn mix(words: &[u32], key: u32) -> u32 {
    // A small keyed mixer (jhash-like finaliser per word).
    let mut h = key ^ 0x9e37_79b9;
    for &w in words {
        h ^= w;
        h = h.rotate_left(13).wrapping_mul(0x85eb_ca6b);
        h ^= h >> 16;
    }
    h
}

fn tuple(addrs: &[u8], th: &[u8]) -> Vec<u32> {
    let mut v: Vec<u32> = addrs
        .chunks(4)
        .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")))
        .collect();
    v.push(u32::from_be_bytes([th[0], th[1], th[2], th[3]]));
    v
}

fn minute(c: &Ctx) -> u32 {
    (c.env.sim.clock_ns / 60_000_000_000) as u32
}

fn cookie(t: &[u32], sseq: u32, count: u32, data: u32) -> u32 {
    mix(t, 1)
        .wrapping_add(sseq)
        .wrapping_add(count << COOKIEBITS)
        .wrapping_add(mix(&[t, &[count]].concat(), 2).wrapping_add(data) & COOKIEMASK)
}

/// MSS option of a SYN's TCP header (536 when absent).
fn mss_option(th: &[u8]) -> u16 {
    let mut i = 20;
    while i < th.len() {
        match th[i] {
            0 => break,
            1 => i += 1,
            2 if i + 3 < th.len() && th[i + 1] == 4 => {
                return u16::from_be_bytes([th[i + 2], th[i + 3]]);
            }
            _ => {
                let l = th.get(i + 1).copied().unwrap_or(0) as usize;
                if l < 2 {
                    break;
                }
                i += l;
            }
        }
    }
    536
}

fn generate(c: &mut Ctx, addr_off: usize, addr_len: usize, table: &[u16; 4]) -> Ret {
    let (iph, th, th_len) = (c.args[0], c.args[1], c.args[2] as usize);
    if th_len < 20 {
        return Ok(err(Errno::EINVAL));
    }
    let th = read(c, th, th_len)?;
    if usize::from(th[12] >> 4) * 4 != th_len {
        return Ok(err(Errno::EINVAL));
    }
    let addrs = read(c, iph + addr_off as u64, addr_len)?;
    let mss = mss_option(&th);
    let idx = table.iter().rposition(|&m| m <= mss).unwrap_or(0) as u32;
    let sseq = u32::from_be_bytes([th[4], th[5], th[6], th[7]]);
    let value = cookie(&tuple(&addrs, &th), sseq, minute(c), idx);
    Ok(u64::from(value) | (u64::from(table[idx as usize]) << 32))
}

fn check(c: &mut Ctx, addr_off: usize, addr_len: usize) -> Ret {
    let (iph, th) = (c.args[0], c.args[1]);
    let th = read(c, th, 20)?;
    let addrs = read(c, iph + addr_off as u64, addr_len)?;
    let t = tuple(&addrs, &th);
    let seq = u32::from_be_bytes([th[4], th[5], th[6], th[7]]).wrapping_sub(1);
    let ack = u32::from_be_bytes([th[8], th[9], th[10], th[11]]).wrapping_sub(1);
    let base = ack.wrapping_sub(mix(&t, 1)).wrapping_sub(seq);
    // The cookie carries the low 8 bits of its minute; it is valid in that
    // minute and the next.
    let now = minute(c);
    let diff = now.wrapping_sub(base >> COOKIEBITS) & (u32::MAX >> COOKIEBITS);
    if diff >= MAX_AGE {
        return Ok(err(Errno(EACCES)));
    }
    let count = now.wrapping_sub(diff);
    let data = base.wrapping_sub(mix(&[&t[..], &[count]].concat(), 2)) & COOKIEMASK;
    Ok(if data < 4 { 0 } else { err(Errno(EACCES)) })
}

fn gen_v4(c: &mut Ctx) -> Ret {
    generate(c, 12, 8, &MSS_V4)
}
fn gen_v6(c: &mut Ctx) -> Ret {
    generate(c, 8, 32, &MSS_V6)
}
fn check_v4(c: &mut Ctx) -> Ret {
    check(c, 12, 8)
}
fn check_v6(c: &mut Ctx) -> Ret {
    check(c, 8, 32)
}
