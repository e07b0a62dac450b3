//! The verifier's case suite: small assembly programs in
//! `tests/cases/<rule>.txt`, each rejected for that rule (or, in
//! `accept.txt`, accepted). Every case is also loaded into the running
//! kernel when root: it must give the same verdict, and its log must hold
//! the expected message.
//!
//! A case:
//! ```text
//! == what it shows
//! type: xdp | xdp-devmap | tc | socket     (default xdp)
//! map: array KEY VALUE ENTRIES            (repeatable; see `parse_map`)
//! kernel: text the kernel's log contains  (and sluice's message, unless
//! sluice: text sluice's message contains   given apart)
//! <assembly>
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use maps::{MapSpec, MapType};
use obj::{MapDef, MapOrigin, Program, ProgramKind, XdpAttach};
use verifier::{MapView, SafetyRule, VerifyOptions};

struct Case {
    file: String,
    name: String,
    kind: ProgramKind,
    maps: Vec<MapDef>,
    kernel: Option<String>,
    sluice: Option<String>,
    asm: String,
}

fn parse_map(spec: &str) -> MapDef {
    let w: Vec<&str> = spec.split_whitespace().collect();
    let n = |i: usize| -> u32 {
        w.get(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("map `{spec}`: field {i}"))
    };
    let (map_type, key, value, entries, flags) = match w[0] {
        "array" => (MapType::Array, n(1), n(2), n(3), 0),
        "percpu-array" => (MapType::PercpuArray, n(1), n(2), n(3), 0),
        "hash" => (MapType::Hash, n(1), n(2), n(3), 0),
        "lru" => (MapType::LruHash, n(1), n(2), n(3), 0),
        "lpm" => (MapType::LpmTrie, n(1), n(2), n(3), 1),
        "progarray" => (MapType::ProgArray, 4, 4, n(1), 0),
        "devmap" => (MapType::Devmap, 4, 4, n(1), 0),
        "cpumap" => (MapType::Cpumap, 4, 4, n(1), 0),
        "ringbuf" => (MapType::Ringbuf, 0, 0, n(1), 0),
        "perf" => (MapType::PerfEventArray, 4, 4, 0, 0),
        "queue" => (MapType::Queue, 0, n(1), n(2), 0),
        "rodata" | "data" => (MapType::Array, 4, n(1), 1, 0),
        other => panic!("unknown map kind {other}"),
    };
    let origin = match w[0] {
        "rodata" => MapOrigin::Data {
            section: ".rodata".into(),
            readonly: true,
        },
        "data" => MapOrigin::Data {
            section: ".data".into(),
            readonly: false,
        },
        _ => MapOrigin::Btf,
    };
    let data = matches!(w[0], "rodata" | "data").then(|| {
        let hex = w.get(2).copied().unwrap_or("");
        (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect::<Vec<u8>>()
    });
    let mut spec = MapSpec::new(
        &format!("m{}", w[0].replace('-', "_")),
        map_type,
        key,
        value,
        entries,
    );
    spec.flags = flags;
    MapDef {
        spec,
        origin,
        pin_by_name: false,
        inner: None,
        initial: vec![],
        data,
        key_type: None,
        value_type: None,
    }
}

fn kind_of(t: &str) -> ProgramKind {
    match t {
        "xdp" => ProgramKind::Xdp {
            attach: XdpAttach::Device,
            frags: false,
        },
        "xdp-devmap" => ProgramKind::Xdp {
            attach: XdpAttach::Devmap,
            frags: false,
        },
        "tc" => ProgramKind::SchedCls,
        "socket" => ProgramKind::SocketFilter,
        other => panic!("unknown program type {other}"),
    }
}

fn load_cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let file = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        for block in text.split("\n== ").skip(1) {
            let mut lines = block.lines();
            let name = lines.next().unwrap().trim().to_string();
            let mut case = Case {
                file: file.clone(),
                name,
                kind: kind_of("xdp"),
                maps: vec![],
                kernel: None,
                sluice: None,
                asm: String::new(),
            };
            for line in lines {
                let t = line.trim();
                if let Some(v) = t.strip_prefix("type:") {
                    case.kind = kind_of(v.trim());
                } else if let Some(v) = t.strip_prefix("map:") {
                    case.maps.push(parse_map(v.trim()));
                } else if let Some(v) = t.strip_prefix("kernel:") {
                    case.kernel = Some(v.trim().to_string());
                } else if let Some(v) = t.strip_prefix("sluice:") {
                    case.sluice = Some(v.trim().to_string());
                } else {
                    case.asm.push_str(line);
                    case.asm.push('\n');
                }
            }
            cases.push(case);
        }
    }
    cases
}

fn program(case: &Case) -> Program {
    let insns =
        isa::assemble(&case.asm).unwrap_or_else(|e| panic!("{}/{}: {e}", case.file, case.name));
    Program {
        name: "case".into(),
        section: case.kind.type_name().into(),
        kind: case.kind.clone(),
        insns,
        functions: vec![("case".into(), 0)],
        lines: vec![],
        kfuncs: vec![],
        core_relocations: 0,
        core_poisoned: vec![],
        type_given: false,
        attach_type: None,
    }
}

fn rule_of(file: &str) -> Option<SafetyRule> {
    let all = [
        SafetyRule::ControlFlow,
        SafetyRule::UninitRegister,
        SafetyRule::FramePointer,
        SafetyRule::InvalidDeref,
        SafetyRule::NullPointer,
        SafetyRule::PacketBounds,
        SafetyRule::MapBounds,
        SafetyRule::StackBounds,
        SafetyRule::CtxAccess,
        SafetyRule::ReadOnly,
        SafetyRule::PointerArithmetic,
        SafetyRule::HelperArgument,
        SafetyRule::UnknownHelper,
        SafetyRule::ReferenceLeak,
        SafetyRule::InvalidInstruction,
        SafetyRule::Complexity,
        SafetyRule::StackDepth,
        SafetyRule::ReturnValue,
    ];
    all.into_iter().find(|r| r.name() == file)
}

#[test]
fn every_case_gets_its_verdict_from_sluice_and_the_kernel() {
    let cases = load_cases();
    let kernel = testkit::kernel_available("kernel verdicts on the verifier cases");
    let only = std::env::var("CASE").ok();
    let mut failures = Vec::new();
    let mut per_rule: BTreeMap<String, usize> = BTreeMap::new();
    for case in &cases {
        if only.as_deref().is_some_and(|o| !case.name.contains(o)) {
            continue;
        }
        let p = program(case);
        let maps = MapView::of_maps(&case.maps, &|_| None);
        let opts = VerifyOptions {
            helpers: runtime::helpers::ids_for(&case.kind),
            log: only.is_some(),
            ..VerifyOptions::default()
        };
        let report = verifier::verify(&p, &maps, &opts);
        if only.is_some() {
            eprintln!("{}", report.log.join("\n"));
        }
        let label = format!("{}/{}", case.file, case.name);
        let expect_reject = case.file != "accept";
        match (&report.result, expect_reject) {
            (Ok(()), true) => failures.push(format!("{label}: sluice accepts")),
            (Err(e), false) => failures.push(format!(
                "{label}: sluice rejects: {}\n    {}\n    state: {}",
                e.kernel, e.reason, e.state
            )),
            (Err(e), true) => {
                let want_rule =
                    rule_of(&case.file).unwrap_or_else(|| panic!("no rule named {}", case.file));
                let want = case
                    .sluice
                    .as_ref()
                    .or(case.kernel.as_ref())
                    .expect("an expected message");
                if e.rule != want_rule || !e.kernel.contains(want.as_str()) {
                    failures.push(format!("{label}: sluice rejects as {} with `{}`, expected {want_rule} with `{want}`", e.rule, e.kernel));
                }
                *per_rule.entry(case.file.clone()).or_default() += 1;
            }
            (Ok(()), false) => {}
        }
        if kernel {
            let v = kernel::verify::verify_program(&p, &case.maps, None, &|_| None)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            if v.accepted == expect_reject {
                failures.push(format!(
                    "{label}: the kernel {} it: {}",
                    if v.accepted { "accepts" } else { "rejects" },
                    v.reason()
                ));
            } else if let Some(k) = &case.kernel
                && !v.accepted
                && !v.log.contains(k.as_str())
            {
                failures.push(format!(
                    "{label}: the kernel's log lacks `{k}`; it says: {}",
                    v.reason()
                ));
            }
        }
    }
    eprintln!("rejections per rule: {per_rule:?}");
    assert!(
        failures.is_empty(),
        "{} of {} cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    if only.is_none() {
        let total: usize = per_rule.values().sum();
        assert!(total >= 150, "{total} rejection cases");
        for (rule, n) in &per_rule {
            assert!(*n >= 5, "rule {rule} has {n} cases");
        }
    }
}
