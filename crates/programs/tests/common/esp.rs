//! The ESP programs' SA and an independent check of their output, with
//! RustCrypto's `des`, `aes` and `cbc` (shared by esp.rs and captures.rs).

use cbc::cipher::{BlockDecryptMut, BlockEncrypt, BlockEncryptMut, KeyInit, KeyIvInit};
use cbc::cipher::{block_padding::NoPadding, generic_array::GenericArray};
use runtime::Hook;

/// One of the two programs: its name, key length and block size.
#[derive(Clone, Copy, Debug)]
pub enum Cipher {
    Tdes,
    Aes,
}

impl Cipher {
    pub fn program(self) -> &'static str {
        match self {
            Cipher::Tdes => "esp_3des",
            Cipher::Aes => "esp_aes",
        }
    }

    pub fn key_len(self) -> usize {
        match self {
            Cipher::Tdes => 24,
            Cipher::Aes => 16,
        }
    }

    pub fn block(self) -> usize {
        match self {
            Cipher::Tdes => 8,
            Cipher::Aes => 16,
        }
    }

    /// The IV the programs use: the ESP header (zero-filled to a block)
    /// through the block cipher.
    pub fn iv(self, key: &[u8], esp_hdr: &[u8]) -> Vec<u8> {
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

    pub fn encrypt(self, key: &[u8], iv: &[u8], plain: &[u8]) -> Vec<u8> {
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

    pub fn decrypt(self, key: &[u8], iv: &[u8], ciphertext: &[u8]) -> Vec<u8> {
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
pub fn set_sa(h: &Hook, spi: u32, key: &[u8]) {
    let m = super::map(h, "esp_sa");
    let mut value = vec![0u8; m.spec().value_size as usize];
    value[..4].copy_from_slice(&spi.to_be_bytes());
    value[16..16 + key.len()].copy_from_slice(key);
    m.user_update(&0u32.to_le_bytes(), &value, 0).unwrap();
}

pub fn checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = hdr
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// `Err(what)` unless `a == b`.
fn same<T: PartialEq + std::fmt::Debug + ?Sized>(a: &T, b: &T, what: &str) -> Result<(), String> {
    if a == b {
        Ok(())
    } else {
        Err(format!("{what}: {a:?} instead of {b:?}"))
    }
}

/// Where the IPv4 header of an Ethernet frame is (after up to two VLAN
/// tags), if the frame has one.
fn ipv4_at(f: &[u8]) -> Option<usize> {
    let mut at = 12;
    for _ in 0..2 {
        match f.get(at..at + 2)? {
            [0x81, 0x00] | [0x88, 0xa8] => at += 4,
            _ => break,
        }
    }
    (f.get(at..at + 2)? == [0x08, 0x00]).then_some(at + 2)
}

/// Whether the programs encrypt `f`: a whole, unfragmented IPv4 datagram
/// of at most 1500 bytes (with a sane header) in one XDP buffer.
pub fn encrypted(f: &[u8]) -> bool {
    let Some(l3) = ipv4_at(f) else { return false };
    let Some(ip) = f.get(l3..l3 + 20) else {
        return false;
    };
    let ihl = usize::from(ip[0] & 15) * 4;
    let tot = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    ip[0] >> 4 == 4
        && ihl >= 20
        && l3 + ihl <= f.len()
        && u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff == 0
        && (ihl..=1500).contains(&tot)
        && l3 + tot <= f.len()
        && f.len() <= runtime::XDP_LINEAR_MAX
}

/// Checks an encrypted frame against its input: Ethernet header as it was,
/// a valid IPv4 header (checksum, length, protocol 50, the rest unchanged),
/// the SPI, the IV (the ESP header through the cipher), and a ciphertext
/// that decrypts to the payload and RFC 4303's trailer and is exactly the
/// crate's encryption of them. Returns the sequence number.
pub fn check_esp(c: Cipher, key: &[u8], spi: u32, input: &[u8], out: &[u8]) -> Result<u32, String> {
    let l3 = ipv4_at(input).ok_or("not IPv4")?;
    let ihl = usize::from(input[l3] & 15) * 4;
    let tot = usize::from(u16::from_be_bytes([input[l3 + 2], input[l3 + 3]]));
    let plain = &input[l3 + ihl..l3 + tot];
    let hdr = l3 + ihl;
    let b = c.block();
    let enc_len = (plain.len() + 2).div_ceil(b) * b;
    same(&out.len(), &(hdr + 8 + b + enc_len), "frame length")?;
    same(&out[..l3], &input[..l3], "Ethernet header")?;
    let ip = &out[l3..hdr];
    same(&checksum(ip), &0, "IPv4 checksum")?;
    same(&ip[9], &50, "protocol")?;
    let out_tot = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    same(
        &(l3 + out_tot),
        &out.len(),
        "IPv4 total length + header offset",
    )?;
    for k in (0..ihl).filter(|k| ![2, 3, 9, 10, 11].contains(k)) {
        same(&ip[k], &input[l3 + k], &format!("IPv4 header byte {k}"))?;
    }
    let esp = &out[hdr..hdr + 8];
    same(&esp[..4], &spi.to_be_bytes(), "SPI")?;
    let seq = u32::from_be_bytes(esp[4..8].try_into().unwrap());
    let iv = &out[hdr + 8..hdr + 8 + b];
    same(iv, &c.iv(key, esp), "IV")?;
    let ciphertext = &out[hdr + 8 + b..];
    let decrypted = c.decrypt(key, iv, ciphertext);
    let pad = enc_len - plain.len() - 2;
    same(&decrypted[..plain.len()], plain, "payload")?;
    let want_pad: Vec<u8> = (1..=pad as u8).collect();
    same(
        &decrypted[plain.len()..plain.len() + pad],
        &want_pad,
        "padding",
    )?;
    same(&decrypted[enc_len - 2], &(pad as u8), "pad length")?;
    same(&decrypted[enc_len - 1], &input[l3 + 9], "next header")?;
    same(
        &c.encrypt(key, iv, &decrypted)[..],
        ciphertext,
        "ciphertext",
    )?;
    Ok(seq)
}
