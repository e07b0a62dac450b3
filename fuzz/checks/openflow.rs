//! Any bytes as OpenFlow 1.3 messages: decoding never panics, and what
//! decodes encodes to bytes that decode to the same message. The bytes are
//! tried as they are, as a stream cut by `frame_len`, and with the header's
//! length mended to theirs (so that bodies, not lengths, get explored).
use openflow::{Message, frame_len};

fn check_frame(frame: &[u8]) {
    match Message::decode(frame) {
        Ok((h, m)) => {
            let again = m.encode(h.xid);
            let (h2, m2) = Message::decode(&again)
                .unwrap_or_else(|e| panic!("re-encoded {m:?} does not decode: {e}"));
            assert_eq!(m2, m);
            assert_eq!(h2.xid, h.xid);
            if let Message::FlowMod(f) = &m {
                let _ = f.matcher.check_prerequisites();
            }
        }
        Err(e) => {
            let reply = e.reply(frame);
            assert!(reply.data.len() <= 64);
            assert!(!e.reason.is_empty());
        }
    }
}

pub fn check(data: &[u8]) {
    check_frame(data);

    let mut rest = data;
    while let Ok(Some(n)) = frame_len(rest) {
        if n > rest.len() {
            break;
        }
        check_frame(&rest[..n]);
        rest = &rest[n..];
    }

    if data.len() >= 8 && data.len() <= usize::from(u16::MAX) {
        let mut mended = data.to_vec();
        mended[2..4].copy_from_slice(&(data.len() as u16).to_be_bytes());
        check_frame(&mended);
    }
}
