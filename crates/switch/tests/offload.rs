//! The XDP fast path (`--offload xdp`) in the kernel, through
//! BPF_PROG_TEST_RUN: its flow-key parser gives the user-space parser's key
//! for every frame of tcpdump's test captures that it decides (and those
//! are the frames it is meant to decide), its actions and counters are
//! the megaflows'. Needs root; a loud skip without.

use switch::flow::{ETH_TYPE_ARP, ETH_TYPE_IPV4, ETH_TYPE_IPV6, WORDS, extract, slot};
use switch::{Counts, DpAction, Megaflow, PortRef, XdpOffload};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const XDP_TX: u32 = 3;

/// Test runs see the packet arrive on the loopback device.
const LO: PortRef = PortRef {
    ifindex: 1,
    port_no: 1,
};

/// Whether the program is meant to decide `frame` itself: Ethernet (one
/// VLAN tag at most) with a non-IP ethertype, or whole unfragmented IPv4
/// whose transport header the user-space parser read in full (or another
/// protocol than ICMPv6).
fn decided_in_kernel(frame: &[u8]) -> bool {
    let (key, layout) = extract(frame, 1);
    if frame.len() < 14 {
        return false;
    }
    match slot::ETH_TYPE.get(&key) as u16 {
        // A VLAN tag cut short.
        0 => false,
        ETH_TYPE_IPV6 | ETH_TYPE_ARP => false,
        ETH_TYPE_IPV4 => {
            layout.l3.is_some()
                && slot::NW_FRAG.get(&key) == 0
                && match slot::NW_PROTO.get(&key) as u8 {
                    1 | 6 | 17 | 132 => layout.l4.is_some(),
                    58 => false,
                    _ => true,
                }
        }
        _ => true,
    }
}

fn run(offload: &XdpOffload, frame: &[u8], repeat: u32) -> u32 {
    kernel::testrun::run(
        offload.own_program().prog_fd,
        &kernel::testrun::RunInput {
            data: frame,
            repeat,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("test run of {} bytes: {e}", frame.len()))
    .retval
}

/// An exact megaflow (every bit of every word) for `frame` on port 1.
fn exact(frame: &[u8], actions: Vec<DpAction>) -> Megaflow {
    let (key, _) = extract(frame, 1);
    Megaflow::new(key, [u64::MAX; WORDS], actions, 0)
}

#[test]
fn the_kernel_parser_gives_the_user_space_key_on_every_capture() {
    if !testkit::kernel_available("XDP fast path parser") {
        return;
    }
    let offload = XdpOffload::load(&[LO]).unwrap();
    let flows = offload.flows();
    let (mut decided, mut missed) = (0, 0);
    for path in testkit::captures() {
        let Ok(source) = capture::PcapSource::open(&path) else {
            continue;
        };
        // Test runs take frames of 14 bytes to a page at most.
        for frame in source
            .filter_map(Result::ok)
            .filter(|f| (14..=3000).contains(&f.data.len()))
        {
            let f = &frame.data;
            let expected = decided_in_kernel(f);
            let mf = exact(f, Vec::new());
            let installed = flows.install(&mf);
            // Only frames with zeros past the program's words can be
            // installed; the frames it decides all are.
            assert!(
                installed.is_some() || !expected,
                "{}: a frame the program decides was refused: {f:02x?}",
                path.display()
            );
            let got = run(&offload, f, 1);
            if let Some((handle, _)) = installed {
                flows.remove(handle, &mf);
            }
            // A drop means the program's key equalled the user-space key
            // in every bit: the megaflow is exact.
            let want = if expected { XDP_DROP } else { XDP_PASS };
            assert_eq!(
                got,
                want,
                "{}: frame {f:02x?} (key {:x?})",
                path.display(),
                extract(f, 1).0
            );
            if expected {
                decided += 1;
            } else {
                missed += 1;
            }
        }
    }
    eprintln!("{decided} frames decided in the kernel, {missed} sent up");
    assert!(decided > 2_000 && missed > 200, "{decided} / {missed}");
    assert_eq!(offload.report().megaflows, 0);
    assert_eq!(offload.report().masks, 0);
}

fn udp_frame(dst_port: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[
        0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ]);
    f.extend_from_slice(&1000u16.to_be_bytes());
    f.extend_from_slice(&dst_port.to_be_bytes());
    f.extend_from_slice(&[0, 8, 0, 0]);
    f
}

#[test]
fn kernel_hits_carry_out_the_action_and_count_into_the_megaflow() {
    if !testkit::kernel_available("XDP fast path actions") {
        return;
    }
    let offload = XdpOffload::load(&[LO]).unwrap();
    let flows = offload.flows();
    let f = udp_frame(53);
    // A wildcarded megaflow: in_port and the UDP destination port only.
    let (key, _) = extract(&f, 1);
    let mut mask = [0u64; WORDS];
    slot::IN_PORT.or_all(&mut mask);
    slot::TP_DST.or_all(&mut mask);
    let back = Megaflow::new(key, mask, vec![DpAction::Output(1)], 0);
    let (handle, base) = flows.install(&back).unwrap();
    assert_eq!(run(&offload, &f, 5), XDP_TX);
    // Another source port, same destination port: the same megaflow.
    let mut other = f.clone();
    other[34] = 0x77;
    assert_eq!(run(&offload, &other, 1), XDP_TX);
    assert_eq!(run(&offload, &udp_frame(54), 1), XDP_PASS);
    let n = f.len() as u64;
    assert_eq!(
        flows.counts(handle).since(base),
        Counts {
            packets: 6,
            bytes: 6 * n
        }
    );
    let ports = offload.port_counts(0).unwrap();
    assert_eq!((ports.hits, ports.misses, ports.tx_packets), (6, 1, 6));
    // The same megaflow again (another thread's datapath): refused.
    assert!(flows.install(&back).is_none());
    // Actions the program cannot carry out stay in user space.
    let two = Megaflow::new(key, mask, vec![DpAction::Output(1), DpAction::Output(2)], 0);
    assert!(flows.install(&two).is_none());
    let removed = flows.remove(handle, &back);
    assert_eq!(removed.since(base).packets, 6);
    assert_eq!(run(&offload, &f, 1), XDP_PASS);
    // A drop under a second mask, then the first mask's index reused.
    let drop = exact(&f, Vec::new());
    let (h2, _) = flows.install(&drop).unwrap();
    assert_eq!(run(&offload, &f, 1), XDP_DROP);
    assert_eq!(offload.report().masks, 1);
    flows.remove(h2, &drop);
    assert_eq!(offload.report().megaflows, 0);
}
