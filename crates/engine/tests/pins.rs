//! Maps pinned by name keep their contents from one run to the next.

use engine::{HookSpec, RunSpec, SourceSpec};

#[test]
fn pinned_maps_are_saved_after_a_run_and_restored_at_the_next() {
    let object =
        programs::compile::compile("pinned", include_str!("../../cli/tests/programs/pinned.c"));
    let dir = std::env::temp_dir().join(format!("engine-pins-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut hook = HookSpec::from_bytes("pinned.o", object);
    hook.pin = Some(dir.clone());
    let spec = RunSpec::new(hook, SourceSpec::generated(["udp,count=5"]));
    for runs in 1..=2 {
        let report = spec.run(None, None).unwrap();
        let map = report
            .maps
            .iter()
            .find(|m| m.name == "pinned_counts")
            .unwrap();
        let first = map.entries.iter().find(|e| e.key == "0").unwrap();
        assert_eq!(first.value, (5 * runs).to_string(), "run {runs}");
    }
    assert!(dir.join("pinned_counts").is_file());

    // A file that is not a map's is refused, named.
    std::fs::write(dir.join("pinned_counts"), b"nonsense").unwrap();
    let e = spec.hook.build().err().unwrap().to_string();
    assert_eq!(
        e,
        format!(
            "{}: not a sluice map file",
            dir.join("pinned_counts").display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
