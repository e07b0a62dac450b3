//! Random captures for the shard tests: classic pcap (both byte orders,
//! micro- and nanosecond timestamps, random snapshot lengths) and pcapng
//! (sections of either byte order, interfaces of different link types and
//! resolutions, enhanced, simple and obsolete packet blocks, custom,
//! statistics, name-resolution and unknown blocks), with payloads that
//! copy earlier records (so they look like records), and some cut short
//! or corrupt.

/// splitmix64: the captures' randomness, from one seed proptest gives.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 for n = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    /// True once in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

fn put32(out: &mut Vec<u8>, v: u32, be: bool) {
    out.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}

fn put16(out: &mut Vec<u8>, v: u16, be: bool) {
    out.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}

/// A packet's bytes: random, zeros, or (adversarial) a copy of bytes the
/// file already holds, whole records included.
fn payload(rng: &mut Rng, file: &[u8], len: usize) -> Vec<u8> {
    match rng.below(4) {
        0 => vec![0; len],
        1 if file.len() > 8 => {
            let from = rng.below(file.len() as u64) as usize;
            let mut p: Vec<u8> = file[from..].iter().copied().take(len).collect();
            p.resize(len, 0xab);
            p
        }
        _ => (0..len).map(|_| rng.next() as u8).collect(),
    }
}

/// Cuts the file short (a truncated last record) or leaves it.
fn maybe_truncate(rng: &mut Rng, file: &mut Vec<u8>, keep: usize) {
    if rng.one_in(6) && file.len() > keep {
        let at = keep + rng.below((file.len() - keep) as u64) as usize;
        file.truncate(at);
    }
}

/// A random classic pcap file.
pub fn pcap(rng: &mut Rng) -> Vec<u8> {
    let (be, nano) = (rng.one_in(2), rng.one_in(2));
    let snaplen = match rng.below(3) {
        0 => 65_535,
        1 => 262_144,
        _ => 16 + rng.below(300) as u32,
    };
    let linktype = [1u32, 101, 113, 105, 147][rng.below(5) as usize];
    let mut f = Vec::new();
    put32(&mut f, if nano { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }, be);
    put16(&mut f, 2, be);
    put16(&mut f, 4, be);
    put32(&mut f, 0, be);
    put32(&mut f, 0, be);
    put32(&mut f, snaplen, be);
    put32(&mut f, linktype, be);
    let frac_limit = if nano { 1_000_000_000 } else { 1_000_000 };
    let mut sec = rng.below(1 << 31) as u32;
    for _ in 0..rng.below(60) {
        let incl = rng.below(u64::from(snaplen.min(400)) + 1) as u32;
        let orig = incl + (rng.below(3) * rng.below(100)) as u32;
        sec = if rng.one_in(25) {
            rng.below(1 << 31) as u32
        } else {
            sec.saturating_add(rng.below(3) as u32)
        };
        let mut frac = rng.below(frac_limit) as u32;
        if rng.one_in(40) {
            frac = frac_limit as u32 + 5;
        }
        let data = payload(rng, &f, incl as usize);
        for v in [sec, frac, incl, orig] {
            put32(&mut f, v, be);
        }
        f.extend_from_slice(&data);
        if rng.one_in(80) {
            // A corrupt header: longer than any record read.
            for v in [sec, 0, 9_000_000, 9_000_000] {
                put32(&mut f, v, be);
            }
        }
    }
    maybe_truncate(rng, &mut f, 24);
    f
}

/// A pcapng block of `kind`, `body` padded to 4 bytes.
fn block(out: &mut Vec<u8>, kind: u32, body: &[u8], be: bool) {
    let len = (12 + body.len().next_multiple_of(4)) as u32;
    put32(out, kind, be);
    put32(out, len, be);
    out.extend_from_slice(body);
    out.resize(out.len() + body.len().next_multiple_of(4) - body.len(), 0);
    put32(out, len, be);
}

fn section_header(out: &mut Vec<u8>, be: bool) {
    let mut b = Vec::new();
    put32(&mut b, 0x1a2b_3c4d, be);
    put16(&mut b, 1, be);
    put16(&mut b, 0, be);
    b.extend_from_slice(&[0xff; 8]);
    block(out, 0x0a0d_0d0a, &b, be);
}

fn interface(out: &mut Vec<u8>, rng: &mut Rng, be: bool) {
    let mut b = Vec::new();
    put16(
        &mut b,
        [1u16, 101, 113, 105, 147, 228][rng.below(6) as usize],
        be,
    );
    put16(&mut b, 0, be);
    put32(
        &mut b,
        [0u32, 65_535, 64 + rng.below(200) as u32][rng.below(3) as usize],
        be,
    );
    if rng.one_in(2) {
        let resol = [6u8, 9, 3, 0x80 | 20][rng.below(4) as usize];
        put16(&mut b, 9, be);
        put16(&mut b, 1, be);
        b.extend_from_slice(&[resol, 0, 0, 0]);
    }
    if rng.one_in(3) {
        put16(&mut b, 14, be);
        put16(&mut b, 8, be);
        let offset = rng.below(1000);
        b.extend_from_slice(&if be {
            offset.to_be_bytes()
        } else {
            offset.to_le_bytes()
        });
    }
    put32(&mut b, 0, be);
    block(out, 1, &b, be);
}

/// A random pcapng file.
pub fn pcapng(rng: &mut Rng) -> Vec<u8> {
    let mut f = Vec::new();
    let mut ts = rng.below(1 << 50);
    for _ in 0..1 + rng.below(3) {
        let be = rng.one_in(2);
        section_header(&mut f, be);
        let mut interfaces = 1 + rng.below(3);
        for _ in 0..interfaces {
            interface(&mut f, rng, be);
        }
        for _ in 0..rng.below(40) {
            let len = rng.below(300) as usize;
            let data = payload(rng, &f, len);
            ts += rng.below(3) * rng.below(1_000_000);
            // Now and then a packet of an interface never described.
            let stray = u64::from(rng.one_in(40));
            let iface = rng.below(interfaces + stray) as u32;
            let mut b = Vec::new();
            match rng.below(9) {
                0..=3 => {
                    put32(&mut b, iface, be);
                    put32(&mut b, (ts >> 32) as u32, be);
                    put32(&mut b, ts as u32, be);
                    put32(&mut b, len as u32, be);
                    put32(&mut b, (len as u64 + rng.below(50)) as u32, be);
                    b.extend_from_slice(&data);
                    block(&mut f, 6, &b, be);
                }
                4 => {
                    put32(&mut b, (len as u64 + rng.below(3) * 40) as u32, be);
                    b.extend_from_slice(&data);
                    block(&mut f, 3, &b, be);
                }
                5 => {
                    put16(&mut b, iface as u16, be);
                    put16(&mut b, 0, be);
                    put32(&mut b, (ts >> 32) as u32, be);
                    put32(&mut b, ts as u32, be);
                    put32(&mut b, len as u32, be);
                    put32(&mut b, len as u32, be);
                    b.extend_from_slice(&data);
                    block(&mut f, 2, &b, be);
                }
                6 => {
                    // Custom (with a private enterprise number) or unknown.
                    let kind = [0x0bad, 0x4000_0bad, 0x1234, 0x8000_0042][rng.below(4) as usize];
                    put32(&mut b, 32473, be);
                    b.extend_from_slice(&data);
                    block(&mut f, kind, &b, be);
                }
                7 => {
                    // Interface statistics, or an empty name resolution block.
                    if rng.one_in(2) {
                        put32(&mut b, 0, be);
                        put32(&mut b, (ts >> 32) as u32, be);
                        put32(&mut b, ts as u32, be);
                        block(&mut f, 5, &b, be);
                    } else {
                        put32(&mut b, 0, be);
                        block(&mut f, 4, &b, be);
                    }
                }
                _ => {
                    interface(&mut f, rng, be);
                    interfaces += 1;
                }
            }
        }
    }
    maybe_truncate(rng, &mut f, 28);
    f
}
