//! Third-party programs: the XDP programs of xdp-tools (from Debian's
//! packages, fetched by `./dev.sh setup` into target/thirdparty) load and run
//! over every capture without an error. Some return XDP_ABORTED on malformed
//! frames: checked by hand, the kernel returns the same for those frames;
//! `sluice diff` (the kernel-backend issue) makes that comparison a test.

mod common;

use common::*;
use runtime::*;

#[test]
fn xdp_tools_programs_run_over_every_capture() {
    let frames = capture_frames();
    let mut ran = 0;
    for path in programs::thirdparty::xdp_tools_objects() {
        let object = obj::Object::parse(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (i, p) in object.programs.iter().enumerate() {
            if !p.kind.is_xdp() {
                assert!(
                    !p.kind.is_runnable(),
                    "{} {}: {:?}",
                    path.display(),
                    p.name,
                    p.kind
                );
                continue;
            }
            let image = Image::load(object.clone(), &LoadOptions::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut hook = Hook::new(image, i, 0)
                .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), p.name));
            let mut verdicts = std::collections::BTreeMap::new();
            for f in &frames {
                let out = hook
                    .run(
                        &f.data[..f.data.len().min(MAX_FRAME)],
                        &meta(f.timestamp_ns),
                    )
                    .unwrap_or_else(|e| panic!("{} {}: {e}", path.display(), p.name));
                *verdicts.entry(out.verdict.name()).or_insert(0) += 1;
            }
            println!(
                "{} {}: {verdicts:?}",
                path.file_name().unwrap().to_string_lossy(),
                p.name
            );
            assert!(
                verdicts.keys().any(|v| *v != "ABORTED"),
                "{} {}: {verdicts:?}",
                path.display(),
                p.name
            );
            ran += 1;
        }
    }
    assert!(ran >= 14, "only {ran} programs ran");
}
