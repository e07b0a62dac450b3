//! The ESP programs (`esp_3des`, `esp_aes`) against RustCrypto's `des`,
//! `aes` and `cbc`: for frames of many sizes and several keys, in the
//! interpreter and the JIT, the output is a valid IPv4 datagram carrying ESP
//! whose ciphertext is exactly the crate's CBC encryption (under the IV the
//! program chose, itself the ESP header encrypted with the key) of the
//! payload and RFC 4303's trailer; what is not encrypted passes untouched.

mod common;

use cbc::cipher::{BlockDecryptMut, generic_array::GenericArray};
use cbc::cipher::{BlockEncrypt, BlockEncryptMut, KeyInit, KeyIvInit, block_padding::NoPadding};
use common::*;
use runtime::*;

const TX: Verdict = Verdict::Xdp(XdpAction::Tx);
const PASS: Verdict = Verdict::Xdp(XdpAction::Pass);

/// One of the two programs: its name, key length and block size.
#[derive(Clone, Copy, Debug)]
enum Cipher {
    Tdes,
    Aes,
}

impl Cipher {
    fn program(self) -> &'static str {
        match self {
            Cipher::Tdes => "esp_3des",
            Cipher::Aes => "esp_aes",
        }
    }

    fn key_len(self) -> usize {
        match self {
            Cipher::Tdes => 24,
            Cipher::Aes => 16,
        }
    }

    fn block(self) -> usize {
        match self {
            Cipher::Tdes => 8,
            Cipher::Aes => 16,
        }
    }

    /// The IV the programs use: the ESP header (zero-filled to a block)
    /// through the block cipher.
    fn iv(self, key: &[u8], esp_hdr: &[u8]) -> Vec<u8> {
        let mut block = vec![0u8; self.block()];
        block[..8].copy_from_slice(esp_hdr);
        match self {
            Cipher::Tdes => des::TdesEde3::new_from_slice(key)
                .unwrap()
                .encrypt_block(GenericArray::from_mut_slice(&mut block)),
            Cipher::Aes => aes::Aes128::new_from_slice(key)
                .unwrap()
                .encrypt_block(GenericArray::from_mut_slice(&mut block)),
        }
        block
    }

    fn encrypt(self, key: &[u8], iv: &[u8], plain: &[u8]) -> Vec<u8> {
        let mut buf = plain.to_vec();
        let n = buf.len();
        match self {
            Cipher::Tdes => cbc::Encryptor::<des::TdesEde3>::new_from_slices(key, iv)
                .unwrap()
                .encrypt_padded_mut::<NoPadding>(&mut buf, n)
                .map(|_| ()),
            Cipher::Aes => cbc::Encryptor::<aes::Aes128>::new_from_slices(key, iv)
                .unwrap()
                .encrypt_padded_mut::<NoPadding>(&mut buf, n)
                .map(|_| ()),
        }
        .unwrap();
        buf
    }

    fn decrypt(self, key: &[u8], iv: &[u8], ciphertext: &[u8]) -> Vec<u8> {
        let mut buf = ciphertext.to_vec();
        match self {
            Cipher::Tdes => cbc::Decryptor::<des::TdesEde3>::new_from_slices(key, iv)
                .unwrap()
                .decrypt_padded_mut::<NoPadding>(&mut buf)
                .map(|_| ()),
            Cipher::Aes => cbc::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
                .unwrap()
                .decrypt_padded_mut::<NoPadding>(&mut buf)
                .map(|_| ()),
        }
        .unwrap();
        buf
    }
}

/// The SA map's value: SPI, `expanded` = 0, `seq` = 0, the key, and room
/// for the schedule the program expands.
fn set_sa(h: &Hook, spi: u32, key: &[u8]) {
    let m = map(h, "esp_sa");
    let mut value = vec![0u8; m.spec().value_size as usize];
    value[..4].copy_from_slice(&spi.to_be_bytes());
    value[16..16 + key.len()].copy_from_slice(key);
    m.user_update(&0u32.to_le_bytes(), &value, 0).unwrap();
}

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

fn checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = hdr
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Checks one encrypted frame against its input; returns the sequence number.
fn check_esp(c: Cipher, key: &[u8], spi: u32, input: &[u8], out: &[u8]) -> u32 {
    let l3 = if input[12..14] == [0x81, 0x00] {
        18
    } else {
        14
    };
    let ihl = usize::from(input[l3] & 15) * 4;
    let tot = usize::from(u16::from_be_bytes([input[l3 + 2], input[l3 + 3]]));
    let plain = &input[l3 + ihl..l3 + tot];
    let hdr = l3 + ihl;
    // Ethernet and the IPv4 header: the same but for length, protocol, checksum.
    assert_eq!(out[..l3], input[..l3], "Ethernet header");
    let ip = &out[l3..hdr];
    assert!(ipv4_checksum_ok(ip), "IPv4 checksum");
    assert_eq!(ip[9], 50, "protocol");
    let out_tot = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    assert_eq!(l3 + out_tot, out.len(), "IPv4 total length vs frame");
    for k in (0..ihl).filter(|k| ![2, 3, 9, 10, 11].contains(k)) {
        assert_eq!(ip[k], input[l3 + k], "IPv4 header byte {k}");
    }
    // ESP header, IV, ciphertext of payload + trailer.
    let esp = &out[hdr..hdr + 8];
    assert_eq!(esp[..4], spi.to_be_bytes(), "SPI");
    let seq = u32::from_be_bytes(esp[4..8].try_into().unwrap());
    let b = c.block();
    let iv = &out[hdr + 8..hdr + 8 + b];
    assert_eq!(iv, c.iv(key, esp), "IV");
    let ciphertext = &out[hdr + 8 + b..];
    let enc_len = (plain.len() + 2).div_ceil(b) * b;
    assert_eq!(ciphertext.len(), enc_len, "ciphertext length");
    let decrypted = c.decrypt(key, iv, ciphertext);
    let pad = enc_len - plain.len() - 2;
    assert_eq!(&decrypted[..plain.len()], plain, "payload");
    let want_pad: Vec<u8> = (1..=pad as u8).collect();
    assert_eq!(
        &decrypted[plain.len()..plain.len() + pad],
        want_pad,
        "padding"
    );
    assert_eq!(decrypted[enc_len - 2], pad as u8, "pad length");
    assert_eq!(decrypted[enc_len - 1], input[l3 + 9], "next header");
    assert_eq!(c.encrypt(key, iv, &decrypted), ciphertext, "ciphertext");
    seq
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
                let seq = check_esp(c, key, spi, f, &outs[0]);
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
    assert_eq!(check_esp(c, key, 9, &f, &out.packet.to_vec()), u32::MAX);
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
