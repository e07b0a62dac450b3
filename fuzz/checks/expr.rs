//! Any text as a tcpdump expression, compiled by libpcap for one of a few
//! link types and a snap length (the first two bytes choose): compiling
//! never panics (libpcap's errors come back as errors). What compiles
//! reads back from its decimal form (`-ddd`) and, if the kernel's checker
//! takes it (libpcap may read scratch memory on a path that never wrote
//! it, which the kernel refuses), runs over a packet to a verdict no
//! larger than the snap length; a refused program runs or fails without
//! panicking.

const LINKTYPES: [u32; 8] = [1, 0, 101, 113, 127, 105, 276, 12];

pub fn check(data: &[u8]) {
    let [lt, snap, rest @ ..] = data else { return };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    // libpcap reads a C string: an interior NUL ends it (the pcap crate
    // refuses such a string, which is an error, not a crash).
    let linktype = LINKTYPES[usize::from(*lt) % LINKTYPES.len()];
    let snaplen = if *snap == 0 {
        cbpf::DEFAULT_SNAPLEN
    } else {
        u32::from(*snap) * 16
    };
    let Ok(prog) = cbpf::compile_expr(text, linktype, snaplen) else {
        return;
    };
    assert!(!prog.is_empty(), "{text:?}: an empty program");
    assert_eq!(
        cbpf::parse_decimal(&cbpf::image_decimal(&prog)).ok(),
        Some(prog.clone())
    );
    match cbpf::check(&prog) {
        Ok(()) => {
            let packet: Vec<u8> = (0..80u8).collect();
            let v = cbpf::run(&prog, &packet, &cbpf::Meta::default())
                .unwrap_or_else(|e| panic!("{text:?}: a checked program fails: {e}"));
            assert!(
                v.ret <= snaplen,
                "{text:?}: keeps {} bytes of {snaplen}",
                v.ret
            );
        }
        Err(_) => {
            let _ = cbpf::run(&prog, &[0u8; 64], &cbpf::Meta::default());
        }
    }
}
