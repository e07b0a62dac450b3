//! The ESP programs (`esp_3des`, `esp_aes`) against RustCrypto's `des`,
//! `aes` and `cbc`: for frames of many sizes and several keys, in the
//! interpreter and the JIT, the output is a valid IPv4 datagram carrying ESP
//! whose ciphertext is exactly the crate's CBC encryption (under the IV the
//! program chose, itself the ESP header encrypted with the key) of the
//! payload and RFC 4303's trailer; what is not encrypted passes untouched.

mod common;

use common::esp::*;
use common::*;
use runtime::*;

const TX: Verdict = Verdict::Xdp(XdpAction::Tx);
const PASS: Verdict = Verdict::Xdp(XdpAction::Pass);

/// A hook of `c`'s program with an SA, in the interpreter or the JIT.
fn esp_hook(c: Cipher, spi: u32, key: &[u8], jit: bool) -> Hook {
    let mut h = hook(c.program());
    if jit {
        h.enable_jit().unwrap();
    }
    set_sa(&h, spi, key);
    h
}

/// A frame: Ethernet (optionally one VLAN tag), IPv4 with `opts` bytes of
/// options, `payload` bytes of protocol `proto`, then `eth_pad` bytes of
/// Ethernet padding.
fn frame(vlan: bool, opts: usize, proto: u8, payload: &[u8], eth_pad: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
    if vlan {
        f.extend([0x81, 0x00, 0x00, 0x07]);
    }
    f.extend([0x08, 0x00]);
    let ihl = 20 + opts;
    let tot = (ihl + payload.len()) as u16;
    let mut ip = vec![0x40 | (ihl / 4) as u8, 0x10];
    ip.extend(tot.to_be_bytes());
    ip.extend([
        0x12, 0x34, 0x40, 0x00, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    ip.extend(std::iter::repeat_n(1u8, opts)); // NOPs
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend(ip);
    f.extend(payload);
    f.extend(std::iter::repeat_n(0xee, eth_pad));
    f
}

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn keys(c: Cipher) -> Vec<Vec<u8>> {
    let n = c.key_len();
    vec![
        (0..n as u8).map(|i| i.wrapping_mul(0x1d) ^ 0x5a).collect(),
        (0..n as u8).map(|i| 0xf0 ^ i.wrapping_mul(7)).collect(),
        (0..n as u8)
            .map(|i| i.wrapping_mul(0x9b).wrapping_add(3))
            .collect(),
    ]
}

/// Payload lengths: empty, around the block sizes, and up to a full
/// 1500-byte datagram (a 1514-byte frame).
const SIZES: [usize; 14] = [0, 1, 5, 6, 7, 8, 14, 15, 16, 17, 31, 100, 1000, 1480];

fn encrypts_like_the_crate(c: Cipher) {
    for (k, key) in keys(c).iter().enumerate() {
        let spi = 0x1000 + k as u32;
        let mut hooks = [esp_hook(c, spi, key, false), esp_hook(c, spi, key, true)];
        let mut next_seq = 1;
        for (i, &n) in SIZES.iter().enumerate() {
            let frames = [
                frame(false, 0, 17, &payload(n, i as u8), 0),
                frame(true, 0, 6, &payload(n, 1), 0),
                frame(
                    false,
                    12,
                    1,
                    &payload(n, 2),
                    60usize.saturating_sub(34 + 12 + n),
                ),
                frame(false, 0, 253, &payload(n, 3), 7),
            ];
            for f in frames.iter().filter(|f| f.len() <= 1518) {
                let mut outs = Vec::new();
                for h in &mut hooks {
                    let out = h.run(f, &meta(0)).unwrap();
                    assert_eq!(out.verdict, TX, "{c:?} key {k} size {n}");
                    outs.push(out.packet.to_vec());
                }
                assert_eq!(outs[0], outs[1], "{c:?}: the JIT differs");
                let seq = check_esp(c, key, spi, f, &outs[0]).unwrap();
                assert_eq!(seq, next_seq, "{c:?} key {k} size {n}: sequence number");
                next_seq += 1;
            }
        }
    }
}

#[test]
fn esp_3des_encrypts_like_the_crate() {
    encrypts_like_the_crate(Cipher::Tdes);
}

#[test]
fn esp_aes_encrypts_like_the_crate() {
    encrypts_like_the_crate(Cipher::Aes);
}

/// What is not a whole IPv4 datagram of at most 1500 bytes passes as it
/// came, and so does everything while the SPI is 0.
fn passes(c: Cipher) {
    let key = &keys(c)[0];
    let mut h = esp_hook(c, 7, key, false);
    let udp = frame(false, 0, 17, &payload(40, 0), 0);
    let mut frag = udp.clone();
    frag[20] = 0x20; // MF
    let mut offset = udp.clone();
    offset[21] = 0x01;
    let mut v6 = udp.clone();
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
    let big = frame(false, 0, 17, &payload(1481, 0), 0);
    let truncated = udp[..udp.len() - 1].to_vec();
    let mut bad_ihl = udp.clone();
    bad_ihl[14] = 0x44;
    let mut short_tot = udp.clone();
    short_tot[16..18].copy_from_slice(&10u16.to_be_bytes());
    for f in [
        frag,
        offset,
        v6,
        big,
        truncated,
        bad_ihl,
        short_tot,
        vec![0; 20],
        vec![],
    ] {
        let out = h.run(&f, &meta(0)).unwrap();
        assert_eq!(out.verdict, PASS, "{c:?}");
        assert_eq!(out.packet, &f[..], "{c:?}");
    }
    set_sa(&h, 0, key);
    let out = h.run(&udp, &meta(0)).unwrap();
    assert_eq!((out.verdict, out.packet), (PASS, &udp[..]), "{c:?}: SPI 0");
}

#[test]
fn esp_3des_passes_what_it_does_not_encrypt() {
    passes(Cipher::Tdes);
}

#[test]
fn esp_aes_passes_what_it_does_not_encrypt() {
    passes(Cipher::Aes);
}

/// The SA's counter at 2^32 - 1: the last number is sent, then frames are
/// dropped until the SA is rekeyed.
fn sequence_space(c: Cipher) {
    let key = &keys(c)[1];
    let h = esp_hook(c, 9, key, false);
    let m = map(&h, "esp_sa");
    let mut value = m.user_lookup(&0u32.to_le_bytes()).unwrap();
    value[8..16].copy_from_slice(&(u64::from(u32::MAX) - 1).to_le_bytes());
    m.user_update(&0u32.to_le_bytes(), &value, 0).unwrap();
    let mut h = h;
    let f = frame(false, 0, 17, &payload(10, 0), 0);
    let out = h.run(&f, &meta(0)).unwrap();
    assert_eq!(out.verdict, TX);
    assert_eq!(check_esp(c, key, 9, &f, out.packet).unwrap(), u32::MAX);
    let out = h.run(&f, &meta(0)).unwrap();
    assert_eq!(out.verdict, Verdict::Xdp(XdpAction::Drop));
}

#[test]
fn esp_3des_stops_at_the_end_of_the_sequence_space() {
    sequence_space(Cipher::Tdes);
}

#[test]
fn esp_aes_stops_at_the_end_of_the_sequence_space() {
    sequence_space(Cipher::Aes);
}

/// Instructions per packet (the profiler's figure): the first packet also
/// expands the key; then 64- and 1514-byte frames.
#[test]
fn instructions_per_packet() {
    for c in [Cipher::Tdes, Cipher::Aes] {
        let mut h = esp_hook(c, 1, &keys(c)[0], false);
        let small = frame(false, 0, 17, &payload(64 - 34, 0), 0);
        let large = frame(false, 0, 17, &payload(1500 - 20, 0), 0);
        let first = h.run(&small, &meta(0)).unwrap().stats.insns;
        let s = h.run(&small, &meta(0)).unwrap().stats.insns;
        let l = h.run(&large, &meta(0)).unwrap().stats.insns;
        println!(
            "{}: first packet (key expansion) {first}, 64-byte frame {s}, 1514-byte frame {l} instructions",
            c.program()
        );
        assert!(first > s && l > s);
    }
}
