//! The caches never change what the switch does: a datapath with the
//! exact-match cache and megaflows gives every packet the same outputs
//! (ports, bytes, packet-ins) as the OpenFlow tables translating each
//! packet alone, through random flow tables changed by random flow-mods
//! and group-mods (revalidation) and timeouts (expiry), and the OpenFlow
//! counters agree once the datapath's counts are pushed. The flows use
//! registers (matched, loaded, moved from the packet's bits), resubmit and
//! the NORMAL port (MAC learning on access and trunk ports).

use openflow::{
    Action, Bucket, Field, FlowMod, FlowModCommand, GroupMod, GroupModCommand, GroupType,
    Instruction, Match, NxAction, Oxm, Port, SubField, header_by_name, oxm_header, port,
};
use proptest::prelude::*;
use switch::flow::extract;
use switch::{CacheOptions, Datapath, Ofproto, Output, Shared, ToController, execute};

const PORTS: [u32; 4] = [1, 2, 3, 4];
const SEC: u64 = 1_000_000_000;

/// Everything a packet produced, in order.
#[derive(Default, Debug, PartialEq, Eq)]
struct Seen(Vec<(u32, Vec<u8>, Option<ToController>)>);

impl Output for Seen {
    fn send(&mut self, port: u32, frame: &[u8]) {
        self.0.push((port, frame.to_vec(), None));
    }
    fn to_controller(&mut self, frame: &[u8], in_port: u32, why: &ToController) {
        self.0.push((in_port, frame.to_vec(), Some(why.clone())));
    }
}

fn oxm(field: Field, value: u128, mask: Option<u128>) -> Oxm {
    Oxm { field, value, mask }
}

/// Addresses and ports from small sets, so that rules and packets meet.
const ADDRS: [u32; 4] = [0x0a00_0001, 0x0a00_0102, 0x0a01_0000, 0xc0a8_0001];
const TP: [u16; 3] = [22, 80, 443];

fn a_match() -> impl Strategy<Value = Match> {
    let ip = (0usize..4, prop::sample::select(vec![8u32, 16, 24, 32]));
    (
        prop::option::of(prop::sample::select(PORTS.to_vec())),
        prop::option::of(0usize..3),
        prop::option::of(ip),
        prop::option::of(0usize..3),
        prop::option::of(prop::sample::select(vec![0u16, 0x1000 | 10, 0x1000 | 20])),
        prop::option::of(0u64..3),
        prop::option::of(0u64..3),
    )
        .prop_map(|(in_port, proto, dst, tp, vlan, meta, reg0)| {
            let mut f = Vec::new();
            if let Some(r) = reg0 {
                f.push(oxm(Field::Reg0, u128::from(r), None));
            }
            if let Some(p) = in_port {
                f.push(oxm(Field::InPort, u128::from(p), None));
            }
            if let Some(v) = vlan {
                f.push(oxm(Field::VlanVid, u128::from(v), None));
            }
            if let Some(m) = meta {
                f.push(oxm(Field::Metadata, u128::from(m), Some(0xff)));
            }
            if proto.is_some() || dst.is_some() || tp.is_some() {
                f.push(oxm(Field::EthType, 0x0800, None));
            }
            if let Some((a, len)) = dst {
                let mask = u128::from(u32::MAX << (32 - len));
                f.push(oxm(Field::Ipv4Dst, u128::from(ADDRS[a]) & mask, Some(mask)));
            }
            let proto = match (proto, tp) {
                (Some(p), _) => Some([6u8, 17, 1][p]),
                (None, Some(_)) => Some(6),
                _ => None,
            };
            if let Some(p) = proto {
                f.push(oxm(Field::IpProto, u128::from(p), None));
                if let Some(t) = tp
                    && p != 1
                {
                    let field = if p == 6 { Field::TcpDst } else { Field::UdpDst };
                    f.push(oxm(field, u128::from(TP[t]), None));
                }
            }
            Match { fields: f }
        })
}

fn an_action(groups: bool) -> BoxedStrategy<Action> {
    let out = prop::sample::select(vec![
        1u32,
        2,
        3,
        4,
        port::IN_PORT,
        port::FLOOD,
        port::ALL,
        port::NORMAL,
    ]);
    let base = prop_oneof![
        4 => out.prop_map(|p| Action::Output { port: p, max_len: 0 }),
        1 => Just(Action::Output { port: port::CONTROLLER, max_len: 0xffff }),
        1 => (0usize..4).prop_map(|a| Action::SetField(oxm(Field::Ipv4Dst, u128::from(ADDRS[a]), None))),
        1 => (0usize..3).prop_map(|t| Action::SetField(oxm(Field::TcpDst, u128::from(TP[t]), None))),
        1 => Just(Action::SetField(oxm(Field::EthDst, 0x0200_0000_0099, None))),
        1 => Just(Action::SetField(oxm(Field::VlanVid, 0x1000 | 20, None))),
        1 => Just(Action::PushVlan(0x8100)),
        1 => Just(Action::PopVlan),
        1 => Just(Action::DecNwTtl),
        1 => (0u64..3).prop_map(|v| nx(NxAction::RegLoad { dst: reg0(0, 32), value: v })),
        // Registers from the packet's bits: the megaflow must match them.
        1 => Just(nx(NxAction::RegMove {
            src: SubField { header: header_by_name("NXM_OF_IP_DST").unwrap(), ofs: 0, n_bits: 2 },
            dst: reg0(0, 2),
        })),
        1 => Just(nx(NxAction::RegLoad {
            dst: SubField { header: header_by_name("NXM_OF_IP_DST").unwrap(), ofs: 0, n_bits: 4 },
            value: 5,
        })),
        1 => (prop::option::of(prop::sample::select(vec![1u32, 2])), prop::option::of(0u8..3))
            .prop_map(|(p, table)| nx(NxAction::Resubmit {
                in_port: p.unwrap_or(port::IN_PORT),
                table: table.or(p.is_none().then_some(2)),
            })),
    ];
    if groups {
        prop_oneof![14 => base, 1 => (1u32..3).prop_map(Action::Group)].boxed()
    } else {
        base.boxed()
    }
}

fn nx(a: NxAction) -> Action {
    Action::Nx(a)
}

/// Bits of register 0.
fn reg0(ofs: u16, n_bits: u16) -> SubField {
    SubField {
        header: oxm_header(Field::Reg0),
        ofs,
        n_bits,
    }
}

fn instructions(table: u8) -> impl Strategy<Value = Vec<Instruction>> {
    (
        prop::collection::vec(an_action(true), 0..4),
        prop::option::of(prop::collection::vec(an_action(true), 1..3)),
        any::<bool>(),
        prop::option::of(0u64..3),
        any::<bool>(),
    )
        .prop_map(move |(apply, write, clear, meta, goto)| {
            let mut i = vec![Instruction::ApplyActions(apply)];
            if clear {
                i.push(Instruction::ClearActions);
            }
            if let Some(w) = write {
                i.push(Instruction::WriteActions(w));
            }
            if let Some(m) = meta {
                i.push(Instruction::WriteMetadata {
                    metadata: m,
                    mask: 0xff,
                });
            }
            if goto && table < 2 {
                i.push(Instruction::GotoTable(table + 1));
            }
            i
        })
}

fn flow_mod() -> impl Strategy<Value = FlowMod> {
    (0u8..3)
        .prop_flat_map(|table| {
            (
                Just(table),
                a_match(),
                prop::sample::select(vec![0u16, 10, 20, 30]),
                instructions(table),
                prop::sample::select(vec![
                    FlowModCommand::Add,
                    FlowModCommand::Add,
                    FlowModCommand::Add,
                    FlowModCommand::Modify,
                    FlowModCommand::ModifyStrict,
                    FlowModCommand::Delete,
                    FlowModCommand::DeleteStrict,
                ]),
                prop::sample::select(vec![0u16, 0, 2, 5]),
                prop::sample::select(vec![0u16, 0, 4]),
            )
        })
        .prop_map(
            |(table_id, matcher, priority, instructions, command, idle, hard)| FlowMod {
                cookie: u64::from(priority),
                cookie_mask: 0,
                table_id,
                command,
                idle_timeout: idle,
                hard_timeout: hard,
                priority,
                buffer_id: openflow::NO_BUFFER,
                out_port: port::ANY,
                out_group: openflow::group::ANY,
                flags: 0,
                matcher,
                instructions,
            },
        )
}

fn group_mod() -> impl Strategy<Value = GroupMod> {
    (
        1u32..3,
        prop::sample::select(vec![GroupType::All, GroupType::Select, GroupType::Indirect]),
        prop::collection::vec(
            (1u16..4, prop::collection::vec(an_action(false), 1..3)),
            1..4,
        ),
    )
        .prop_map(|(group_id, group_type, buckets)| {
            let mut buckets: Vec<Bucket> = buckets
                .into_iter()
                .map(|(weight, actions)| Bucket {
                    weight,
                    watch_port: port::ANY,
                    watch_group: openflow::group::ANY,
                    actions,
                })
                .collect();
            if group_type == GroupType::Indirect {
                buckets.truncate(1);
            }
            GroupMod {
                command: GroupModCommand::Add,
                group_type,
                group_id,
                buckets,
            }
        })
}

/// A packet from the small universe: (in port, vlan, proto, dst, tp, ttl).
fn a_packet() -> impl Strategy<Value = (u32, Vec<u8>)> {
    (
        prop::sample::select(PORTS.to_vec()),
        prop::option::of(prop::sample::select(vec![10u16, 20, 30])),
        0usize..4,
        0usize..4,
        0usize..3,
        prop::sample::select(vec![1u8, 2, 64]),
        0u16..1000,
        (0u8..3, 0u8..4),
    )
        .prop_map(
            |(in_port, vlan, proto, dst, tp, ttl, sport, (smac, dmac))| {
                let src = "10.9.9.9";
                let dst = std::net::Ipv4Addr::from(ADDRS[dst]).to_string();
                let l4 = match proto {
                    0 | 3 => packet::L4::Tcp {
                        sport,
                        dport: TP[tp],
                        syn: true,
                    },
                    1 => packet::L4::Udp {
                        sport,
                        dport: TP[tp],
                    },
                    _ => packet::L4::Icmp,
                };
                let mut f = packet::Builder::new(src, &dst, l4).ttl(ttl).build();
                if proto == 3 {
                    // Not IP: an ARP-typed frame of the same bytes.
                    f[12..14].copy_from_slice(&[0x08, 0x06]);
                }
                // Few MACs, so that NORMAL learns a source and meets it again
                // as a destination, moved or not (3: broadcast).
                let mac = |n: u8| match n {
                    3 => [0xff; 6],
                    n => [0x02, 0, 0, 0, 0, n + 1],
                };
                f[0..6].copy_from_slice(&mac(dmac));
                f[6..12].copy_from_slice(&mac(smac));
                if let Some(v) = vlan {
                    f.splice(12..12, [0x81, 0x00, 0x00, v as u8]);
                }
                (in_port, f)
            },
        )
}

#[derive(Clone, Debug)]
enum Op {
    Packet(u32, Vec<u8>),
    Flow(FlowMod),
    Group(GroupMod),
    /// Time passes (seconds): timeouts fire, idle megaflows expire.
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => a_packet().prop_map(|(p, f)| Op::Packet(p, f)),
        3 => flow_mod().prop_map(Op::Flow),
        1 => group_mod().prop_map(Op::Group),
        1 => (1u64..4).prop_map(Op::Wait),
    ]
}

/// Ports 1-4, every one a trunk of all VLANs.
fn ports_only() -> Ofproto {
    let mut of = Ofproto::new();
    for p in PORTS {
        of.set_port(Port {
            port_no: p,
            name: format!("p{p}"),
            ..Port::default()
        });
    }
    of
}

fn switch_ofproto() -> Ofproto {
    let mut of = ports_only();
    // For NORMAL: two access ports, two trunks (one of some VLANs).
    for (p, tag, trunks) in [
        (2, Some(10), vec![]),
        (3, Some(20), vec![]),
        (4, None, vec![0, 10]),
    ] {
        of.set_port_vlan(p, switch::PortVlan { tag, trunks });
    }
    of
}

/// Every packet alone through the tables (no cache).
fn reference(of: &mut Ofproto, in_port: u32, frame: &[u8], now: u64) -> Seen {
    let (key, layout) = extract(frame, in_port);
    let t = of.translate(&key);
    of.learn(&t.learned, now);
    of.credit(&t.touched, 1, frame.len() as u64, now);
    let mut seen = Seen::default();
    execute(&mut frame.to_vec(), layout, in_port, &t.actions, &mut seen);
    seen
}

/// Counters of every flow entry and table, to compare.
fn counters(of: &Ofproto) -> Vec<(u8, u16, u64, u64, u64)> {
    let mut v = Vec::new();
    for (t, table) in of.tables.iter().enumerate() {
        for (_, e) in table.entries() {
            v.push((t as u8, e.priority, e.cookie, e.packets, e.bytes));
        }
        v.push((t as u8, u16::MAX, table.lookups, table.matched, 0));
    }
    v.sort();
    v
}

fn run_ops(ops: &[Op], options: CacheOptions) -> Result<(), TestCaseError> {
    let shared = Shared::new(switch_ofproto());
    let mut dp = Datapath::new(options);
    let mut reference_of = switch_ofproto();
    let mut now = SEC;
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Packet(in_port, frame) => {
                let mut got = Seen::default();
                dp.process(frame, *in_port, now, &shared, &mut got);
                let want = reference(&mut reference_of, *in_port, frame, now);
                prop_assert_eq!(got, want, "op {}: packet on port {}", i, in_port);
            }
            Op::Flow(fm) => {
                let a = shared.with(|of| of.flow_mod(fm, now).map(|r| r.len()));
                let b = reference_of.flow_mod(fm, now).map(|r| r.len());
                prop_assert_eq!(a, b);
            }
            Op::Group(gm) => {
                let a = shared.with(|of| of.group_mod(gm, now).map(|r| r.len()));
                let b = reference_of.group_mod(gm, now).map(|r| r.len());
                prop_assert_eq!(a, b);
            }
            Op::Wait(s) => {
                now += s * SEC;
                // Idle timeouts need the datapath's counts first.
                dp.push_stats(&shared);
                let a = shared.with(|of| of.expire(now).len());
                let b = reference_of.expire(now).len();
                prop_assert_eq!(a, b, "op {}: expiry", i);
                dp.expire(now, 2 * SEC, &shared);
            }
        }
        now += 1000;
    }
    dp.push_stats(&shared);
    let a = shared.with(|of| counters(of));
    prop_assert_eq!(a, counters(&reference_of));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn cached_switch_acts_as_the_tables_alone(ops in prop::collection::vec(op(), 1..120)) {
        run_ops(&ops, CacheOptions::default())?;
    }

    #[test]
    fn megaflows_without_the_exact_match_cache_act_as_the_tables_alone(
        ops in prop::collection::vec(op(), 1..120),
    ) {
        run_ops(&ops, CacheOptions { emc: false, megaflows: true })?;
    }
}

#[test]
fn repeated_packets_hit_the_caches_and_a_flow_mod_revalidates() {
    let shared = Shared::new(switch_ofproto());
    let add = |prio: u16, m: Match, out: u32| FlowMod {
        cookie: 0,
        cookie_mask: 0,
        table_id: 0,
        command: FlowModCommand::Add,
        idle_timeout: 0,
        hard_timeout: 0,
        priority: prio,
        buffer_id: openflow::NO_BUFFER,
        out_port: port::ANY,
        out_group: openflow::group::ANY,
        flags: 0,
        matcher: m,
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: out,
            max_len: 0,
        }])],
    };
    shared
        .with(|of| of.flow_mod(&add(1, Match::default(), 2), 0))
        .unwrap();
    let mut dp = Datapath::new(CacheOptions::default());
    let mut seen = Seen::default();
    let frame = |dport| packet::Builder::tcp("10.0.0.1", "10.0.0.2", 5, dport).build();
    for i in 0..10 {
        dp.process(&frame(80 + i), 1, 0, &shared, &mut seen);
    }
    // One upcall; its megaflow (in_port only) serves the other nine.
    assert_eq!(dp.stats.upcalls, 1);
    assert_eq!(dp.stats.megaflow_hits + dp.stats.emc_hits, 9);
    assert_eq!(dp.megaflows().count(), 1);
    assert_eq!(seen.0.len(), 10);
    dp.process(&frame(80), 1, 0, &shared, &mut seen);
    assert_eq!(dp.stats.emc_hits, 1, "the same packet again: an EMC hit");
    // A more specific entry makes the catch-all megaflow too wide.
    let web = Match {
        fields: vec![
            oxm(Field::EthType, 0x0800, None),
            oxm(Field::IpProto, 6, None),
            oxm(Field::TcpDst, 80, None),
        ],
    };
    shared.with(|of| of.flow_mod(&add(5, web, 3), 0)).unwrap();
    seen.0.clear();
    dp.process(&frame(80), 1, 0, &shared, &mut seen);
    dp.process(&frame(81), 1, 0, &shared, &mut seen);
    assert_eq!(dp.stats.megaflows_revalidated_away, 1);
    assert_eq!(seen.0.iter().map(|s| s.0).collect::<Vec<_>>(), vec![3, 2]);
    dp.push_stats(&shared);
    let counts = shared.with(|of| counters(of));
    assert!(counts.contains(&(0, 1, 0, 12, 12 * frame(80).len() as u64)));
    assert!(counts.contains(&(0, 5, 0, 1, frame(80).len() as u64)));
}

/// A register written from the packet's bits (`move`) and matched after a
/// `resubmit`: the megaflow matches exactly the bits moved, so packets
/// that differ there never share one, and those that differ elsewhere do.
/// A `resubmit` with a port looks up as if from that port; one that loops
/// ends.
#[test]
fn registers_from_packet_bits_keep_megaflows_apart() {
    let shared = Shared::new(switch_ofproto());
    for flow in [
        "table=0,ip,in_port=1,actions=move:NXM_OF_IP_DST[0..1]->NXM_NX_REG0[0..1],resubmit(,1)",
        "table=1,reg0=1,actions=output:2",
        "table=1,reg0=2,actions=output:3",
        "table=1,priority=0,actions=output:4",
        "table=0,in_port=3,actions=resubmit(1,2)",
        "table=2,in_port=1,actions=output:4",
        "table=0,in_port=4,actions=resubmit(,0),output:1",
    ] {
        let fm = openflow::parse_flow(flow, FlowModCommand::Add).unwrap();
        shared.with(|of| of.flow_mod(&fm, 0)).unwrap();
    }
    let mut dp = Datapath::new(CacheOptions::default());
    let frame = |dst: &str| packet::Builder::tcp("10.9.9.9", dst, 5, 80).build();
    let out = |dp: &mut Datapath, dst: &str, in_port: u32| {
        let mut seen = Seen::default();
        dp.process(&frame(dst), in_port, 0, &shared, &mut seen);
        seen.0.iter().map(|s| s.0).collect::<Vec<_>>()
    };
    assert_eq!(out(&mut dp, "10.0.0.1", 1), vec![2]);
    assert_eq!(out(&mut dp, "10.0.1.2", 1), vec![3]);
    assert_eq!(out(&mut dp, "10.1.0.0", 1), vec![4]);
    assert_eq!(dp.megaflows().count(), 3);
    // The same two low bits as 10.0.0.1: its megaflow.
    assert_eq!(out(&mut dp, "10.0.0.5", 1), vec![2]);
    assert_eq!(out(&mut dp, "192.168.7.9", 1), vec![2]);
    assert_eq!(dp.megaflows().count(), 3);
    assert_eq!(dp.stats.upcalls, 3);
    // From port 3, looked up in table 2 as if from port 1.
    assert_eq!(out(&mut dp, "10.0.0.1", 3), vec![4]);
    // A resubmit loop ends, and the packet is dropped (as in OVS:
    // "recursion too deep"), the output after the resubmit too.
    assert_eq!(out(&mut dp, "10.0.0.1", 4), Vec::<u32>::new());
}

/// NORMAL through the caches: a megaflow that flooded to an unknown
/// destination is revalidated once that MAC is learned (and again when it
/// moves), so the next frame goes to its port alone.
#[test]
fn normal_learns_and_the_caches_follow() {
    let mut of = ports_only();
    let fm = openflow::parse_flow("actions=NORMAL", FlowModCommand::Add).unwrap();
    of.flow_mod(&fm, 0).unwrap();
    let shared = Shared::new(of);
    let mut dp = Datapath::new(CacheOptions::default());
    let frame = |src: u8, dst: u8| {
        let mut f = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, dst]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
        f
    };
    let mut t = SEC;
    let mut out = |dp: &mut Datapath, f: &[u8], port: u32| {
        let mut seen = Seen::default();
        t += 1000;
        dp.process(f, port, t, &shared, &mut seen);
        seen.0.iter().map(|s| s.0).collect::<Vec<_>>()
    };
    assert_eq!(
        out(&mut dp, &frame(1, 2), 1),
        vec![2, 3, 4],
        "unknown: flood"
    );
    assert_eq!(out(&mut dp, &frame(2, 1), 2), vec![1], "learned on port 1");
    assert_eq!(out(&mut dp, &frame(1, 2), 1), vec![2], "learned on port 2");
    // 02::02 moves to port 3.
    assert_eq!(out(&mut dp, &frame(2, 1), 3), vec![1]);
    assert_eq!(out(&mut dp, &frame(1, 2), 1), vec![3], "moved to port 3");
    assert!(dp.stats.megaflows_revalidated_away >= 2);
}
