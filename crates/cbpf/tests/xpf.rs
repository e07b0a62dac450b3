//! xPF, extension by extension (bank switch, NDX bounds, mswitch keep /
//! zero / copy between packets, the budget's exception handler), run the
//! same way in the interpreter ([`Instance`]), and after translation to
//! eBPF in sluice's VM (interpreter, and JIT after sluice's verifier) and
//! in the kernel (tc and XDP test runs, the memory maps read and written
//! through the kernel): the same results packet by packet and the same
//! memory at the end. And the programs xPF refuses, with their reason.

use ::xpf::{XpfEngine, XpfRunner};
use cbpf::Meta;
use cbpf::to_ebpf;
use cbpf::xpf::{self, Form, Handle, Instance, Switch, XpfOptions};

/// What happens, in order.
#[derive(Clone, Debug)]
enum Step {
    Packet(Vec<u8>),
    Malloc,
    Switch(u32, Switch),
    Write(u32, u32, Vec<u32>),
}

/// Per packet its result; then every allocated block's words.
fn play(r: &mut XpfRunner, steps: &[Step]) -> (Vec<u32>, Vec<(Handle, Vec<u32>)>) {
    let mut rets = Vec::new();
    for s in steps {
        match s {
            Step::Packet(d) => {
                let (ret, _) = r.packet(d, d.len() as u32, 0).unwrap().expect("runs");
                rets.push(ret);
            }
            Step::Malloc => {
                r.memory().malloc().unwrap();
            }
            Step::Switch(h, how) => {
                r.memory().mswitch(Handle(*h), *how).unwrap();
            }
            Step::Write(h, at, w) => r.memory().mwrite(Handle(*h), *at, w).unwrap(),
        }
    }
    let m = r.memory();
    let words = m.words() as usize;
    let blocks = m
        .handles()
        .into_iter()
        .map(|h| (h, m.mread(h, 0, words).unwrap()))
        .collect();
    (rets, blocks)
}

/// Runs `steps` on every engine in both forms (`xpf::XpfRunner`:
/// the xPF interpreter, the translation in sluice's VM interpreter and
/// JIT, and in the kernel); all must agree. Returns the interpreter's
/// results (socket form) to check against the intent.
fn everywhere(text: &str, opts: XpfOptions, steps: &[Step]) -> (Vec<u32>, Vec<(Handle, Vec<u32>)>) {
    let prog = xpf::assemble(text).unwrap();
    let kernel = testkit::kernel_available("xPF programs in the kernel");
    let mut first = None;
    for form in [Form::Socket, Form::Xdp] {
        let want = play(
            &mut XpfRunner::new(&prog, opts, XpfEngine::Interp, form).unwrap(),
            steps,
        );
        let mut engines = vec![XpfEngine::Vm, XpfEngine::Jit];
        if kernel {
            engines.push(XpfEngine::Kernel);
        }
        for &engine in &engines {
            let got = play(
                &mut XpfRunner::new(&prog, opts, engine, form).unwrap(),
                steps,
            );
            assert_eq!(
                got, want,
                "{form:?} form, {engine:?} against the xPF interpreter"
            );
        }
        println!(
            "{form:?} form: {} steps alike in the xPF interpreter, {engines:?}",
            steps.len(),
        );
        first.get_or_insert(want);
    }
    first.unwrap()
}

/// A 60-byte Ethernet frame with `bytes` from offset 14.
fn frame(bytes: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[12] = 0x08;
    f[14..14 + bytes.len()].copy_from_slice(bytes);
    f
}

#[test]
fn bank_switching_keeps_scratch_and_persistent_words_apart() {
    // Per IP protocol a packet count (persistent words 0..255), a total in
    // persistent word 300; the protocol kept in scratch M[1] meanwhile.
    let text = "
        ldb [23]
        tax
        st M[1]        ; scratch
        bsp
        ld M[x + 0]
        add #1
        st M[x + 0]
        ld M[300]
        add #1
        st M[300]
        bss
        ld M[1]        ; scratch again
        ret a";
    let opts = XpfOptions {
        words: 512,
        ..XpfOptions::default()
    };
    let proto = |p: u8| {
        let mut b = [0u8; 10];
        b[9] = p;
        Step::Packet(frame(&b))
    };
    let steps = vec![proto(6), proto(17), proto(6), proto(1), proto(6)];
    let (rets, blocks) = everywhere(text, opts, &steps);
    assert_eq!(rets, vec![6, 17, 6, 1, 6]);
    let b = &blocks[0].1;
    assert_eq!((b[6], b[17], b[1], b[300], b[0]), (3, 1, 1, 5, 0));
}

#[test]
fn indexed_loads_and_stores_end_the_filter_outside_their_bank() {
    let text = "
        ldb [14]
        tax
        ld #7
        st M[x + 0]    ; scratch[X], X below 16
        ldb [15]
        tax
        bsp
        ld M[x + 10]   ; persistent[X + 10], below 32
        add #1
        st M[x + 10]
        bss
        ldb [14]
        tax
        ld M[x + 0]
        ret a";
    let opts = XpfOptions {
        words: 32,
        ..XpfOptions::default()
    };
    let steps: Vec<Step> = [(0u8, 0u8), (15, 21), (16, 0), (3, 22), (255, 255), (15, 21)]
        .iter()
        .map(|&(a, b)| Step::Packet(frame(&[a, b])))
        .collect();
    let (rets, blocks) = everywhere(text, opts, &steps);
    assert_eq!(rets, vec![7, 7, 0, 0, 0, 7]);
    let b = &blocks[0].1;
    assert_eq!((b[10], b[31]), (1, 2));
    assert_eq!(b.iter().sum::<u32>(), 3, "nothing written out of bounds");
}

#[test]
fn mswitch_keeps_zeroes_or_copies_between_packets() {
    let text = "
        bsp
        ld M[0]
        add #1
        st M[0]
        ret a";
    let opts = XpfOptions {
        words: 4,
        blocks: 3,
        ..XpfOptions::default()
    };
    let p = || Step::Packet(frame(&[]));
    let steps = vec![
        p(),
        p(),
        p(),
        Step::Malloc,                  // block 1
        Step::Switch(1, Switch::Copy), // 1 = 3, active
        p(),
        p(),                           // block 1: 5; block 0 stays 3
        Step::Switch(0, Switch::Zero), // block 0 = 0, active
        p(),                           // block 0: 1
        Step::Write(1, 0, vec![100]),  // the inactive block
        Step::Switch(1, Switch::Keep),
        p(),          // block 1: 101
        Step::Malloc, // block 2, zero
        Step::Write(2, 3, vec![9]),
    ];
    let (rets, blocks) = everywhere(text, opts, &steps);
    assert_eq!(rets, vec![1, 2, 3, 4, 5, 1, 101]);
    let words: Vec<(u32, Vec<u32>)> = blocks.into_iter().map(|(h, w)| (h.0, w)).collect();
    assert_eq!(
        words,
        vec![
            (0, vec![1, 0, 0, 0]),
            (1, vec![101, 0, 0, 0]),
            (2, vec![0, 0, 0, 9])
        ]
    );
}

#[test]
fn the_budget_sends_a_long_loop_to_the_exception_handler() {
    // Sum 3 per iteration, n = the packet's byte 14 iterations; the
    // handler counts exceptions in persistent word 0.
    let text = "
              ldb [14]
              st M[0]
              ld #0
              st M[1]
        top:  ld M[0]
              jeq #0, done
              sub #1
              st M[0]
              ld M[1]
              add #3
              st M[1]
              ja top
        done: ld M[1]
              add #1
              ret a
              exc
              bsp
              ld M[0]
              add #1
              st M[0]
              ret #0xffff";
    let opts = XpfOptions {
        words: 1,
        blocks: 1,
        budget: 100,
    };
    let steps: Vec<Step> = [0u8, 1, 5, 12, 13, 14, 200, 12]
        .iter()
        .map(|&n| Step::Packet(frame(&[n])))
        .collect();
    let (rets, blocks) = everywhere(text, opts, &steps);
    // 4 instructions, then 8 per iteration: the 13th `ja` is at 108 > 100.
    assert_eq!(rets, vec![1, 4, 16, 37, 0xffff, 0xffff, 0xffff, 37]);
    assert_eq!(blocks[0].1, vec![3]);
    let mut i = Instance::new(&xpf::assemble(text).unwrap(), opts).unwrap();
    let v = i.run(&frame(&[13]), &Meta::default()).unwrap();
    assert!(v.exceeded && v.ret == 0xffff);
    assert!(!i.run(&frame(&[12]), &Meta::default()).unwrap().exceeded);
    assert_eq!(i.exceptions(), 1);
}

#[test]
fn a_loop_without_a_handler_ends_with_zero_over_budget() {
    let text = "
        ldx #0
        top: txa
        add #1
        tax
        ja top";
    let text = format!("{text}\nret #1");
    // `ret #1` is unreachable: refused.
    let e = xpf::check(&xpf::assemble(&text).unwrap(), &XpfOptions::default()).unwrap_err();
    assert!(e.to_string().contains("unreachable"), "{e}");
    let text = "
        ldx #0
        top: txa
        jgt #1000000, out
        add #1
        tax
        ja top
        out: ret #1";
    let opts = XpfOptions {
        budget: 50,
        ..XpfOptions::default()
    };
    let (rets, _) = everywhere(text, opts, &[Step::Packet(frame(&[]))]);
    assert_eq!(rets, vec![0]);
}

#[test]
fn time_loads_read_one_clock_per_packet_on_every_engine() {
    // Persistent words 2n and 2n+1: the seconds and nanoseconds packet n
    // saw (its number kept in word 15); a classic filter may not read them.
    let text = "
        bsp
        ld M[15]
        lsh #1
        tax
        ld #time_sec
        st M[x + 0]
        ld #time_nsec
        st M[x + 1]
        ld M[15]
        add #1
        st M[15]
        ret #-1";
    let prog = xpf::assemble(text).unwrap();
    let opts = XpfOptions {
        words: 16,
        ..XpfOptions::default()
    };
    // Two packets at the same time, then one whose time steps back: the
    // filter's clock never does, and moves a nanosecond per reading.
    let times = [1_700_000_000_999_999_999u64, 1_700_000_000_999_999_999, 5];
    let want = [
        1_700_000_000,
        999_999_999,
        1_700_000_001,
        0,
        1_700_000_001,
        1,
        3,
    ];
    let f = frame(&[0x45]);
    let run = |engine, form, times: &[u64]| {
        let mut r = XpfRunner::new(&prog, opts, engine, form).unwrap();
        for &t in times {
            r.packet(&f, f.len() as u32, t).unwrap().expect("runs");
        }
        let m = r.memory();
        m.mread(m.active(), 0, 16).unwrap()
    };
    for form in [Form::Socket, Form::Xdp] {
        for engine in [XpfEngine::Interp, XpfEngine::Vm, XpfEngine::Jit] {
            let got = run(engine, form, &times);
            assert_eq!(got[..6], want[..6], "{engine:?} {form:?}");
            assert_eq!(got[15], want[6], "{engine:?} {form:?}");
        }
        // The kernel's clock is its own: boot time, nanoseconds in range.
        if testkit::kernel_available("xPF time loads in the kernel") {
            let got = run(XpfEngine::Kernel, form, &times);
            let boot = std::fs::read_to_string("/proc/uptime").unwrap();
            let up: f64 = boot.split_whitespace().next().unwrap().parse().unwrap();
            for n in 0..3 {
                assert!(f64::from(got[2 * n]) <= up + 1.0, "{got:?}");
                assert!(got[2 * n + 1] < 1_000_000_000, "{got:?}");
            }
            assert!((got[4], got[5]) >= (got[0], got[1]), "monotonic: {got:?}");
        }
    }
    let classic = cbpf::assemble("ld #time_sec\nret a").unwrap();
    assert!(
        cbpf::check(&classic)
            .unwrap_err()
            .to_string()
            .contains("ancillary offset SKF_AD_OFF + 128 is unknown")
    );
    assert!(cbpf::image(&prog).contains("ld       [time_sec]"));
}

#[test]
fn xpf_refuses_what_could_break_it_with_the_reason() {
    let opts = XpfOptions {
        words: 8,
        ..XpfOptions::default()
    };
    let refused = |text: &str, why: &str| {
        let e = match xpf::assemble(text) {
            Err(e) => e.to_string(),
            Ok(p) => xpf::check(&p, &opts).unwrap_err().to_string(),
        };
        assert!(e.contains(why), "`{text}`: {e}");
    };
    refused(
        "ld #1\nl: ja l2\nl2: ret a\nexc\nh: ld #0\nja h\nret #0",
        "backward jump in the exception handler",
    );
    refused(
        "ldb [14]\njeq #1, p, s\np: bsp\nja m\ns: bss\nm: ld M[0]\nret a",
        "different banks",
    );
    refused(
        "bsp\nld M[8]\nret a",
        "persistent word M[8]: the block has 8 words",
    );
    refused("ld M[16]\nret a", "scratch word M[16]");
    refused("ret #0\nexc\nret #1", "the exception handler never runs");
    refused(
        "l: ldb [14]\nja l\nexc\nret #0\nexc\nret #1",
        "a second `exc`",
    );
    refused("l: ld #1\njeq #1, l\nret a", "only `ja` jumps back");
    // Classic tools refuse xPF's additions by name.
    for t in ["bsp\nret #0", "ld M[x + 1]\nret a", "l: ja l\nret #0"] {
        assert!(cbpf::assemble(t).is_err(), "{t}");
    }
    let loop_ = xpf::assemble("l: ldb [14]\nja l\nret #0").unwrap();
    assert!(cbpf::check(&loop_).is_err() && to_ebpf(&loop_).is_err());
    // Sizes out of range.
    let p = xpf::assemble("ret #0").unwrap();
    for bad in [
        XpfOptions { words: 0, ..opts },
        XpfOptions {
            words: xpf::MAX_WORDS + 1,
            ..opts
        },
        XpfOptions { blocks: 0, ..opts },
        XpfOptions {
            budget: u32::MAX,
            ..opts
        },
    ] {
        assert!(Instance::new(&p, bad).is_err(), "{bad:?}");
    }
}

#[test]
fn xpf_programs_print_with_their_mnemonics() {
    let p = xpf::assemble("top: bsp\nld M[x + 3]\nst M[x + 4]\nbss\nja top\nret #0\nexc\nret #1");
    let p = p.unwrap();
    let text = xpf::image(&p);
    assert!(text.contains("(000) bsp"), "{text}");
    assert!(text.contains("(001) ld       M[x + 3]"), "{text}");
    assert!(text.contains("(004) ja       0"), "{text}");
    assert!(text.contains("(006) exc"), "{text}");
}
