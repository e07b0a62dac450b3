//! Encoding, decoding, disassembly and assembly are exact inverses.

use isa::arbitrary as strategy;

use isa::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn encode_then_decode_is_identity(insn in strategy::insn()) {
        let bytes = encode(&[insn]);
        prop_assert_eq!(bytes.len(), 8 * insn.slots());
        prop_assert_eq!(decode(&bytes).unwrap(), vec![insn]);
    }

    #[test]
    fn disassemble_then_assemble_is_identity(insn in strategy::insn()) {
        let text = insn.to_string();
        let back = assemble(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(back, vec![insn], "text: {}", text);
    }

    #[test]
    fn raw_slots_decode_to_their_own_encoding(a in any::<[u8; 8]>(), b in any::<[u8; 8]>()) {
        let mut bytes = a.to_vec();
        bytes.extend_from_slice(&b);
        // Whatever decodes must encode back to exactly the bytes it came from.
        if let Ok(insns) = decode(&bytes) {
            prop_assert_eq!(encode(&insns), bytes);
        }
        if let Ok(insns) = decode(&a) {
            prop_assert_eq!(encode(&insns), a.to_vec());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn programs_survive_a_listing_with_labels(prog in prop::collection::vec(strategy::insn(), 1..40)) {
        let bytes = encode(&prog);
        for labels in [false, true] {
            for annotate in [false, true] {
                let text = listing(&prog, &ListingOptions { labels, annotate });
                let back = assemble(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                prop_assert_eq!(encode(&back), bytes.clone(), "listing:\n{}", text);
            }
        }
    }
}

/// Opcodes that are valid in some encoding; every other byte must be rejected.
#[test]
fn every_opcode_byte_is_either_decodable_or_named_unknown() {
    let mut valid = 0;
    for code in 0..=255u8 {
        // Try a handful of operand fillings; one valid filling makes the opcode valid.
        let fillings = [
            (0u8, 0u8, 0i16, 0i32),
            (1, 0, 0, 16),
            (1, 2, 0, 0),
            (0, 0, 0, 1),
            (1, 2, 0, 1),
            (1, 2, 8, 0),
            (1, 2, 0, 0xe1),
        ];
        let ok = fillings.iter().any(|&(dst, src, off, imm)| {
            let raw = RawInsn {
                code,
                dst,
                src,
                off,
                imm,
            };
            decode_one(raw, Some(RawInsn::default())).is_ok()
        });
        if ok {
            valid += 1;
        } else {
            let raw = RawInsn {
                code,
                ..RawInsn::default()
            };
            let err = decode_one(raw, Some(RawInsn::default())).unwrap_err();
            assert!(
                matches!(
                    err,
                    DecodeErrorKind::UnknownOpcode { .. }
                        | DecodeErrorKind::Unsupported { .. }
                        | DecodeErrorKind::BadAtomicSize { .. }
                ),
                "opcode {code:#04x}: {err}"
            );
        }
    }
    // ALU and ALU64: 12 binary ops x 2 sources x 2 classes + 2 neg + 3 byte-order = 53;
    // JMP: ja, 11 conditions x 2 sources, call, callx, exit = 26; JMP32: ja32 + 22 = 23;
    // LD: lddw + 3 abs + 3 ind = 7; LDX: 4 mem + 3 memsx = 7; ST: 4; STX: 4 mem + 2 atomic = 6.
    assert_eq!(valid, 126);
}

#[test]
fn conformance_style_text_assembles_to_known_bytes() {
    // lddw.data of the conformance suite gives its raw encoding.
    let insns = assemble("lddw %r0, 0x1122334455667788\nexit").unwrap();
    let words: Vec<u64> = encode(&insns)
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(
        words,
        vec![0x5566778800000018, 0x1122334400000000, 0x0000000000000095]
    );

    let cases: &[(&str, [u8; 8])] = &[
        ("mov32 %r0, 1", [0xb4, 0x00, 0, 0, 1, 0, 0, 0]),
        ("add %r1, %r2", [0x0f, 0x21, 0, 0, 0, 0, 0, 0]),
        ("ldxh %r2, [%r1+12]", [0x69, 0x12, 12, 0, 0, 0, 0, 0]),
        ("stxdw [%r10-8], %r1", [0x7b, 0x1a, 0xf8, 0xff, 0, 0, 0, 0]),
        ("jeq %r1, 0x800, +3", [0x15, 0x01, 3, 0, 0x00, 0x08, 0, 0]),
        ("sdiv32 %r0, -2", [0x34, 0x00, 1, 0, 0xfe, 0xff, 0xff, 0xff]),
        ("movsx1664 %r8, %r7", [0xbf, 0x78, 16, 0, 0, 0, 0, 0]),
        ("ldxsw %r0, [%r10-4]", [0x81, 0xa0, 0xfc, 0xff, 0, 0, 0, 0]),
        ("bswap16 %r0", [0xd7, 0x00, 0, 0, 16, 0, 0, 0]),
        ("be32 %r3", [0xdc, 0x03, 0, 0, 32, 0, 0, 0]),
        (
            "lock fetch add32 [%r10-4], %r1",
            [0xc3, 0x1a, 0xfc, 0xff, 0x01, 0, 0, 0],
        ),
        (
            "lock cmpxchg [%r10-8], %r1",
            [0xdb, 0x1a, 0xf8, 0xff, 0xf1, 0, 0, 0],
        ),
        ("ja32 +1", [0x06, 0, 0, 0, 1, 0, 0, 0]),
        ("call 5", [0x85, 0, 0, 0, 5, 0, 0, 0]),
        ("call bpf_map_lookup_elem", [0x85, 0, 0, 0, 1, 0, 0, 0]),
        ("call local +2", [0x85, 0x10, 0, 0, 2, 0, 0, 0]),
        ("call %r2", [0x8d, 0x02, 0, 0, 0, 0, 0, 0]),
        ("ldabsh 12", [0x28, 0, 0, 0, 12, 0, 0, 0]),
        ("exit", [0x95, 0, 0, 0, 0, 0, 0, 0]),
    ];
    for (text, bytes) in cases {
        assert_eq!(encode(&assemble(text).unwrap()), bytes.to_vec(), "{text}");
    }
}

#[test]
fn labels_and_the_implicit_exit_label_resolve() {
    let text = "
        mov %r0, 0
        jeq %r1, 0, exit   # the first exit
        ja done
    back:
        exit
    done: mov %r0, 1
        ja back
    ";
    let insns = assemble(text).unwrap();
    assert_eq!(
        insns[1],
        Insn::Jmp {
            width: Width::W64,
            cond: Cond::Eq,
            dst: Reg::R1,
            src: Operand::Imm(0),
            off: 1
        }
    );
    assert_eq!(insns[2], Insn::Ja { off: 1 });
    assert_eq!(insns[5], Insn::Ja { off: -3 });
}
