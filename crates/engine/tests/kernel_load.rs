//! [`KernelSpec::load`]: an object into the kernel with the settings the
//! VM takes (needs root: skipped loudly without, a failure under
//! `SLUICE_REQUIRE_KERNEL=1`).

use engine::KernelSpec;

#[test]
fn an_object_loads_into_the_kernel_with_its_settings() {
    if !testkit::kernel_available("KernelSpec::load") {
        return;
    }
    let mut spec = KernelSpec::from_bytes("xdp_ddos.o", programs::object("xdp_ddos").unwrap());
    spec.settings.set = vec!["rate_pps=1000".into()];
    let kobj = spec.load(None).unwrap();
    let names: Vec<String> = kobj.programs().iter().map(|p| p.name.clone()).collect();
    assert!(!names.is_empty(), "{names:?}");
    // A setting that names nothing is refused before the kernel sees it.
    spec.settings.set = vec!["nope=1".into()];
    let e = spec.load(None).err().unwrap().to_string();
    assert!(e.starts_with("xdp_ddos.o: "), "{e}");
    assert!(e.contains("no such global variable"), "{e}");
}
