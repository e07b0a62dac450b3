//! A datapath with a lower cache (what `--offload xdp` puts in the
//! kernel): the packets the lower cache forwards reach the megaflows'
//! counts, the OpenFlow entries' counters and the idle clock, also for a
//! megaflow that revalidation or expiry takes out. The lower cache here
//! is a table in memory whose counts the test raises, as the XDP program's
//! would (the kernel one has its own test, tests/offload.rs).

use std::sync::Mutex;

use openflow::{Action, Field, FlowMod, FlowModCommand, Instruction, Match, Oxm, Port, port};
use switch::{
    CacheOptions, Counts, Datapath, DpAction, Megaflow, Offload, Ofproto, Output, Shared,
    ToController,
};

const SEC: u64 = 1_000_000_000;

/// Megaflows by handle: (key, counts); None once removed.
#[derive(Default)]
struct Lower(Mutex<Vec<Option<(switch::flow::PackedKey, Counts)>>>);

impl Lower {
    /// The lower cache forwards `n` packets of `len` bytes for every
    /// megaflow it holds.
    fn forward(&self, n: u64, len: u64) {
        for (_, c) in self.0.lock().unwrap().iter_mut().flatten() {
            c.packets += n;
            c.bytes += n * len;
        }
    }

    fn held(&self) -> usize {
        self.0.lock().unwrap().iter().flatten().count()
    }
}

impl Offload for Lower {
    fn install(&self, mf: &Megaflow) -> Option<(u32, Counts)> {
        // Single outputs only, as the XDP program.
        if !matches!(mf.actions.as_slice(), [DpAction::Output(_)]) {
            return None;
        }
        let mut v = self.0.lock().unwrap();
        v.push(Some((mf.key, Counts::default())));
        Some(((v.len() - 1) as u32, Counts::default()))
    }

    fn counts(&self, handle: u32) -> Counts {
        self.0.lock().unwrap()[handle as usize].map_or(Counts::default(), |e| e.1)
    }

    fn remove(&self, handle: u32, _: &Megaflow) -> Counts {
        self.0.lock().unwrap()[handle as usize]
            .take()
            .map_or(Counts::default(), |e| e.1)
    }
}

struct Drain;

impl Output for Drain {
    fn send(&mut self, _: u32, _: &[u8]) {}
    fn to_controller(&mut self, _: &[u8], _: u32, _: &ToController) {}
}

fn add(priority: u16, matcher: Match, out: u32) -> FlowMod {
    FlowMod {
        cookie: 0,
        cookie_mask: 0,
        table_id: 0,
        command: FlowModCommand::Add,
        idle_timeout: 0,
        hard_timeout: 0,
        priority,
        buffer_id: openflow::NO_BUFFER,
        out_port: port::ANY,
        out_group: openflow::group::ANY,
        flags: 0,
        matcher,
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: out,
            max_len: 0,
        }])],
    }
}

/// (priority, packets, bytes) of every entry of table 0.
fn entries(shared: &Shared) -> Vec<(u16, u64, u64)> {
    shared.with(|of| {
        let mut v: Vec<_> = of.tables[0]
            .entries()
            .map(|(_, e)| (e.priority, e.packets, e.bytes))
            .collect();
        v.sort();
        v
    })
}

#[test]
fn what_the_lower_cache_forwards_is_counted_and_keeps_megaflows_alive() {
    let mut of = Ofproto::new();
    for p in [1, 2, 3] {
        of.set_port(Port {
            port_no: p,
            ..Port::default()
        });
    }
    let shared = Shared::new(of);
    shared
        .with(|of| of.flow_mod(&add(1, Match::default(), 2), 0))
        .unwrap();
    let lower = std::sync::Arc::new(Lower::default());
    let mut dp = Datapath::new(CacheOptions::default()).with_offload(lower.clone());
    let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 5, 53).build();
    let len = frame.len() as u64;
    dp.process(&frame, 1, SEC, &shared, &mut Drain);
    assert_eq!((dp.stats.upcalls, dp.stats.megaflows_offloaded), (1, 1));
    assert!(dp.megaflows().all(|m| m.offloaded.is_some()));

    // 100 packets below: pulled into the megaflow, pushed to the entry.
    lower.forward(100, len);
    assert_eq!(dp.pull_offloaded(2 * SEC), 100);
    assert_eq!(dp.megaflows().next().unwrap().packets, 101);
    assert!(dp.has_unpushed());
    dp.push_stats(&shared);
    assert_eq!(entries(&shared), vec![(1, 101, 101 * len)]);

    // Busy below until 9 s: not idle at 12 s (10 s idle time), idle at 20 s.
    lower.forward(5, len);
    dp.expire(9 * SEC, 10 * SEC, &shared);
    dp.expire(12 * SEC, 10 * SEC, &shared);
    assert_eq!(dp.megaflows().count(), 1);
    lower.forward(3, len);
    dp.expire(20 * SEC, 10 * SEC, &shared);
    assert_eq!(dp.megaflows().count(), 1, "used at 20 s by the 3 packets");
    dp.expire(30 * SEC, 10 * SEC, &shared);
    assert_eq!((dp.megaflows().count(), lower.held()), (0, 0));
    assert_eq!(dp.stats.offload_hits, 108);
    assert_eq!(entries(&shared), vec![(1, 109, 109 * len)]);

    // A megaflow that a flow-mod makes wrong goes, with what the lower
    // cache forwarded since the last pull.
    dp.process(&frame, 1, 31 * SEC, &shared, &mut Drain);
    lower.forward(7, len);
    let udp = Match {
        fields: vec![
            Oxm::exact(Field::EthType, 0x0800),
            Oxm::exact(Field::IpProto, 17),
        ],
    };
    shared.with(|of| of.flow_mod(&add(5, udp, 3), 0)).unwrap();
    dp.process(&frame, 1, 32 * SEC, &shared, &mut Drain);
    assert_eq!(dp.stats.megaflows_revalidated_away, 1);
    assert_eq!(lower.held(), 1, "the new megaflow, output:3");
    dp.push_stats(&shared);
    assert_eq!(
        entries(&shared),
        vec![(1, 117, 117 * len), (5, 1, len)],
        "109 + 1 through the datapath + 7 below"
    );
}
