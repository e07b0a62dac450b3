//! Encoding and decoding: random flows come back equal (to the
//! millisecond), messages stay under the maximum size, sequence numbers count
//! data records, templates go where the refresh rules say, malformed input
//! is refused.

mod common;

use common::random_flows;
use ipfix::{
    DecodeError, Decoder, Encoder, Error, Flow, MIN_MESSAGE, Refresh, TEMPLATE_IPV4, TEMPLATE_IPV6,
};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const BASE_MS: u64 = 1_750_000_000_000;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn periodic(messages: u32, secs: u64) -> Refresh {
    Refresh::Periodic {
        messages,
        interval: Duration::from_secs(secs),
    }
}

#[test]
fn random_flows_round_trip_under_the_mtu_with_sequence_numbers() {
    for (seed, mtu) in [
        (1, 1400),
        (2, 1500),
        (3, MIN_MESSAGE),
        (4, 9000),
        (5, 65535),
    ] {
        let flows = random_flows(seed, 3000, BASE_MS);
        let mut enc = Encoder::new(7, mtu, periodic(10, 600)).unwrap();
        let mut dec = Decoder::new();
        let mut got = Vec::new();
        let mut expected_seq = 0u32;
        let mut msgs_total = 0;
        // In batches of varied sizes, as flow accounting hands them over.
        let mut rest = &flows[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = rest.len().min(1 + (i * 37) % 400);
            let (batch, tail) = rest.split_at(n);
            rest = tail;
            let msgs = enc.encode(batch, at(BASE_MS / 1000 + i as u64)).unwrap();
            for m in &msgs {
                assert!(m.len() <= mtu, "message of {} bytes over {mtu}", m.len());
                assert_eq!(m.len() % 4, 0, "sets padded to four bytes");
                let d = dec.decode(m).unwrap();
                assert_eq!(d.sequence, expected_seq, "message {msgs_total}");
                assert_eq!(d.domain, 7);
                assert_eq!(u64::from(d.export_time), BASE_MS / 1000 + i as u64);
                assert!(!d.flows.is_empty());
                expected_seq += d.flows.len() as u32;
                // Templates in the first message and every tenth after.
                let want: &[u16] = if msgs_total % 10 == 0 {
                    &[TEMPLATE_IPV4, TEMPLATE_IPV6]
                } else {
                    &[]
                };
                assert_eq!(d.templates, want, "message {msgs_total}");
                got.extend(d.flows);
                msgs_total += 1;
            }
            i += 1;
        }
        assert_eq!(enc.sequence(), 3000);
        let want: Vec<Flow> = flows.iter().map(Flow::to_millis).collect();
        assert_eq!(got, want, "seed {seed} mtu {mtu}");
    }
}

#[test]
fn full_messages_hold_as_many_records_as_fit() {
    // All IPv4: 16 header + 4 set header + 50 per record, padded.
    let flows: Vec<Flow> = random_flows(9, 2000, BASE_MS)
        .into_iter()
        .filter(|f| !f.is_ipv6())
        .take(200)
        .collect();
    let mut enc = Encoder::new(1, 1400, Refresh::Once).unwrap();
    let msgs = enc.encode(&flows, at(1)).unwrap();
    let mut dec = Decoder::new();
    let first = dec.decode(&msgs[0]).unwrap();
    let second = dec.decode(&msgs[1]).unwrap();
    // First: 16 + 108 (templates) + 4 + 25*50 = 1378 (+2 padding).
    assert_eq!(first.flows.len(), 25);
    // Then: 16 + 4 + 27*50 = 1370; a 28th would be 1420.
    assert_eq!(second.flows.len(), 27);
    assert_eq!(second.sequence, 25);
    assert!(second.templates.is_empty(), "templates once");
}

#[test]
fn templates_refresh_after_the_interval() {
    let flows = random_flows(11, 5, BASE_MS);
    let mut enc = Encoder::new(1, 1400, periodic(1000, 30)).unwrap();
    let mut dec = Decoder::new();
    let templates_at = |enc: &mut Encoder, dec: &mut Decoder, secs| {
        let m = enc.encode(&flows, at(secs)).unwrap();
        assert_eq!(m.len(), 1);
        !dec.decode(&m[0]).unwrap().templates.is_empty()
    };
    assert!(templates_at(&mut enc, &mut dec, 1000));
    assert!(!templates_at(&mut enc, &mut dec, 1010));
    assert!(!templates_at(&mut enc, &mut dec, 1029));
    assert!(templates_at(&mut enc, &mut dec, 1030));
    assert!(!templates_at(&mut enc, &mut dec, 1031));
    // A clock that goes back sends them again rather than never.
    assert!(templates_at(&mut enc, &mut dec, 900));
}

#[test]
fn data_before_templates_is_refused_with_the_template_named() {
    let flows = random_flows(12, 40, BASE_MS);
    let mut enc = Encoder::new(3, 1400, Refresh::Once).unwrap();
    let msgs = enc.encode(&flows, at(5)).unwrap();
    // A collector that missed the first message.
    let last = msgs.last().unwrap();
    let err = Decoder::new().decode(last).unwrap_err();
    assert!(
        matches!(err, DecodeError::UnknownTemplate { domain: 3, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("never announced"), "{err}");
}

#[test]
fn empty_batches_send_nothing() {
    let mut enc = Encoder::new(1, 1400, Refresh::Once).unwrap();
    assert!(enc.encode(&[], at(1)).unwrap().is_empty());
    assert_eq!(enc.sequence(), 0);
}

#[test]
fn invalid_flows_and_sizes_are_errors() {
    let mut flows = random_flows(13, 3, BASE_MS);
    flows[2].dst = "::1".parse().unwrap();
    flows[2].src = "10.0.0.1".parse().unwrap();
    let mut enc = Encoder::new(1, 1400, Refresh::Once).unwrap();
    let err = enc.encode(&flows, at(1)).unwrap_err();
    assert!(matches!(err, Error::InvalidFlow { index: 2, .. }), "{err}");
    assert_eq!(enc.sequence(), 0, "nothing encoded");

    let mut f = random_flows(14, 1, BASE_MS).remove(0);
    f.protocol = 17;
    f.icmp_type_code = Some(0x0800);
    assert!(matches!(
        enc.encode(&[f], at(1)),
        Err(Error::InvalidFlow { index: 0, .. })
    ));

    let err = Encoder::new(1, MIN_MESSAGE - 1, Refresh::Once).unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
    assert!(Encoder::new(1, 65536, Refresh::Once).is_err());
    let before_1970 = UNIX_EPOCH - Duration::from_secs(1);
    assert!(matches!(
        enc.encode(&random_flows(1, 1, BASE_MS), before_1970),
        Err(Error::Time(_))
    ));
}

#[test]
fn malformed_messages_are_refused_never_panic() {
    let flows = random_flows(21, 30, BASE_MS);
    let mut enc = Encoder::new(1, 1400, Refresh::Once).unwrap();
    let msg = enc.encode(&flows, at(1)).unwrap().remove(0);
    // Every truncation.
    for n in 0..msg.len() {
        assert!(
            Decoder::new().decode(&msg[..n]).is_err(),
            "truncated to {n}"
        );
    }
    // The wrong version.
    let mut bad = msg.clone();
    bad[1] = 9;
    assert_eq!(Decoder::new().decode(&bad), Err(DecodeError::Version(9)));
    // A set longer than the message.
    let mut bad = msg.clone();
    bad[18] = 0xff;
    let err = Decoder::new().decode(&bad).unwrap_err();
    assert!(err.to_string().contains("set length"), "{err}");
    // A template field of an impossible length (sourceIPv4Address of 5).
    let mut bad = msg.clone();
    assert_eq!(&bad[24..28], &[0, 8, 0, 4]);
    bad[27] = 5;
    let err = Decoder::new().decode(&bad).unwrap_err();
    assert!(err.to_string().contains("must be 4"), "{err}");
    // An unknown flowEndReason in the first data record.
    let mut bad = msg.clone();
    let rec = 16 + 108 + 4;
    let reason_at = rec + if flows[0].is_ipv6() { 73 } else { 49 };
    bad[reason_at] = 9;
    let err = Decoder::new().decode(&bad).unwrap_err();
    assert!(err.to_string().contains("flowEndReason 9"), "{err}");
    // Random corruption: an error or a message, never a panic.
    let mut rng = common::Rng(5);
    for _ in 0..20_000 {
        let mut bad = msg.clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(bad.len() as u64) as usize;
            bad[i] = rng.next() as u8;
        }
        let _ = Decoder::new().decode(&bad);
        let _ = Decoder::new().decode_stream(&bad);
    }
}

#[test]
fn streams_of_messages_decode_back_to_back() {
    let flows = random_flows(31, 500, BASE_MS);
    let mut enc = Encoder::new(9, 1400, Refresh::Once).unwrap();
    let stream: Vec<u8> = enc.encode(&flows, at(1)).unwrap().concat();
    let msgs = Decoder::new().decode_stream(&stream).unwrap();
    let got: Vec<Flow> = msgs.into_iter().flat_map(|m| m.flows).collect();
    assert_eq!(got, flows.iter().map(Flow::to_millis).collect::<Vec<_>>());
    let err = Decoder::new()
        .decode_stream(&stream[..stream.len() - 1])
        .unwrap_err();
    assert!(err.to_string().contains("message length"), "{err}");
}
