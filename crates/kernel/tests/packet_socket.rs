//! An AF_PACKET socket on loopback reads back the frame it sent, with its
//! metadata (needs the kernel: a loud skip when not privileged).

use kernel::packet_socket::{PacketSocket, RecvBuffers, SocketError};

#[test]
fn loopback_frames_are_read_back_with_their_metadata() {
    if !testkit::kernel_available("AF_PACKET on loopback") {
        return;
    }
    let sock = PacketSocket::bind(1, libc::ETH_P_ALL as u16, |s| {
        s.set_int(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
            .map_err(|e| SocketError::new("setting SO_TIMESTAMPNS", e))
    })
    .unwrap();
    let sender = PacketSocket::through_qdisc(1).unwrap();
    let mut frame = vec![0u8; 60];
    frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    frame[14..18].copy_from_slice(b"slce");
    assert_eq!(sender.send_batch(&[&frame]).unwrap(), 1);
    let mut bufs = RecvBuffers::new(8, 2048);
    let mut seen = false;
    for _ in 0..40 {
        if !sock.wait(50).unwrap() {
            continue;
        }
        let n = sock.receive(&mut bufs, 8).unwrap();
        for i in 0..n {
            let (data, meta) = bufs.frame(i);
            if data.get(14..18) == Some(b"slce") {
                assert!(meta.loopback);
                assert!(meta.timestamp_ns.is_some());
                assert!(!meta.truncated);
                seen = true;
            }
        }
        if seen {
            break;
        }
    }
    assert!(seen, "the frame sent on lo was not read back");
    sock.drops().unwrap();
}
