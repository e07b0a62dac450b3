//! Any bytes as a capture file (pcap or pcapng): reading never panics,
//! a source ends after its first error, every frame is appended whole, and
//! the link-type conversions (802.11 behind radio headers, Linux cooked,
//! ...) take any record.
use std::path::Path;

/// Link types with a conversion, tried on each record's bytes too.
const LINKTYPES: [u32; 9] = [0, 101, 105, 113, 119, 127, 163, 276, 9];

pub fn check(data: &[u8]) {
    let reader = Box::new(std::io::Cursor::new(data.to_vec()));
    let Ok(mut src) = capture::PcapSource::from_reader(Path::new("fuzz"), reader) else {
        return;
    };
    let mut buf = Vec::new();
    let mut frames = 0usize;
    loop {
        let before = buf.len();
        match src.read_into(&mut buf) {
            None => break,
            Some(Ok(info)) => {
                frames += 1;
                assert_eq!(buf.len() - before, info.len as usize);
            }
            Some(Err(e)) => {
                assert_eq!(buf.len(), before, "an error appends nothing");
                assert_eq!(e.packet, Some(frames + 1));
                assert!(src.read_into(&mut buf).is_none(), "the source ended");
                break;
            }
        }
        if buf.len() > 1 << 20 {
            buf.clear();
        }
    }
    // (`src.count()` would be `Iterator::count`.)
    assert_eq!(capture::PcapSource::count(&src), frames);
    // The conversions on the whole input as one record.
    for lt in LINKTYPES {
        let (out, kind) = capture::to_ethernet(lt, data);
        if kind == capture::LinkKind::Foreign(lt) {
            assert_eq!(out, data);
        }
    }
}
