//! Third-party programs (from `./dev.sh setup`): xdp-tools' objects and
//! Cilium's datapath in its three configurations. sluice accepts every
//! packet program the kernel accepts, and the kernel (when root) gives the
//! same verdict.

use verifier::{MapView, VerifyOptions};

fn check_object(label: &str, bytes: &[u8], kernel: bool, failures: &mut Vec<String>) -> usize {
    let object = obj::Object::parse(bytes).unwrap_or_else(|e| panic!("{label}: {e}"));
    let maps = MapView::of_object(&object, &|_| None);
    let mut checked = 0;
    for p in object.programs.iter().filter(|p| p.kind.is_runnable()) {
        let opts = VerifyOptions {
            helpers: runtime::helpers::ids_for(&p.kind),
            ..VerifyOptions::default()
        };
        let ours = verifier::verify(p, &maps, &opts);
        let line = format!(
            "{label} {}: sluice {:?} in {} insns",
            p.name,
            ours.result.as_ref().map_err(|e| &e.kernel),
            ours.insns_processed
        );
        if kernel {
            let theirs =
                kernel::verify::verify_program(p, &object.maps, object.btf.as_ref(), &|_| None)
                    .unwrap_or_else(|e| panic!("{label} {}: {e}", p.name));
            eprintln!(
                "{line}; kernel {} in {:?}",
                theirs.accepted, theirs.insns_processed
            );
            if theirs.accepted != ours.result.is_ok() {
                failures.push(format!(
                    "{line}, but the kernel says {}: {}",
                    theirs.accepted,
                    theirs.reason()
                ));
            }
        } else {
            eprintln!("{line}");
        }
        if let Err(e) = &ours.result {
            failures.push(format!("{line}: {}", e.reason));
        }
        checked += 1;
    }
    checked
}

/// One object to check: an xdp-tools object, or a Cilium datapath file
/// built in one configuration.
enum Job {
    XdpTools(std::path::PathBuf),
    Cilium {
        config: &'static str,
        defines: &'static str,
        file: &'static str,
    },
}

#[test]
fn third_party_programs_verify_as_in_the_kernel() {
    let kernel = testkit::kernel_available("kernel verdicts on third-party programs");
    let mut jobs: Vec<Job> = programs::thirdparty::xdp_tools_objects()
        .into_iter()
        .map(Job::XdpTools)
        .collect();
    for &(config, defines) in programs::thirdparty::CONFIGS {
        for &file in programs::thirdparty::DATAPATH {
            jobs.push(Job::Cilium {
                config,
                defines,
                file,
            });
        }
    }
    let root = programs::thirdparty::source_root("cilium@v1.20.2");
    // Two workers, each every other object (building Cilium and the two
    // verifiers are most of the time).
    let (checked, failures) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let (jobs, root) = (&jobs, &root);
                s.spawn(move || {
                    let (mut checked, mut failures) = (0, Vec::new());
                    for job in jobs.iter().skip(w).step_by(2) {
                        let (label, bytes) = match job {
                            Job::XdpTools(path) => (
                                path.file_name().unwrap().to_string_lossy().into_owned(),
                                std::fs::read(path).unwrap(),
                            ),
                            Job::Cilium {
                                config,
                                defines,
                                file,
                            } => (
                                format!("cilium {file} ({config})"),
                                programs::thirdparty::build_cilium(root, file, defines),
                            ),
                        };
                        checked += check_object(&label, &bytes, kernel, &mut failures);
                    }
                    (checked, failures)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).fold(
            (0, Vec::new()),
            |(n, mut f), (m, g)| {
                f.extend(g);
                (n + m, f)
            },
        )
    });
    eprintln!("{checked} programs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 160, "only {checked} programs");
}
