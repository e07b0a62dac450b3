//! Every example, probe and tool program (linked with its subprograms, as
//! loaded) has a control flow the checks accept.

#[test]
fn every_program_of_the_project_passes_the_control_flow_checks() {
    let objects = programs::names()
        .map(|n| (n, programs::object(n).unwrap()))
        .chain(programs::probes())
        .chain(programs::tool("gen").map(|o| ("gen", o)));
    let mut checked = 0;
    for (name, bytes) in objects {
        let object = obj::Object::parse(bytes).unwrap();
        for p in &object.programs {
            let cfg =
                verifier::Cfg::build(&p.insns).unwrap_or_else(|e| panic!("{name}/{}: {e}", p.name));
            assert!(cfg.max_frames >= 1);
            checked += 1;
        }
    }
    assert!(checked >= 12, "{checked} programs");
}
