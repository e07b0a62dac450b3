//! Every example, probe and tool program (linked with its subprograms, as
//! loaded) has a control flow the checks accept.

#[test]
fn every_program_of_the_project_passes_the_control_flow_checks() {
    let objects = programs::names()
        .map(|n| (n, programs::object(n).unwrap()))
        .chain(programs::probes())
        .chain(programs::tools());
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

/// Every example, probe and tool program is accepted.
#[test]
fn every_program_of_the_project_is_accepted() {
    let objects = programs::names()
        .map(|n| (n, programs::object(n).unwrap()))
        .chain(programs::probes())
        .chain(programs::tools());
    let mut failures = Vec::new();
    for (name, bytes) in objects {
        let object = obj::Object::parse(bytes).unwrap();
        let maps = verifier::MapView::of_object(&object, &|_| None);
        for p in &object.programs {
            let opts = verifier::VerifyOptions {
                log: std::env::var_os("VLOG").is_some(),
                ..Default::default()
            };
            let report = verifier::verify(p, &maps, &opts);
            if std::env::var_os("VLOG").is_some() {
                eprintln!("{}", report.log.join("\n"));
            }
            eprintln!(
                "{name}/{}: {:?} insns={} states={} pruned={} {}us",
                p.name,
                report.result.as_ref().map_err(|e| e.to_string()),
                report.insns_processed,
                report.states,
                report.pruned,
                report.micros
            );
            if let Err(e) = report.result {
                failures.push(format!(
                    "{name}/{}: {e}\n  kernel: {}\n  state: {}",
                    p.name, e.kernel, e.state
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The kernel gives the same verdict on every project program, loaded as
/// sluice links it.
#[test]
fn the_kernel_agrees_on_every_program() {
    if !testkit::kernel_available("kernel verdicts on the project's programs") {
        return;
    }
    let objects = programs::names()
        .map(|n| (n, programs::object(n).unwrap()))
        .chain(programs::probes())
        .chain(programs::tools());
    for (name, bytes) in objects {
        let object = obj::Object::parse(bytes).unwrap();
        let maps = verifier::MapView::of_object(&object, &|_| None);
        for p in &object.programs {
            let ours = verifier::verify(p, &maps, &verifier::VerifyOptions::default());
            let theirs =
                kernel::verify::verify_program(p, &object.maps, object.btf.as_ref(), &|_| None)
                    .unwrap();
            eprintln!(
                "{name}/{}: sluice {} ({} insns, {} us), kernel {} ({:?} insns, {:?} us)",
                p.name,
                ours.result.is_ok(),
                ours.insns_processed,
                ours.micros,
                theirs.accepted,
                theirs.insns_processed,
                theirs.micros
            );
            assert_eq!(
                ours.result.is_ok(),
                theirs.accepted,
                "{name}/{}: kernel says {}",
                p.name,
                theirs.reason()
            );
        }
    }
}
