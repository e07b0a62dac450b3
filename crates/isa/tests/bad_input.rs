//! Malformed bytecode and assembly give errors that name the place, never panics.

use isa::*;

fn decode_err(bytes: &[u8]) -> DecodeError {
    decode(bytes).expect_err("should not decode")
}

fn slot(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
    RawInsn {
        code,
        dst,
        src,
        off,
        imm,
    }
    .to_bytes()
}

#[test]
fn truncated_bytecode() {
    let mut bytes = encode(&assemble("mov %r0, 1\nexit").unwrap());
    bytes.truncate(12);
    let e = decode_err(&bytes);
    assert_eq!(e.index, 1);
    assert!(matches!(e.kind, DecodeErrorKind::Truncated { len: 12 }));
    assert!(e.to_string().contains("instruction 1"), "{e}");
}

#[test]
fn lddw_missing_its_second_half() {
    let mut bytes = encode(&assemble("mov %r0, 1\nlddw %r0, 0x1122334455667788").unwrap());
    bytes.truncate(16);
    let e = decode_err(&bytes);
    assert_eq!(e.index, 1);
    assert_eq!(e.kind, DecodeErrorKind::LddwMissingSecondHalf);

    // A second half that is itself an instruction is also rejected.
    let mut bytes = slot(0x18, 0, 0, 0, 1).to_vec();
    bytes.extend_from_slice(&slot(0x95, 0, 0, 0, 0));
    assert!(matches!(
        decode_err(&bytes).kind,
        DecodeErrorKind::LddwBadSecondHalf { code: 0x95, .. }
    ));
}

#[test]
fn unknown_opcodes() {
    for code in [0x8f_u8, 0xe7, 0xf4, 0x0e, 0xff, 0x9e, 0x38] {
        let mut bytes = encode(&assemble("mov %r0, 1").unwrap());
        bytes.extend_from_slice(&slot(code, 0, 0, 0, 0));
        let e = decode_err(&bytes);
        assert_eq!(e.index, 1, "{code:#x}");
        assert_eq!(e.kind, DecodeErrorKind::UnknownOpcode { code }, "{code:#x}");
        assert!(e.to_string().contains(&format!("0x{code:02x}")), "{e}");
    }
}

#[test]
fn reserved_fields_and_bad_registers() {
    let cases: &[([u8; 8], &str)] = &[
        (slot(0x95, 0, 0, 0, 1), "imm"),    // exit with an immediate
        (slot(0xb7, 0, 3, 0, 1), "src"),    // mov imm with a source register
        (slot(0x0f, 0, 1, 0, 7), "imm"),    // add reg with an immediate
        (slot(0x07, 0, 0, 4, 1), "offset"), // add with an offset
        (slot(0x05, 1, 0, 2, 0), "dst"),    // ja with a register
        (slot(0x61, 1, 2, 0, 9), "imm"),    // ldxw with an immediate
        (slot(0x62, 1, 2, 0, 9), "src"),    // stw with a source register
        (slot(0x85, 0, 0, 3, 1), "offset"), // helper call with an offset
    ];
    for (bytes, field) in cases {
        let e = decode_err(bytes);
        match &e.kind {
            DecodeErrorKind::ReservedField { field: f, .. } => assert_eq!(f, field, "{e}"),
            other => panic!("expected a reserved-field error, got {other}"),
        }
    }
    let e = decode_err(&slot(0xb7, 11, 0, 0, 1));
    assert!(
        matches!(
            e.kind,
            DecodeErrorKind::BadRegister {
                field: "dst",
                value: 11,
                ..
            }
        ),
        "{e}"
    );
    let e = decode_err(&slot(0xbf, 1, 15, 0, 0));
    assert!(
        matches!(
            e.kind,
            DecodeErrorKind::BadRegister {
                field: "src",
                value: 15,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn bad_field_values() {
    assert!(matches!(
        decode_err(&slot(0xdc, 1, 0, 0, 8)).kind,
        DecodeErrorKind::BadEndianWidth { imm: 8 }
    ));
    assert!(matches!(
        decode_err(&slot(0xdb, 1, 2, 0, 0x02)).kind,
        DecodeErrorKind::BadAtomicOp { imm: 2 }
    ));
    assert!(matches!(
        decode_err(&slot(0xd3, 1, 2, 0, 0)).kind,
        DecodeErrorKind::BadAtomicSize { .. }
    ));
    assert!(matches!(
        decode_err(&slot(0xbc, 1, 2, 32, 0)).kind,
        DecodeErrorKind::BadMovsxOffset { off: 32 }
    ));
    assert!(matches!(
        decode_err(&slot(0x85, 0, 3, 0, 0)).kind,
        DecodeErrorKind::BadCallSource { src: 3 }
    ));
    let mut lddw = slot(0x18, 1, 9, 0, 0).to_vec();
    lddw.extend_from_slice(&[0; 8]);
    assert!(matches!(
        decode_err(&lddw).kind,
        DecodeErrorKind::LddwBadSource { src: 9 }
    ));
    assert!(matches!(
        decode_err(&slot(0xe5, 0, 0, 1, 0)).kind,
        DecodeErrorKind::Unsupported { .. }
    ));
}

fn asm_err(text: &str) -> AsmError {
    assemble(text).expect_err("should not assemble")
}

#[test]
fn malformed_assembly_names_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        ("mov %r0, 1\nfrobnicate %r1\nexit", 2, "unknown mnemonic"),
        ("mov %r11, 1", 1, "no register r11"),
        ("exit\nmov %r0", 2, "expects 2 operand"),
        ("ja nowhere", 1, "unknown label `nowhere`"),
        ("a:\na:\nexit", 2, "defined twice"),
        ("mov32 %r0, 0x1ffffffff", 1, "does not fit a 32-bit"),
        ("ldxw %r0, [%r1+40000]", 1, "does not fit 16 bits"),
        ("ldxw %r0, [%r1+4", 1, "not a memory operand"),
        ("stxw [%r1], 5", 1, "not a register"),
        ("jeq %r1, 1, 3", 1, "jump target"),
        ("lddw %r1, map_frob(3)", 1, "unknown lddw form"),
        ("lddw %r1, 0x1ffffffffffffffff", 1, "does not fit 64 bits"),
        ("lock nand [%r10-8], %r1", 1, "unknown atomic operation"),
        ("call kfunc", 1, "takes a BTF id"),
        ("call frobnicate", 1, "known helper name"),
        ("movsx864 %r1, 5", 1, "register source"),
        ("lddw %r1, map_fd)3(", 1, "missing `)` after `(`"),
    ];
    for (text, line, needle) in cases {
        let e = asm_err(text);
        assert_eq!(e.line, *line, "{text}: {e}");
        assert!(
            e.to_string().contains(needle),
            "{text}: `{e}` lacks `{needle}`"
        );
    }
}

/// Found by `cargo fuzz run assemble`: a `)` before the `(` once sliced
/// the line backwards and panicked.
#[test]
fn fuzzed_lddw_with_parentheses_reversed() {
    assert!(assemble("lddw\x0b\x0br0,7)\x0bl)d(2\x0b\x0blw").is_err());
}

#[test]
fn far_jumps_need_ja32() {
    let mut text = String::from("ja far\n");
    for _ in 0..40_000 {
        text.push_str("mov %r0, 0\n");
    }
    text.push_str("far: exit\n");
    let e = asm_err(&text);
    assert_eq!(e.line, 1);
    assert!(e.to_string().contains("ja32"), "{e}");
    let ok = assemble(&text.replacen("ja far", "ja32 far", 1)).unwrap();
    assert_eq!(ok[0], Insn::Ja32 { off: 40_000 });
}
