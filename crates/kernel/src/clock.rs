//! A clock and a random-number source the kernel side of a differential
//! run shares with the VM.
//!
//! The kernel's `bpf_ktime_get_ns` and `bpf_get_prandom_u32` cannot be
//! seeded, and tracing them needs kprobes or fentry, which locked-down
//! kernels refuse. So a program that calls them is loaded a second time
//! with each such call turned into a call to a small subprogram appended to
//! it, which returns the next value from a map that user space fills before
//! every packet. The instructions are libbpf's final ones (maps, CO-RE and
//! subprograms already resolved), so only the calls change.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::{Error, ErrorKind, Result, check};
use crate::kmap::MapInfo;

/// Values per packet; a program reading more wraps around (and the diff
/// reports the count).
pub const SLOTS: usize = 64;
const OFF_NS: usize = 8;
const OFF_U32: usize = OFF_NS + 8 * SLOTS;
const VALUE_SIZE: usize = OFF_U32 + 4 * SLOTS;

/// Helper ids that read the clock or random numbers.
const CLOCK_HELPERS: [i32; 4] = [5, 125, 160, 208];
const RANDOM_HELPER: i32 = 7;

/// One eBPF instruction as the kernel takes it (`struct bpf_insn`: the
/// registers share a byte; `isa::RawInsn` keeps them apart).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct BpfInsn {
    pub code: u8,
    /// dst in the low nibble, src in the high one.
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

const fn ins(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> BpfInsn {
    BpfInsn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

fn is_helper_call(i: &BpfInsn) -> bool {
    i.code == 0x85 && i.regs >> 4 == 0
}

/// Whether the program reads the kernel's clock or random numbers.
pub fn reads_clock(insns: &[BpfInsn]) -> bool {
    insns
        .iter()
        .any(|i| is_helper_call(i) && (CLOCK_HELPERS.contains(&i.imm) || i.imm == RANDOM_HELPER))
}

/// The map holding the values (one array element).
pub struct Clock {
    fd: OwnedFd,
    pub info: MapInfo,
}

impl Clock {
    pub fn create() -> Result<Clock> {
        let name = c"sluice_clock";
        // SAFETY: a null opts pointer is allowed; the name is a C string.
        let fd = unsafe {
            libbpf_sys::bpf_map_create(
                libbpf_sys::BPF_MAP_TYPE_ARRAY,
                name.as_ptr(),
                4,
                VALUE_SIZE as u32,
                1,
                std::ptr::null(),
            )
        };
        check("creating the clock map", fd)?;
        // SAFETY: a fresh descriptor we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let info = MapInfo::of_fd(fd.as_raw_fd())?;
        Ok(Clock { fd, info })
    }

    /// The values the next packet's calls return, in call order.
    pub fn set(&self, ns: &[u64], u32s: &[u32]) -> Result<()> {
        let mut v = vec![0u8; VALUE_SIZE];
        for (i, t) in ns.iter().take(SLOTS).enumerate() {
            v[OFF_NS + 8 * i..OFF_NS + 8 * i + 8].copy_from_slice(&t.to_le_bytes());
        }
        for (i, r) in u32s.iter().take(SLOTS).enumerate() {
            v[OFF_U32 + 4 * i..OFF_U32 + 4 * i + 4].copy_from_slice(&r.to_le_bytes());
        }
        self.info.update(&0u32.to_le_bytes(), &v, 0)
    }

    /// How many clock readings and random numbers the kernel took since
    /// the last [`Clock::set`].
    pub fn used(&self) -> Result<(u32, u32)> {
        let v = self
            .info
            .lookup(&0u32.to_le_bytes())?
            .ok_or_else(|| Error::new(ErrorKind::Other, "the clock map lost its element"))?;
        let at = |o: usize| u32::from_le_bytes(v[o..o + 4].try_into().expect("4 bytes"));
        Ok((at(0), at(4)))
    }

    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A subprogram returning the next value of one list in the clock map:
/// `counter_off` is the offset of its counter, `values_off` of its values,
/// `shift` the log2 of a value's size.
fn reader(map_fd: RawFd, counter_off: i16, values_off: i16, shift: i32) -> Vec<BpfInsn> {
    let load = if shift == 3 { 0x79 } else { 0x61 }; // ldxdw / ldxw
    vec![
        // r1 = &clock[0] (BPF_PSEUDO_MAP_VALUE, offset 0)
        ins(0x18, 1, 2, 0, map_fd),
        ins(0, 0, 0, 0, 0),
        ins(0x61, 0, 1, counter_off, 0), // r0 = *(u32 *)(r1 + counter)
        ins(0xbf, 2, 0, 0, 0),           // r2 = r0
        ins(0x07, 2, 0, 0, 1),           // r2 += 1
        ins(0x63, 1, 2, counter_off, 0), // *(u32 *)(r1 + counter) = r2
        ins(0x57, 0, 0, 0, SLOTS as i32 - 1), // r0 &= SLOTS - 1
        ins(0x67, 0, 0, 0, shift),       // r0 <<= shift
        ins(0x0f, 1, 0, 0, 0),           // r1 += r0
        ins(load, 0, 1, values_off, 0),  // r0 = values[i]
        ins(0x95, 0, 0, 0, 0),           // exit
    ]
}

/// `insns` with every clock and random call sent to appended readers of
/// `clock`'s map.
pub fn rewrite(insns: &[BpfInsn], clock: &Clock) -> Vec<BpfInsn> {
    rewrite_for(insns, clock.fd())
}

fn rewrite_for(insns: &[BpfInsn], map_fd: RawFd) -> Vec<BpfInsn> {
    let calls = |ids: &[i32]| {
        insns
            .iter()
            .any(|i| is_helper_call(i) && ids.contains(&i.imm))
    };
    // Only readers that are called: the verifier rejects unreachable code.
    let mut out = insns.to_vec();
    let clock_at = calls(&CLOCK_HELPERS).then(|| {
        let at = out.len();
        out.extend(reader(map_fd, 0, OFF_NS as i16, 3));
        at
    });
    let random_at = calls(&[RANDOM_HELPER]).then(|| {
        let at = out.len();
        out.extend(reader(map_fd, 4, OFF_U32 as i16, 2));
        at
    });
    for (pc, slot) in out.iter_mut().enumerate().take(insns.len()) {
        if !is_helper_call(slot) {
            continue;
        }
        let target = if CLOCK_HELPERS.contains(&slot.imm) {
            clock_at
        } else if slot.imm == RANDOM_HELPER {
            random_at
        } else {
            None
        };
        if let Some(target) = target {
            // BPF_PSEUDO_CALL: imm is relative to the next instruction.
            *slot = ins(0x85, 0, 1, 0, (target as i64 - pc as i64 - 1) as i32);
        }
    }
    out
}

/// What a program was loaded with, to load a rewritten copy the same way.
pub struct LoadAs {
    pub name: String,
    pub prog_type: u32,
    pub expected_attach_type: u32,
    pub flags: u32,
    /// The BTF the function records name types of (0: none), and the
    /// records: where each function starts and its `BTF_KIND_FUNC` type.
    /// Programs with callbacks (`bpf_loop`, ...) need them.
    pub btf_fd: u32,
    pub func_info: Vec<libbpf_sys::bpf_func_info>,
}

/// Loads `insns` as a new program; returns its descriptor. The kernel's
/// verifier log comes back in the error when it refuses.
pub fn load(insns: &[BpfInsn], how: &LoadAs) -> Result<OwnedFd> {
    let name = std::ffi::CString::new(how.name.chars().take(15).collect::<String>())
        .map_err(|_| Error::new(ErrorKind::Invalid, "program name contains a NUL byte"))?;
    let mut log = vec![0u8; 1 << 20];
    let opts = |level: u32, log: &mut Vec<u8>| {
        let mut o = libbpf_sys::bpf_prog_load_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _,
            expected_attach_type: how.expected_attach_type,
            prog_flags: how.flags,
            ..Default::default()
        };
        if !how.func_info.is_empty() {
            o.prog_btf_fd = how.btf_fd;
            o.func_info = how.func_info.as_ptr().cast();
            o.func_info_cnt = how.func_info.len() as u32;
            o.func_info_rec_size = std::mem::size_of::<libbpf_sys::bpf_func_info>() as u32;
        }
        if level > 0 {
            o.log_level = level;
            o.log_size = log.len() as u32;
            o.log_buf = log.as_mut_ptr().cast();
        }
        o
    };
    let attempt = |level: u32, log: &mut Vec<u8>| {
        let mut o = opts(level, log);
        // SAFETY: `insns` is a live array of bpf_insn-layout structs; the
        // names are C strings; `o` is sized and its log buffer outlives
        // the call.
        unsafe {
            libbpf_sys::bpf_prog_load(
                how.prog_type,
                name.as_ptr(),
                c"GPL".as_ptr(),
                insns.as_ptr().cast(),
                insns.len() as _,
                &mut o,
            )
        }
    };
    let fd = attempt(0, &mut log);
    if fd >= 0 {
        // SAFETY: a fresh descriptor we now own.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    // Load again with the log on, to say why.
    attempt(1, &mut log);
    let text =
        String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
    let mut e = Error::errno(&format!("loading {} with the shared clock", how.name), -fd);
    let tail: Vec<&str> = text.lines().rev().take(20).collect();
    if !tail.is_empty() {
        e.message.push_str("\n--- kernel verifier log (end) ---\n");
        e.message
            .push_str(&tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_become_pc_relative_calls_of_the_appended_readers() {
        let prog = [
            ins(0x85, 0, 0, 0, 5), // call bpf_ktime_get_ns
            ins(0x85, 0, 0, 0, 1), // call bpf_map_lookup_elem: kept
            ins(0x85, 0, 0, 0, 7), // call bpf_get_prandom_u32
            ins(0x95, 0, 0, 0, 0),
        ];
        assert!(reads_clock(&prog));
        assert!(!reads_clock(&prog[1..2]));
        let rewritten_calls = |out: &[BpfInsn]| {
            out.iter()
                .enumerate()
                .filter(|(_, i)| i.code == 0x85 && i.regs >> 4 == 1)
                .map(|(pc, i)| pc as i64 + 1 + i64::from(i.imm))
                .collect::<Vec<_>>()
        };
        let out = rewrite_for(&prog, 99);
        let (clock_at, random_at) = (prog.len(), prog.len() + 11);
        assert_eq!(
            out[clock_at],
            ins(0x18, 1, 2, 0, 99),
            "reads the map's value"
        );
        assert_eq!(out[random_at + 9].code, 0x61, "random numbers are u32");
        assert_eq!(
            rewritten_calls(&out),
            vec![clock_at as i64, random_at as i64]
        );
        assert_eq!(out[1], prog[1]);
        assert_eq!(out.len(), prog.len() + 22);
        let clock_only = rewrite_for(&prog[..1], 99);
        assert_eq!(clock_only.len(), 1 + 11, "no unreachable random reader");
    }
}
