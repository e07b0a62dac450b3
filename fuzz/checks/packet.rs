//! Any bytes as a frame, through every reader of frames outside the VM:
//! flow accounting's `monitor::observe`, the switch's flow-key extraction
//! (`switch::flow::extract`), tc's skb and flower dissector, and the
//! link-type conversions of `capture::to_ethernet` before them. None panics; the
//! layer offsets extraction reports lie inside the frame (the transport
//! one after the network one); an observed datagram's ports are zero for
//! protocols without ports; a frame's key does not depend on the port it
//! came in on except for `in_port`; tc's dissector gives the same key for
//! the same bytes.

/// Link types with a conversion (as in `captures`), chosen by the first byte.
const LINKTYPES: [u32; 9] = [1, 101, 105, 113, 119, 127, 163, 276, 9];

pub fn check(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    frame(rest);
    let lt = LINKTYPES[usize::from(sel) % LINKTYPES.len()];
    let (eth, _) = capture::to_ethernet(lt, rest);
    frame(&eth);
}

fn frame(f: &[u8]) {
    if let Some(o) = monitor::observe(f) {
        assert_eq!(o.key.src.is_ipv4(), o.key.dst.is_ipv4(), "{o:?}");
        if !matches!(o.key.protocol, 1 | 6 | 17 | 58 | 132 | 136) {
            assert_eq!((o.key.src_port, o.key.dst_port), (0, 0), "{o:?}");
        }
        if o.key.protocol != 6 {
            assert_eq!(o.tcp_flags, 0, "{o:?}");
        }
    }

    let (key, layout) = switch::flow::extract(f, 1);
    if let Some(l3) = layout.l3 {
        assert!(l3 <= f.len(), "l3 {l3} past {} bytes", f.len());
        if let Some(l4) = layout.l4 {
            assert!(
                l3 < l4 && l4 <= f.len(),
                "l4 {l4} (l3 {l3}) of {} bytes",
                f.len()
            );
        }
    } else {
        assert_eq!(layout.l4, None);
    }
    let (mut other, layout2) = switch::flow::extract(f, 7);
    assert_eq!(layout, layout2);
    switch::flow::slot::IN_PORT.set(&mut other, 1);
    assert_eq!(key, other, "only in_port differs");

    let skb = tc::Skb::from_frame(f, 1);
    assert!(skb.network <= f.len());
    let k = tc::flower::dissect(&skb);
    assert_eq!(k, tc::flower::dissect(&tc::Skb::from_frame(f, 1)));
    let _ = skb.untagged();
    let _ = skb.word(0);
    let _ = skb.bytes(-14, 14);
}
