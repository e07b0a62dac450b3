//! A controller that stops reading: the packet-ins the switch has for it
//! are dropped once its backlog is full (as Open vSwitch drops packet-ins
//! past its queue limit), never queued without bound, and the
//! connection is closed once it has stayed behind, saying how many were
//! dropped; a controller that reads gets them all.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use switch::{
    CacheOptions, Channel, ChannelEvent, ChannelOptions, Core, Datapath, Limits, Transmit,
};

struct Nowhere;

impl Transmit for Nowhere {
    fn transmit(&mut self, _port: u32, _frame: &[u8]) -> bool {
        false
    }
}

/// A switch whose every packet goes to the controller, and a client
/// connected over TCP that has said HELLO.
fn setup(limits: Limits) -> (Core, Channel, TcpStream) {
    let core = Core::new(0x11);
    core.add_port(openflow::Port {
        port_no: 1,
        name: "p1".into(),
        ..openflow::Port::default()
    });
    let mods = openflow::parse_flows_file("priority=1,actions=controller\n").unwrap();
    let now = core.now();
    core.shared.with(|of| of.flow_mod(&mods[0], now)).unwrap();
    let options = ChannelOptions {
        limits,
        ..ChannelOptions::default()
    };
    let mut ch = Channel::open_with(&["ptcp:0".parse().unwrap()], &options).unwrap();
    let mut client = TcpStream::connect(ch.local_addrs()[0]).unwrap();
    client.write_all(&[4, 0, 0, 8, 0, 0, 0, 1]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while ch.connections() == 0 && Instant::now() < deadline {
        ch.poll(&core, &mut Nowhere);
    }
    // The HELLO handled: packet-ins are wanted from now on.
    for _ in 0..20 {
        ch.poll(&core, &mut Nowhere);
        std::thread::sleep(Duration::from_millis(5));
    }
    (core, ch, client)
}

fn frame(i: u16) -> Vec<u8> {
    packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000 + (i % 1000), 53)
        .payload(&[0x77; 1000])
        .build()
}

#[test]
fn packet_ins_for_a_controller_that_does_not_read_are_dropped_then_so_is_it() {
    let limits = Limits {
        backlog: 256 * 1024,
        slow_reader: Duration::from_millis(500),
        // On a loaded machine filling the socket buffers can take longer
        // than the default silence rule: this test is about the backlog.
        inactivity_probe: Duration::from_secs(600),
        ..Limits::default()
    };
    let (core, mut ch, _client) = setup(limits);
    let mut dp = Datapath::new(CacheOptions::default());
    let table = core.port_table();
    // Packet-ins of about 1 KB, offered until the controller is dropped
    // (at most 200 MB): how much the kernel's socket buffers absorb first
    // depends on the machine and its load.
    let t0 = Instant::now();
    let mut events = Vec::new();
    for i in 0..200_000u32 {
        core.receive(&mut dp, &table, 1, &frame(i as u16), &mut Nowhere);
        if i % 100 == 0 {
            ch.poll(&core, &mut Nowhere);
            events.extend(ch.take_events());
            if ch.connections() == 0 {
                break;
            }
        }
    }
    while ch.connections() > 0 && t0.elapsed() < Duration::from_secs(30) {
        ch.poll(&core, &mut Nowhere);
        events.extend(ch.take_events());
        std::thread::sleep(Duration::from_millis(5));
    }
    events.extend(ch.take_events());
    let why = events
        .iter()
        .find_map(|e| match e {
            ChannelEvent::Disconnected(_, why) => Some(why.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("the controller was never dropped: {events:?}"));
    assert!(why.contains("excessive sending backlog"), "{why}");
    let dropped: u64 = why
        .split(" asynchronous messages dropped")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{why}"));
    // Past the socket buffers and the backlog they were dropped, not
    // queued.
    assert!(dropped > 0, "{why}");
    let unsent: usize = why
        .split("backlog: ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{why}"));
    assert!(unsent < 256 * 1024 + 2048, "{why}");
}

#[test]
fn a_controller_that_reads_gets_every_packet_in() {
    let (core, mut ch, mut client) = setup(Limits::default());
    client
        .set_read_timeout(Some(Duration::from_millis(1)))
        .unwrap();
    let mut dp = Datapath::new(CacheOptions::default());
    let table = core.port_table();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut read = |client: &mut TcpStream, got: &mut Vec<u8>| {
        while let Ok(n) = client.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
    };
    for i in 0..2_000u32 {
        core.receive(&mut dp, &table, 1, &frame(i as u16), &mut Nowhere);
        ch.poll(&core, &mut Nowhere);
        if i % 50 == 0 {
            read(&mut client, &mut got);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let packet_ins = |got: &[u8]| {
        let (mut at, mut n) = (0, 0);
        while at + 8 <= got.len() {
            let len = u16::from_be_bytes([got[at + 2], got[at + 3]]) as usize;
            n += usize::from(got[at + 1] == 10);
            at += len.max(8);
        }
        n
    };
    while packet_ins(&got) < 2_000 && Instant::now() < deadline {
        ch.poll(&core, &mut Nowhere);
        read(&mut client, &mut got);
    }
    assert_eq!(packet_ins(&got), 2_000);
    assert_eq!(ch.connections(), 1);
}
