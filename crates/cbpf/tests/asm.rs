//! The `bpf_asm` syntax: every form of every mnemonic, and clear errors.

use cbpf::{Insn, assemble, image};

#[test]
fn every_form_assembles_to_the_kernels_encoding() {
    let text = "
        ; a comment line
        ld [12]            ; 0x20
        ldh [x + 14]       ; 0x48
        ldb [%x + 2]       ; 0x50
        ld #pktlen         ; 0x80
        ld #0x800          ; 0x00
        ldi 7              ; 0x00
        ld M[3]            ; 0x60
        ld #proto          ; 0x20 SKF_AD_OFF
        ldb #vlan_avail    ; 0x30 SKF_AD_OFF+48
        ldx #5             ; 0x01
        ldxi 0b101         ; 0x01
        ldx M[15]          ; 0x61
        ldx len            ; 0x81
        ldxb 4*([14]&0xf)  ; 0xb1
        st M[0]            ; 0x02
        stx M[1]           ; 0x03
        add #-1            ; 0x04
        sub x              ; 0x1c
        mul #010           ; 0x24 (octal 8)
        div #3
        mod x
        and #0xff
        or %x
        xor #1
        lsh #2
        rsh x
        neg
        tax
        txa
        jmp out
        jeq #1, t, f
        t: jneq x, f
        jlt #10, f
        jle x, f
        jgt #1, f
        jge x, out, f
        jset #4, out
        f: ret a
        out: ret #-1
    ";
    let p = assemble(text).unwrap();
    let codes: Vec<u16> = p.iter().map(|i| i.code).collect();
    assert_eq!(
        codes,
        [
            0x20, 0x48, 0x50, 0x80, 0x00, 0x00, 0x60, 0x20, 0x30, 0x01, 0x01, 0x61, 0x81, 0xb1,
            0x02, 0x03, 0x04, 0x1c, 0x24, 0x34, 0x9c, 0x54, 0x4c, 0xa4, 0x64, 0x7c, 0x84, 0x07,
            0x87, 0x05, 0x15, 0x1d, 0x35, 0x2d, 0x25, 0x3d, 0x45, 0x16, 0x06
        ]
    );
    assert_eq!(p[0].k, 12);
    assert_eq!(p[7].k, 0xffff_f000);
    assert_eq!(p[8].k, 0xffff_f030);
    assert_eq!(p[10].k, 5);
    assert_eq!(p[16].k, u32::MAX);
    assert_eq!(p[18].k, 8);
    // jmp out: from 29 to 38.
    assert_eq!(p[29].k, 38 - 29 - 1);
    // jeq #1, t, f: t is the next instruction, f is 37.
    assert_eq!((p[30].jt, p[30].jf), (0, 37 - 30 - 1));
    // jneq: the true branch falls through.
    assert_eq!((p[31].jt, p[31].jf), (0, 37 - 31 - 1));
    // jlt #10, f is jge #10 with the false branch to f.
    assert_eq!(
        (p[32].code, p[32].k, p[32].jt, p[32].jf),
        (0x35, 10, 0, 37 - 32 - 1)
    );
    assert_eq!(p[38], Insn::stmt(0x06, u32::MAX));
    // (M[3] is read before anything stored it: the kernel would refuse.)
    assert!(cbpf::check(&p).unwrap_err().to_string().contains("M[3]"));
    assert!(image(&p).contains("(038) ret      #-1"));
}

#[test]
fn bad_text_is_refused_with_its_line() {
    for (text, line, why) in [
        ("ld [12]\nfoo #1", 2, "unknown mnemonic `foo`"),
        ("ld [12]\njeq #1, nowhere\nret #0", 2, "no label `nowhere`"),
        ("top: ld [12]\njeq #1, top\nret #0", 2, "not ahead"),
        ("a: ret #0\na: ret #1", 2, "defined twice"),
        ("ld [x + ]", 1, "not understood"),
        ("add 5", 1, "not understood"),
        ("ret #99999999999", 1, "not understood"),
        ("neg x", 1, "takes no operand"),
        ("ldxb [14]", 1, "not understood"),
        ("ld M[1", 1, "not understood"),
    ] {
        let e = assemble(text).unwrap_err();
        assert_eq!(e.line, line, "{text}: {e}");
        assert!(e.why.contains(why), "{text}: {e}");
    }
    // A conditional jump cannot reach more than 255 ahead.
    let far = format!("jeq #1, end\n{}end: ret #0", "ld #1\n".repeat(300));
    assert!(assemble(&far).unwrap_err().why.contains("over 255"));
}
