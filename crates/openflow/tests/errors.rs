//! Every refusal with the (type, code) the specification gives it, and
//! the ERROR message that answers it.

use openflow::*;

fn flow_mod(matcher: Match, instructions: Vec<Instruction>) -> FlowMod {
    FlowMod {
        cookie: 0,
        cookie_mask: 0,
        table_id: 0,
        command: FlowModCommand::Add,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: 1,
        buffer_id: NO_BUFFER,
        out_port: port::ANY,
        out_group: group::ANY,
        flags: 0,
        matcher,
        instructions,
    }
}

/// A flow mod frame whose match holds the raw TLVs `oxms` and whose
/// instructions are the raw `insts`.
fn raw_flow_mod(oxms: &[u8], insts: &[u8]) -> Vec<u8> {
    let mut b = Message::FlowMod(flow_mod(Match::default(), vec![])).encode(1);
    b.truncate(48);
    let len = 4 + oxms.len();
    b.extend_from_slice(&[0, 1]);
    b.extend_from_slice(&(len as u16).to_be_bytes());
    b.extend_from_slice(oxms);
    b.resize(48 + len.div_ceil(8) * 8, 0);
    b.extend_from_slice(insts);
    let n = b.len() as u16;
    b[2..4].copy_from_slice(&n.to_be_bytes());
    b
}

/// A flow mod frame applying the raw action bytes `actions`.
fn raw_actions(actions: &[u8]) -> Vec<u8> {
    let mut inst = vec![0, 4];
    inst.extend_from_slice(&(8 + actions.len() as u16).to_be_bytes());
    inst.extend_from_slice(&[0; 4]);
    inst.extend_from_slice(actions);
    raw_flow_mod(&[], &inst)
}

fn err(frame: &[u8]) -> DecodeError {
    match Message::decode(frame) {
        Ok(m) => panic!("decoded {m:?}"),
        Err(e) => e,
    }
}

#[track_caller]
fn refused(frame: &[u8], err_type: u16, code: u16) -> DecodeError {
    let e = err(frame);
    assert_eq!((e.err_type, e.code), (err_type, code), "{e}");
    e
}

#[test]
fn header_errors() {
    let ok = Message::BarrierRequest.encode(5);
    let mut v1 = ok.clone();
    v1[0] = 1;
    let e = refused(&v1, error::BAD_REQUEST, error::BAD_REQUEST_BAD_VERSION);
    assert!(e.reason.contains("version 0x01"), "{e}");
    let mut t = ok.clone();
    t[1] = 30;
    refused(&t, error::BAD_REQUEST, error::BAD_REQUEST_BAD_TYPE);
    t[1] = 255;
    refused(&t, error::BAD_REQUEST, error::BAD_REQUEST_BAD_TYPE);
    // Longer or shorter than the header says, or than a header.
    refused(&ok[..7], error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN);
    let mut long = ok.clone();
    long.push(0);
    refused(&long, error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN);
    // A fixed body with bytes left over.
    long[3] = 9;
    refused(&long, error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN);
    // Type 29 and 22..=23 are 1.3 types that are not modelled.
    t[1] = 29;
    assert!(matches!(
        Message::decode(&t),
        Ok((_, Message::Unsupported { msg_type: 29, .. }))
    ));
}

#[test]
fn oxm_errors() {
    // eth_type with 3 bytes: the reason names message, offset and field.
    let e = refused(
        &raw_flow_mod(&[0x80, 0, 0x0a, 3, 8, 0, 0], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_LEN,
    );
    assert_eq!(
        e.reason,
        "flow_mod: OXM TLV at byte 52 has length 3, eth_type needs 2"
    );
    // A TLV longer than the match.
    refused(
        &raw_flow_mod(&[0x80, 0, 0x0a, 9, 8, 0], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_LEN,
    );
    // Half a TLV header.
    refused(
        &raw_flow_mod(&[0x80, 0], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_LEN,
    );
    // Unknown field, unknown class, another experimenter.
    refused(
        &raw_flow_mod(&[0x80, 0, 50 << 1, 1, 0], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_FIELD,
    );
    refused(
        &raw_flow_mod(&[0x00, 1, 40 << 1, 4, 0, 0, 0, 1], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_FIELD,
    );
    // Class 1 fields 0-15 are Open vSwitch's registers (NXM_NX_REG0..15).
    let (_, m) = Message::decode(&raw_flow_mod(&[0x00, 1, 0, 4, 0, 0, 0, 1], &[])).unwrap();
    let Message::FlowMod(f) = m else { panic!() };
    assert_eq!(f.matcher.fields, vec![Oxm::exact(Field::Reg0, 1)]);
    refused(
        &raw_flow_mod(&[0xff, 0xff, 42 << 1, 6, 0, 0, 0x23, 0x20, 0, 2], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_FIELD,
    );
    // A mask on in_port, which the spec does not allow.
    refused(
        &raw_flow_mod(&[0x80, 0, 1, 8, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_MASK,
    );
    // Value bits where the mask is 0.
    refused(
        &raw_flow_mod(&[0x80, 0, 0x19, 8, 10, 0, 0, 1, 0xff, 0, 0, 0], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_WILDCARDS,
    );
    // vlan_vid is 13 bits.
    refused(
        &raw_flow_mod(&[0x80, 0, 0x0c, 2, 0x20, 0], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_BAD_VALUE,
    );
    // A field twice.
    refused(
        &raw_flow_mod(&[0x80, 0, 0x0a, 2, 8, 0, 0x80, 0, 0x0a, 2, 0x86, 0xdd], &[]),
        error::BAD_MATCH,
        error::BAD_MATCH_DUP_FIELD,
    );
    // Match type 0 (OFPMT_STANDARD).
    let mut b = raw_flow_mod(&[], &[]);
    b[49] = 0;
    refused(&b, error::BAD_MATCH, error::BAD_MATCH_BAD_TYPE);
    // A match length running past the frame, or under its own header.
    let mut b = raw_flow_mod(&[], &[]);
    b[51] = 0x40;
    refused(&b, error::BAD_MATCH, error::BAD_MATCH_BAD_LEN);
    b[51] = 2;
    refused(&b, error::BAD_MATCH, error::BAD_MATCH_BAD_LEN);
    // The padding to 8 bytes is required.
    let b = raw_flow_mod(&[0x80, 0, 0x0a, 2, 8, 0], &[]);
    let mut cut = b[..b.len() - 1].to_vec();
    cut[3] -= 1;
    refused(&cut, error::BAD_MATCH, error::BAD_MATCH_BAD_LEN);
}

fn prereq(fields: &[Oxm]) -> Result<(), DecodeError> {
    Match {
        fields: fields.to_vec(),
    }
    .check_prerequisites()
}

#[track_caller]
fn no_prereq(fields: &[Oxm]) {
    let e = prereq(fields).unwrap_err();
    assert_eq!(
        (e.err_type, e.code),
        (error::BAD_MATCH, error::BAD_MATCH_BAD_PREREQ),
        "{e}"
    );
}

#[test]
fn prerequisites() {
    use Field::*;
    let x = Oxm::exact;
    assert_eq!(prereq(&[]), Ok(()));
    no_prereq(&[x(Ipv4Src, 1)]);
    no_prereq(&[x(EthType, 0x86dd), x(Ipv4Src, 1)]);
    // A masked eth_type does not pin the protocol.
    no_prereq(&[
        Oxm::masked(EthDst, 0, 0),
        Oxm {
            field: EthType,
            value: 0x0800,
            mask: None,
        },
        x(TcpSrc, 1),
    ]);
    assert_eq!(prereq(&[x(EthType, 0x0800), x(Ipv4Src, 1)]), Ok(()));
    // tcp_src needs ip_proto=6, which needs eth_type IPv4 or IPv6.
    no_prereq(&[x(EthType, 0x0800), x(IpProto, 17), x(TcpSrc, 1)]);
    no_prereq(&[x(IpProto, 6), x(TcpSrc, 1)]);
    assert_eq!(
        prereq(&[x(EthType, 0x86dd), x(IpProto, 6), x(TcpSrc, 1)]),
        Ok(())
    );
    assert_eq!(
        prereq(&[
            x(EthType, 0x0800),
            x(IpProto, 6),
            Oxm::masked(TcpFlags, 2, 2)
        ]),
        Ok(())
    );
    assert_eq!(
        prereq(&[x(EthType, 0x0800), x(IpProto, 17), x(UdpDst, 53)]),
        Ok(())
    );
    no_prereq(&[x(EthType, 0x0800), x(IpProto, 1), x(Icmpv6Type, 1)]);
    assert_eq!(
        prereq(&[
            x(EthType, 0x86dd),
            x(IpProto, 58),
            x(Icmpv6Type, 135),
            x(Ipv6NdTarget, 1),
            x(Ipv6NdSll, 2)
        ]),
        Ok(())
    );
    no_prereq(&[
        x(EthType, 0x86dd),
        x(IpProto, 58),
        x(Icmpv6Type, 128),
        x(Ipv6NdTarget, 1),
    ]);
    no_prereq(&[
        x(EthType, 0x86dd),
        x(IpProto, 58),
        x(Icmpv6Type, 135),
        x(Ipv6NdTll, 1),
    ]);
    // vlan_pcp needs a tag: VLAN_VID != NONE.
    no_prereq(&[x(VlanPcp, 3)]);
    no_prereq(&[x(VlanVid, 0), x(VlanPcp, 3)]);
    assert_eq!(prereq(&[x(VlanVid, 0x1005), x(VlanPcp, 3)]), Ok(()));
    assert_eq!(
        prereq(&[Oxm::masked(VlanVid, 0x1000, 0x1000), x(VlanPcp, 3)]),
        Ok(())
    );
    assert_eq!(
        prereq(&[x(EthType, 0x0806), x(ArpSpa, 1), x(ArpOp, 1)]),
        Ok(())
    );
    no_prereq(&[x(EthType, 0x0800), x(ArpTpa, 1)]);
    no_prereq(&[x(InPhyPort, 1)]);
    assert_eq!(prereq(&[x(InPort, 1), x(InPhyPort, 1)]), Ok(()));
    assert_eq!(prereq(&[x(EthType, 0x8847), x(MplsLabel, 5)]), Ok(()));
    no_prereq(&[x(EthType, 0x0800), x(MplsBos, 1)]);
    no_prereq(&[x(EthType, 0x0800), x(Ipv6Exthdr, 1)]);
    let e = prereq(&[x(EthType, 0x0800), x(Ipv6Src, 1)]).unwrap_err();
    assert_eq!(e.reason, "match: ipv6_src needs eth_type = 0x86dd");
}

#[test]
fn action_errors() {
    let output = [0, 0, 0, 16, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0];
    assert!(Message::decode(&raw_actions(&output)).is_ok());
    // Output of length 8, action of length 12 and 0.
    let mut a = output;
    a[3] = 8;
    refused(
        &raw_actions(&a[..8]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_LEN,
    );
    refused(
        &raw_actions(&[0, 11, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_LEN,
    );
    refused(
        &raw_actions(&[0, 11, 0, 0, 0, 0, 0, 0]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_LEN,
    );
    // Unknown type (5 was SET_DL_DST in 1.0).
    refused(
        &raw_actions(&[0, 5, 0, 8, 0, 0, 0, 0]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_TYPE,
    );
    // set_field: masked, unknown field, bad length, bad value.
    refused(
        &raw_actions(&[0, 25, 0, 16, 0x80, 0, 0x17, 8, 10, 0, 0, 0, 0xff, 0, 0, 0]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_SET_ARGUMENT,
    );
    refused(
        &raw_actions(&[0, 25, 0, 16, 0x80, 0, 60 << 1, 2, 0, 0, 0, 0, 0, 0, 0, 0]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_SET_TYPE,
    );
    refused(
        &raw_actions(&[0, 25, 0, 16, 0x80, 0, 0x0a, 3, 8, 0, 0, 0, 0, 0, 0, 0]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_SET_LEN,
    );
    // A set_field of length 8 has no room for its OXM's value.
    refused(
        &raw_actions(&[0, 25, 0, 8, 0x80, 0, 0x0c, 2, 0, 11, 0, 8, 0, 0, 0, 0]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_SET_LEN,
    );
    refused(
        &raw_actions(&[0, 25, 0, 16, 0x80, 0, 0x0c, 2, 0xff, 0xff, 0, 0, 0, 0, 0, 0]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_SET_ARGUMENT,
    );
    // Nicira actions whose subfields name unknown fields or bits outside
    // theirs, or whose value does not fit, are refused; a cut one too.
    let load = |ofs_nbits: u16, header: u32, value: u64| {
        let mut a = vec![0xff, 0xff, 0, 24, 0, 0, 0x23, 0x20, 0, 7];
        a.extend_from_slice(&ofs_nbits.to_be_bytes());
        a.extend_from_slice(&header.to_be_bytes());
        a.extend_from_slice(&value.to_be_bytes());
        raw_actions(&a)
    };
    let reg0 = 0x0001_0004;
    assert!(Message::decode(&load(15, reg0, 5)).is_ok());
    for bad in [
        load(15, 0x0001_7004, 5),
        load(20 << 6 | 15, reg0, 5),
        load(3, reg0, 0x10),
    ] {
        refused(&bad, error::BAD_ACTION, error::BAD_ACTION_BAD_ARGUMENT);
    }
    refused(
        &raw_actions(&[0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 7, 0, 15, 0, 1, 0, 4]),
        error::BAD_ACTION,
        error::BAD_ACTION_BAD_LEN,
    );
    // Experimenter ids and data are kept.
    let exp = [0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 1, 2, 3, 4, 5, 6, 7, 8];
    let (_, m) = Message::decode(&raw_actions(&exp)).unwrap();
    let Message::FlowMod(f) = m else { panic!() };
    assert_eq!(
        f.instructions,
        vec![Instruction::ApplyActions(vec![Action::Experimenter {
            experimenter: 0x2320,
            data: vec![1, 2, 3, 4, 5, 6, 7, 8]
        }])]
    );
    // packet_out whose actions_len runs past the frame: an error, not a
    // 64 KiB allocation.
    let mut po = Message::PacketOut(PacketOut {
        buffer_id: NO_BUFFER,
        in_port: 1,
        actions: vec![],
        data: vec![],
    })
    .encode(1);
    po[16..18].copy_from_slice(&[0xff, 0xff]);
    refused(&po, error::BAD_REQUEST, error::BAD_REQUEST_BAD_LEN);
}

#[test]
fn instruction_errors() {
    refused(
        &raw_flow_mod(&[], &[0, 9, 0, 8, 0, 0, 0, 0]),
        error::BAD_INSTRUCTION,
        error::BAD_INSTRUCTION_UNKNOWN_INST,
    );
    refused(
        &raw_flow_mod(&[], &[0, 1, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0]),
        error::BAD_INSTRUCTION,
        error::BAD_INSTRUCTION_BAD_LEN,
    );
    refused(
        &raw_flow_mod(&[], &[0, 2, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        error::BAD_INSTRUCTION,
        error::BAD_INSTRUCTION_BAD_LEN,
    );
    refused(
        &raw_flow_mod(&[], &[0, 1, 0, 16, 0, 0, 0, 0]),
        error::BAD_INSTRUCTION,
        error::BAD_INSTRUCTION_BAD_LEN,
    );
    let (_, m) =
        Message::decode(&raw_flow_mod(&[], &[0xff, 0xff, 0, 8, 0, 0, 0x23, 0x20])).unwrap();
    let Message::FlowMod(f) = m else { panic!() };
    assert_eq!(
        f.instructions,
        vec![Instruction::Experimenter {
            experimenter: 0x2320,
            data: vec![]
        }]
    );
}

#[test]
fn mod_errors() {
    let mut b = raw_flow_mod(&[], &[]);
    b[25] = 7;
    refused(
        &b,
        error::FLOW_MOD_FAILED,
        error::FLOW_MOD_FAILED_BAD_COMMAND,
    );
    let gm = GroupMod {
        command: GroupModCommand::Add,
        group_type: GroupType::All,
        group_id: 1,
        buckets: vec![],
    };
    let mut b = Message::GroupMod(gm.clone()).encode(1);
    b[10] = 9;
    refused(
        &b,
        error::GROUP_MOD_FAILED,
        error::GROUP_MOD_FAILED_BAD_TYPE,
    );
    let mut b = Message::GroupMod(gm).encode(1);
    b[9] = 3;
    refused(
        &b,
        error::GROUP_MOD_FAILED,
        error::GROUP_MOD_FAILED_BAD_COMMAND,
    );
}

#[test]
fn the_error_reply_holds_64_bytes_of_the_request() {
    let fm = Message::FlowMod(flow_mod(
        Match {
            fields: vec![Oxm::exact(Field::Ipv4Src, 1)],
        },
        vec![Instruction::GotoTable(1)],
    ))
    .encode(77);
    assert!(fm.len() > 64);
    let (_, Message::FlowMod(f)) = Message::decode(&fm).unwrap() else {
        panic!()
    };
    let e = f.matcher.check_prerequisites().unwrap_err();
    let reply = e.reply(&fm);
    assert_eq!(
        (reply.err_type, reply.code),
        (error::BAD_MATCH, error::BAD_MATCH_BAD_PREREQ)
    );
    assert_eq!(reply.data, fm[..64]);
    let short = Message::BarrierRequest.encode(3);
    assert_eq!(err(&short[..5]).reply(&short[..5]).data, short[..5]);
    // The reply goes out as an ERROR message and comes back whole.
    let bytes = Message::Error(reply.clone()).encode(77);
    assert_eq!(Message::decode(&bytes).unwrap().1, Message::Error(reply));
    // Display says what and where.
    let shown = err(&raw_flow_mod(&[0x80, 0, 0x0a, 3, 8, 0, 0], &[])).to_string();
    assert_eq!(
        shown,
        "flow_mod: OXM TLV at byte 52 has length 3, eth_type needs 2 (OpenFlow error type 4, code 1)"
    );
}
