//! The checker refuses what the kernel refuses, with the reason: hostile
//! programs by hand, and thousands of mutated ones compared with the
//! kernel's own `SO_ATTACH_FILTER` (no privilege needed).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use cbpf::{CheckError, Insn, assemble, check, class, mode, op, src};

/// Whether the kernel attaches `prog` to a socket.
fn kernel_accepts(sock: &OwnedFd, prog: &[Insn]) -> bool {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `fprog` points at `prog.len()` instructions laid out as
    // `struct sock_filter` (`Insn` is `repr(C)` with its fields).
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as u32,
        )
    };
    r == 0
}

fn socket() -> OwnedFd {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
    assert!(fd >= 0, "a UDP socket");
    // SAFETY: a fresh descriptor we own.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn reason(prog: &[Insn]) -> String {
    check(prog).unwrap_err().to_string()
}

#[test]
fn hostile_programs_are_refused_with_the_reason() {
    let ret0 = Insn::stmt(class::RET, 0);
    assert_eq!(check(&[]), Err(CheckError::Empty));
    assert!(reason(&[Insn::stmt(0xffff, 0), ret0]).contains("unknown opcode 0xffff"));
    let jump_out = Insn::jump(class::JMP | op::JEQ | src::K, 0, 5, 0);
    assert!(reason(&[jump_out, ret0]).contains("true branch (+5) leaves the program"));
    let ja_out = Insn::stmt(class::JMP | op::JA, 1);
    assert!(reason(&[ja_out, ret0]).contains("`ja` over 1"));
    let m16 = Insn::stmt(class::ST, 16);
    assert!(reason(&[m16, ret0]).contains("M[16]"));
    assert_eq!(
        check(&[Insn::stmt(class::LD | mode::IMM, 1)]),
        Err(CheckError::NoReturn)
    );
    let div0 = Insn::stmt(class::ALU | op::DIV | src::K, 0);
    assert!(reason(&[div0, ret0]).contains("division by the constant zero"));
    let shift = Insn::stmt(class::ALU | op::LSH | src::K, 32);
    assert!(reason(&[shift, ret0]).contains("shift by 32"));
    // A scratch word read on a path that did not write it.
    let p = assemble("ldh [12]\njeq #1, skip\nst M[3]\nskip: ld M[3]\nret a").unwrap();
    assert!(reason(&p).contains("M[3] is read before"));
    let p = assemble("ld #1\nst M[3]\njeq #1, a, b\na: ld M[3]\nb: ret a").unwrap();
    check(&p).unwrap();
    let unknown_ad = Insn::stmt(
        class::LD | cbpf::size::W | mode::ABS,
        cbpf::ancillary::AD_OFF + 64,
    );
    assert!(reason(&[unknown_ad, ret0]).contains("ancillary offset"));
    let sock = socket();
    for bad in [
        vec![Insn::stmt(0xffff, 0), ret0],
        vec![jump_out, ret0],
        vec![m16, ret0],
        vec![div0, ret0],
        vec![unknown_ad, ret0],
        assemble("ldh [12]\njeq #1, skip\nst M[3]\nskip: ld M[3]\nret a").unwrap(),
    ] {
        assert!(
            !kernel_accepts(&sock, &bad),
            "the kernel refuses {bad:?} too"
        );
    }
}

/// xorshift64*: reproducible noise without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn the_checker_agrees_with_the_kernel_on_mutated_programs() {
    let seeds = [
        "ldh [12]\njneq #0x800, drop\nldb [23]\njneq #17, drop\nldxb 4*([14]&0xf)\nldh [x + 16]\njeq #53, keep, drop\nkeep: ret #262144\ndrop: ret #0",
        "ld #pktlen\nst M[0]\nldx M[0]\ntxa\nadd #3\nmod #7\njgt x, a, b\na: ret a\nb: ret #0",
        "ld #proto\njeq #0x86dd, six\nld #vlan_avail\nret a\nsix: ldb [20]\nneg\nret a",
    ];
    let mut rng = Rng(0x5eed);
    let (mut accepted, mut refused) = (0, 0);
    for round in 0..6000 {
        let mut prog = assemble(seeds[round % seeds.len()]).unwrap();
        for _ in 0..=rng.below(3) {
            let i = rng.below(prog.len() as u64) as usize;
            let p = &mut prog[i];
            match rng.below(6) {
                0 => p.code = rng.below(0x100) as u16,
                1 => p.jt = rng.below(12) as u8,
                2 => p.jf = rng.below(12) as u8,
                3 => p.k = rng.below(40) as u32,
                4 => p.k = cbpf::ancillary::AD_OFF + rng.below(80) as u32,
                _ => {
                    prog.truncate(i.max(1));
                }
            }
        }
        let ours = check(&prog);
        let kernel = kernel_accepts(&socket(), &prog);
        assert_eq!(
            ours.is_ok(),
            kernel,
            "round {round}: {prog:?}: ours {ours:?}"
        );
        if kernel {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    println!("6000 mutated programs: {accepted} accepted, {refused} refused, as the kernel");
    assert!(accepted > 500 && refused > 500);
}
