//! The specs' errors, in the words `sluice` prints them, and specs as
//! JSON.

use engine::{Error, HookSpec, MapUpdate, Origin, Route, RunSpec, SinkSpec, SourceSpec, Target};

fn ddos() -> HookSpec {
    HookSpec::from_bytes("xdp_ddos.o", programs::object("xdp_ddos").unwrap())
}

fn build_error(spec: &HookSpec) -> String {
    match spec.build() {
        Ok(_) => panic!("{spec:?} built"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_missing_object_is_named() {
    let e = build_error(&HookSpec::new("/nonexistent/prog.o"));
    assert!(e.starts_with("/nonexistent/prog.o: "), "{e}");
    assert!(e.contains("No such file"), "{e}");
}

#[test]
fn bad_settings_say_which() {
    for (set, want) in [
        ("burst=1x", "`1x` is not an integer"),
        ("burst", "--set takes NAME=VALUE, not `burst`"),
    ] {
        let mut spec = ddos();
        spec.settings.set = vec![set.into()];
        assert_eq!(build_error(&spec), want);
    }
    let mut spec = ddos();
    spec.settings.set = vec!["nope=1".into()];
    let e = build_error(&spec);
    assert!(e.starts_with("xdp_ddos.o: "), "{e}");
    assert!(e.contains("no such global variable"), "{e}");

    let mut spec = ddos();
    spec.settings.map_size = vec!["nope=4".into()];
    assert_eq!(
        build_error(&spec),
        "--map-size nope: the object has no such map"
    );
    let mut spec = ddos();
    spec.settings.map_size_default = Some(0);
    assert_eq!(build_error(&spec), "--map-size-default: 0 is no size");
    let mut spec = ddos();
    spec.settings.attach_type = vec!["xdp".into()];
    assert_eq!(
        build_error(&spec),
        "--attach-type xdp: give the program type too, with --type TYPE"
    );
}

#[test]
fn bad_map_updates_say_which() {
    let update = |map: &str, key: &str, value: &str| {
        let mut spec = ddos();
        spec.contents.map_update = vec![MapUpdate {
            map: map.into(),
            key: key.into(),
            value: value.into(),
        }];
        build_error(&spec)
    };
    assert_eq!(update("nope", "1", "2"), "--map-update nope: no such map");
    let e = update("blocklist_v4", "10.0.0.0", "0");
    assert!(e.starts_with("--map-update blocklist_v4: key "), "{e}");
    assert!(e.contains("ADDR/LEN"), "{e}");
    let e = update("protected_ports", "70000", "1");
    assert!(e.contains("does not fit"), "{e}");
    // A good one goes in.
    let mut spec = ddos();
    spec.contents.map_update = vec![MapUpdate {
        map: "protected_ports".into(),
        key: "53".into(),
        value: "1".into(),
    }];
    spec.build().unwrap();
}

#[test]
fn an_unknown_program_is_named() {
    let mut spec = ddos();
    spec.program = Some("nope".into());
    let e = build_error(&spec);
    assert!(e.starts_with("xdp_ddos.o: "), "{e}");
    assert!(e.contains("nope"), "{e}");
}

fn run_error(spec: &RunSpec) -> Error {
    match spec.run(None, None) {
        Ok(_) => panic!("{spec:?} ran"),
        Err(e) => e,
    }
}

#[test]
fn bad_sources_and_sinks_say_which() {
    let spec = RunSpec::new(ddos(), SourceSpec::generated(["udp,bogus"]));
    let e = run_error(&spec).to_string();
    assert!(e.contains("unknown field"), "{e}");

    let mut source = SourceSpec::generated(["udp,count=1"]);
    source.filter = Some("udp port".into());
    let e = run_error(&RunSpec::new(ddos(), source));
    assert!(matches!(e, Error::Filter { .. }), "{e:?}");
    assert!(e.to_string().starts_with("--filter udp port: "), "{e}");

    let mut spec = RunSpec::new(ddos(), SourceSpec::generated(["udp,count=1"]));
    spec.sinks = [Route::Pass, Route::Drop]
        .map(|route| SinkSpec {
            route,
            to: Target::File("-".into()),
        })
        .to_vec();
    let e = run_error(&spec);
    assert_eq!(e.to_string(), "only one output can be standard output (-)");

    let spec = RunSpec::new(ddos(), SourceSpec::capture("/nonexistent/in.pcap"));
    let e = run_error(&spec).to_string();
    assert!(e.contains("/nonexistent/in.pcap"), "{e}");
}

#[test]
fn frames_in_memory_run_and_are_described() {
    let frame = packet::Builder::udp("10.5.0.1", "10.0.0.2", 1000, 80).build();
    let mut hook = ddos();
    hook.contents.map_update = vec![MapUpdate {
        map: "blocklist_v4".into(),
        key: "10.5.0.0/16".into(),
        value: "0".into(),
    }];
    let source = SourceSpec::new(Origin::Frames {
        frames: vec![(0, frame.clone()), (1000, frame)],
    });
    let report = RunSpec::new(hook, source).run(None, None).unwrap();
    assert_eq!(report.source, "2 frames in memory");
    assert_eq!(report.verdicts["DROP"], 2);
    assert_eq!(report.object, "xdp_ddos.o");
}

#[test]
fn a_run_spec_reads_back_from_json() {
    let mut hook = HookSpec::new("target/bpf/xdp_ddos.o");
    hook.settings.set = vec!["burst=2".into()];
    hook.engine = engine::VmEngine::Interpreter;
    let mut spec = RunSpec::new(hook, SourceSpec::capture("in.pcap"));
    spec.sinks.push(SinkSpec {
        route: Route::Drop,
        to: Target::File("dropped.pcap".into()),
    });
    spec.shard = engine::ShardMode::Flows(engine::Sharding::RoundRobin);
    let json = serde_json::to_string(&spec).unwrap();
    assert!(json.contains("\"round-robin\""), "{json}");
    assert!(json.contains("\"interpreter\""), "{json}");
    let back: RunSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), json);

    // Fields left out take their defaults.
    let short: RunSpec = serde_json::from_str(
        r#"{"hook": {"object": {"path": "a.o"}},
            "source": {"origin": {"generated": {"specs": ["udp"]}}}}"#,
    )
    .unwrap();
    assert!(short.hook.verify);
    assert_eq!(short.hook.engine, engine::VmEngine::Jit);
    assert_eq!(short.hook.cpus, 1);
    assert_eq!(short.map_entries, 16);
}

#[test]
fn an_object_verifies_with_its_settings() {
    let source = engine::ObjectSource::Bytes {
        name: "xdp_ddos.o".into(),
        bytes: programs::object("xdp_ddos").unwrap().to_vec(),
    };
    let settings = engine::Settings {
        set: vec!["burst=7".into()],
        ..Default::default()
    };
    let v = engine::Verifiable::load(&source, &settings).unwrap();
    for p in &v.object.programs {
        let r = engine::verify(p, &v.maps, &engine::VerifyOptions::default());
        assert!(r.result.is_ok(), "{}: {:?}", p.name, r.result);
    }
    // The global data holds the value set.
    let data = (0..v.maps.len()).find_map(|i| v.data_of(i)).unwrap();
    assert!(data.windows(8).any(|w| w == 7u64.to_le_bytes()), "{data:?}");

    let settings = engine::Settings {
        set: vec!["nope=1".into()],
        ..Default::default()
    };
    let e = engine::Verifiable::load(&source, &settings).err().unwrap();
    assert!(e.to_string().contains("no such global variable"), "{e}");
}
