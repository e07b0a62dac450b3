//! Any bytes as IPFIX read back by a collector: a stream of messages
//! (a file, RFC 5655, or TCP) and the same bytes as one datagram, decoded
//! with the templates the stream announced; and as `nfdump -o raw` text.
//! Decoding never panics; every flow decoded that sluice could export
//! (`Flow::check`) encodes, with sluice's encoder, to messages that decode
//! to the same flow (to the millisecond, as IPFIX carries times).

use std::time::{Duration, UNIX_EPOCH};

pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = ipfix::nfdump::parse_raw(text);
    }
    let mut dec = ipfix::Decoder::new();
    let mut flows = Vec::new();
    if let Ok(msgs) = dec.decode_stream(data) {
        flows.extend(msgs.into_iter().flat_map(|m| m.flows));
    }
    if let Ok(m) = dec.decode(data) {
        flows.extend(m.flows);
    }
    if let Ok(m) = ipfix::Decoder::new().decode(data) {
        flows.extend(m.flows);
    }
    let flows: Vec<ipfix::Flow> = flows
        .into_iter()
        .filter(|f| f.check().is_ok())
        .take(64)
        .collect();
    if flows.is_empty() {
        return;
    }
    let mut enc = ipfix::Encoder::new(1, 1500, ipfix::Refresh::Once).expect("an encoder");
    let msgs = enc
        .encode(&flows, UNIX_EPOCH + Duration::from_secs(1_750_000_000))
        .unwrap_or_else(|e| panic!("decoded flows do not encode: {e}: {flows:?}"));
    let mut back = Vec::new();
    let mut dec = ipfix::Decoder::new();
    for m in &msgs {
        let d = dec
            .decode(m)
            .unwrap_or_else(|e| panic!("sluice's message does not decode: {e}"));
        back.extend(d.flows);
    }
    let want: Vec<ipfix::Flow> = flows.iter().map(ipfix::Flow::to_millis).collect();
    assert_eq!(back, want);
}
