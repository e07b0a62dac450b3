//! Random XDP programs for soundness testing: built from templates that
//! packet programs are made of (bounds checks, packet, stack and map
//! accesses, NULL checks, arithmetic, branches, helper calls, a bounded
//! loop, callbacks of `bpf_loop` and `bpf_for_each_map_elem`; and, in
//! `pointers`, variable offsets into the stack and map values, every form
//! of a packet bounds check, spills and fills, bpf-to-bpf calls and helpers
//! taking buffers), with offsets and sizes drawn near the edges of what is
//! allowed, so that many programs are accepted and many only just.
//!
//! The soundness test runs every accepted program in the checked
//! interpreter: no accepted program may trip a run-time check.

mod pointers;

use std::fmt::Write;

/// A small deterministic generator (SplitMix64), seedable from a test case
/// number; or driven by fuzzer bytes, one byte per decision while they
/// last, so that a mutated byte changes one decision of the program
/// rather than all of them.
pub struct Rng {
    state: u64,
    choices: Vec<u8>,
    at: usize,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: seed,
            choices: Vec::new(),
            at: 0,
        }
    }

    /// Decisions taken from `bytes`, then from a stream seeded by them.
    pub fn from_bytes(bytes: &[u8]) -> Rng {
        let seed = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        Rng {
            state: seed,
            choices: bytes.to_vec(),
            at: 0,
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        if let Some(&b) = self.choices.get(self.at) {
            self.at += 1;
            // Spread the byte over the word, the same way every time.
            return mix(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(b as u64 + 1));
        }
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.state)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The maps every generated program may use: an array (key 4, value 32,
/// 4 entries) and a hash (key 4, value 16, 8 entries).
pub const ARRAY_VALUE: u32 = 32;
pub const HASH_VALUE: u32 = 16;

const SIZES: [(&str, i64); 4] = [("b", 1), ("h", 2), ("w", 4), ("dw", 8)];

fn scratch(r: &mut Rng) -> u8 {
    r.below(6) as u8
}

fn imm(r: &mut Rng) -> i64 {
    *r.pick(&[
        0,
        1,
        2,
        3,
        7,
        8,
        15,
        16,
        31,
        32,
        63,
        64,
        255,
        256,
        -1,
        -2,
        -8,
        0x7fff_ffff,
        -0x8000_0000,
        1000,
        65535,
    ])
}

/// One random program as assembly text (the syntax of [`isa::assemble`]).
/// Register roles: r6 the context, r7 `data`, r8 `data_end`, r9 a pointer
/// temporary, r0-r5 scratch numbers.
pub fn program(seed: u64) -> String {
    generate(&mut Rng::new(seed))
}

/// A random program whose decisions are `choices`, one byte each (for a
/// fuzzer, whose mutations then stay local), then a stream seeded by them.
pub fn program_from(choices: &[u8]) -> String {
    generate(&mut Rng::from_bytes(choices))
}

fn generate(r: &mut Rng) -> String {
    let mut s = String::new();
    let mut out = |line: String| {
        s.push_str(&line);
        s.push('\n');
    };
    out("mov %r6, %r1".into());
    out("ldxw %r7, [%r6+0]".into());
    out("ldxw %r8, [%r6+4]".into());
    let reinit = |r: &mut Rng, out: &mut dyn FnMut(String)| {
        for reg in 0..6 {
            out(format!("mov %r{reg}, {}", imm(r)));
        }
    };
    reinit(r, &mut out);
    let blocks = 2 + r.below(10);
    // Callback functions, placed after the program's exit.
    let mut funcs = String::new();
    for b in 0..blocks {
        out(format!("b{b}:"));
        let skip = format!("b{}", (b + 2).min(blocks));
        match r.below(26) {
            16 | 17 => callback(r, b, &mut out, &mut funcs),
            18 => pointers::stack_var_offset(r, &mut out),
            19 | 20 => pointers::map_value_var_offset(r, &mut out, b),
            21 => pointers::packet_check_forms(r, &mut out, b),
            22 => pointers::spill_fill(r, &mut out),
            23 => {
                let mut f = |line: String| {
                    funcs.push_str(&line);
                    funcs.push('\n');
                };
                pointers::subprogram(r, &mut out, &mut f, b);
                reinit(r, &mut out);
            }
            24 | 25 => {
                pointers::helper_buffers(r, &mut out);
                reinit(r, &mut out);
            }
            // Arithmetic on numbers.
            0..=2 => {
                let op = *r.pick(&[
                    "add", "sub", "mul", "and", "or", "xor", "lsh", "rsh", "arsh", "div", "mod",
                    "mov", "neg",
                ]);
                let w = if r.chance(30) { "32" } else { "" };
                let d = scratch(r);
                let src = if r.chance(50) {
                    format!("%r{}", scratch(r))
                } else {
                    let mut v = imm(r);
                    if matches!(op, "lsh" | "rsh" | "arsh") {
                        v = v.rem_euclid(if w.is_empty() { 64 } else { 32 });
                    }
                    if matches!(op, "div" | "mod") && v == 0 {
                        v = 3;
                    }
                    v.to_string()
                };
                if op == "neg" {
                    out(format!("neg{w} %r{d}"));
                } else {
                    out(format!("{op}{w} %r{d}, {src}"));
                }
                if r.chance(20) {
                    out(format!(
                        "{} %r{d}",
                        r.pick(&["be16", "be32", "le16", "le32", "be64"])
                    ));
                }
            }
            // A packet bounds check.
            3 | 4 => {
                let k = r.below(48);
                out("mov %r9, %r7".into());
                out(format!("add %r9, {k}"));
                let cond = r.pick(&["jgt %r9, %r8", "jge %r9, %r8"]);
                out(format!("{cond}, end"));
            }
            // A packet load or store at a fixed offset.
            5 | 6 => {
                let (sz, n) = *r.pick(&SIZES);
                let off = r.below(48) as i64 - if r.chance(5) { 2 } else { 0 };
                let off = off - off % n;
                if r.chance(60) {
                    out(format!("ldx{sz} %r{}, [%r7+{off}]", scratch(r)));
                } else {
                    out(format!("stx{sz} [%r7+{off}], %r{}", scratch(r)));
                }
            }
            // A variable packet offset, masked and rechecked.
            7 => {
                let x = scratch(r);
                let mask = r.pick(&[1, 3, 7, 15, 31, 63]);
                let k = r.below(8) + 1;
                out(format!("and %r{x}, {mask}"));
                out("mov %r9, %r7".into());
                out(format!("add %r9, %r{x}"));
                out(format!("mov %r{x}, %r9"));
                out(format!("add %r{x}, {k}"));
                out(format!("jgt %r{x}, %r8, end"));
                let off = r.below(k + 1) as i64;
                out(format!("ldxb %r{x}, [%r9+{off}]"));
            }
            // Stack stores and loads.
            8 | 9 => {
                let (sz, n) = *r.pick(&SIZES);
                let off = -((1 + r.below(8) as i64) * 8)
                    + if r.chance(50) {
                        0
                    } else {
                        n * r.below(8 / n as u64) as i64
                    };
                if r.chance(50) {
                    out(format!("stx{sz} [%r10{off:+}], %r{}", scratch(r)));
                } else {
                    out(format!("ldx{sz} %r{}, [%r10{off:+}]", scratch(r)));
                }
            }
            // A map lookup, its NULL check, an access into the value.
            10 | 11 => {
                let array = r.chance(50);
                let (map, vsize) = if array {
                    (0, ARRAY_VALUE)
                } else {
                    (1, HASH_VALUE)
                };
                out(format!("stxw [%r10-4], %r{}", scratch(r)));
                if r.chance(50) {
                    out(format!("and32 %r1, {}", r.below(8)));
                    out("stxw [%r10-4], %r1".into());
                }
                out("mov %r2, %r10".into());
                out("add %r2, -4".into());
                out(format!("lddw %r1, map_idx({map})"));
                out("call bpf_map_lookup_elem".into());
                if r.chance(90) {
                    out("jeq %r0, 0, end".into());
                }
                let (sz, n) = *r.pick(&SIZES);
                if r.chance(40) {
                    let x = 1 + r.below(5);
                    out(format!("mov %r{x}, {}", imm(r)));
                    out(format!("and %r{x}, {}", r.pick(&[3, 7, 15, 31])));
                    out(format!("add %r0, %r{x}"));
                }
                let off = r.below(vsize as u64 + 4) as i64;
                let off = off - off % n;
                if r.chance(50) {
                    out(format!("ldx{sz} %r1, [%r0+{off}]"));
                } else {
                    out(format!("st{sz} [%r0+{off}], {}", imm(r)));
                }
                reinit(r, &mut out);
            }
            // A branch over the next block.
            12 | 13 => {
                let c = r.pick(&[
                    "jeq", "jne", "jgt", "jge", "jlt", "jle", "jsgt", "jsge", "jslt", "jsle",
                    "jset",
                ]);
                let w = if r.chance(30) { "32" } else { "" };
                out(format!("{c}{w} %r{}, {}, {skip}", scratch(r), imm(r)));
            }
            // Helpers that return numbers.
            14 => {
                out(format!(
                    "call {}",
                    r.pick(&[
                        "bpf_get_prandom_u32",
                        "bpf_ktime_get_ns",
                        "bpf_get_smp_processor_id"
                    ])
                ));
                reinit(r, &mut out);
            }
            // A bounded loop, or moving the packet start.
            15 => {
                if r.chance(50) {
                    let n = 1 + r.below(6);
                    out("mov %r5, 0".into());
                    out(format!("l{b}:"));
                    out(format!("add %r{}, %r5", r.below(5)));
                    out("add %r5, 1".into());
                    out(format!("jlt %r5, {n}, l{b}"));
                } else {
                    out("mov %r1, %r6".into());
                    out(format!("mov %r2, {}", r.below(32) as i64 - 16));
                    out("call bpf_xdp_adjust_head".into());
                    if r.chance(85) {
                        out("ldxw %r7, [%r6+0]".into());
                        out("ldxw %r8, [%r6+4]".into());
                    }
                    reinit(r, &mut out);
                }
            }
            _ => unreachable!(),
        }
    }
    let mut tail = String::new();
    let _ = writeln!(tail, "b{blocks}:");
    let _ = writeln!(tail, "end:");
    let _ = writeln!(tail, "mov %r0, 2");
    let _ = writeln!(tail, "exit");
    s + &tail + &funcs
}

/// A call of `bpf_loop` or `bpf_for_each_map_elem` with a callback `cbN`
/// (its code goes to `funcs`) that touches its context on the caller's
/// stack, or the key and value it is given.
fn callback(r: &mut Rng, b: u64, out: &mut dyn FnMut(String), funcs: &mut String) {
    let mut f = |line: String| {
        funcs.push_str(&line);
        funcs.push('\n');
    };
    // The context: 16 bytes at fp-16 of the caller, or none.
    let ctx = r.chance(80);
    if ctx {
        out("stdw [%r10-16], 0".into());
        if r.chance(80) {
            out("stdw [%r10-8], 0".into());
        }
    }
    let each = r.chance(40);
    if each {
        out(format!("lddw %r1, map_idx({})", r.below(2)));
    } else {
        out(format!("mov %r1, {}", r.below(6)));
    }
    out(format!("lddw %r2, func(cb{b})"));
    if ctx {
        out("mov %r3, %r10".into());
        out("add %r3, -16".into());
    } else {
        out("mov %r3, 0".into());
    }
    out("mov %r4, 0".into());
    out(format!(
        "call {}",
        if each {
            "bpf_for_each_map_elem"
        } else {
            "bpf_loop"
        }
    ));
    f(format!("cb{b}:"));
    let ctx_reg = if each { 4 } else { 2 };
    if each {
        // Key (4 bytes) and value (16 or 32 bytes), near their ends.
        let key_off = *r.pick(&[0, 0, 2, 4]);
        f(format!("ldxw %r0, [%r2+{key_off}]"));
        let (sz, n) = *r.pick(&SIZES);
        let off = r.below(u64::from(HASH_VALUE) + 4) as i64;
        let off = off - off % n;
        if r.chance(50) {
            f(format!("ldx{sz} %r0, [%r3+{off}]"));
        } else {
            f(format!("st{sz} [%r3+{off}], {}", imm(r)));
        }
    }
    let mut stop = false;
    if ctx {
        let (sz, n) = *r.pick(&SIZES);
        let off = r.below(20) as i64 - if r.chance(10) { 4 } else { 0 };
        let off = off - off.rem_euclid(n);
        f(format!("ldx{sz} %r5, [%r{ctx_reg}+{off}]"));
        f("add %r5, 1".into());
        f(format!("stx{sz} [%r{ctx_reg}+{off}], %r5"));
        if r.chance(50) {
            f(format!("jgt %r5, {}, cb{b}_stop", r.below(8)));
            stop = true;
        }
    }
    let ret = if r.chance(5) { 2 } else { 0 };
    f(format!("mov %r0, {ret}"));
    f("exit".into());
    if stop {
        f(format!("cb{b}_stop:"));
        f("mov %r0, 1".into());
        f("exit".into());
    }
}
