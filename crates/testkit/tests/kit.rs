//! The kit itself: captures found, scratch directories cleaned up, tools
//! named when missing, namespaces with veth pairs made and deleted (as
//! root; skipped loudly without, a failure under SLUICE_REQUIRE_KERNEL=1).

#[test]
fn the_shared_captures_are_found_sorted() {
    let all = testkit::captures();
    assert!(all.len() > 100, "{} captures", all.len());
    assert!(all.windows(2).all(|w| w[0] < w[1]));
    let one = testkit::capture("mptcp-v0.pcap");
    assert!(all.contains(&one), "{}", one.display());
    let sizes = testkit::on_every_capture(|p| p.metadata().unwrap().len());
    assert_eq!(sizes.len(), all.len());
}

#[test]
fn object_paths_are_under_the_checkouts_target() {
    let p = testkit::object_path("xdp_pass");
    assert!(p.ends_with("target/bpf/xdp_pass.o"), "{p}");
}

#[test]
fn a_scratch_directory_goes_when_dropped() {
    let kept;
    {
        let s = testkit::Scratch::new("kit-scratch");
        std::fs::write(s.join("f"), b"x").unwrap();
        kept = s.path().to_path_buf();
        assert!(kept.join("f").exists());
    }
    assert!(!kept.exists());
    // A temp_dir stays, and starts empty.
    let d = testkit::temp_dir("kit-temp");
    std::fs::write(d.join("f"), b"x").unwrap();
    let again = testkit::temp_dir("kit-temp");
    assert_eq!(d, again);
    assert!(!again.join("f").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_missing_tool_is_named() {
    let e = std::panic::catch_unwind(|| {
        testkit::tool::output(std::process::Command::new("sluice-no-such-tool").arg("-h"))
    })
    .unwrap_err();
    let e = e.downcast_ref::<String>().unwrap();
    assert!(
        e.contains("sluice-no-such-tool does not run") && e.contains("./dev.sh setup"),
        "{e}"
    );
}

#[test]
fn a_tool_over_its_time_is_killed() {
    let e = std::panic::catch_unwind(|| {
        testkit::tool::run_with_timeout(
            std::process::Command::new("sleep").arg("5"),
            std::time::Duration::from_millis(100),
        )
    })
    .unwrap_err();
    let e = e.downcast_ref::<String>().unwrap();
    assert!(e.contains("killed"), "{e}");
}

#[cfg(feature = "kernel")]
#[test]
fn a_pair_of_namespaces_is_joined_and_deleted() {
    if !testkit::root_available("testkit's namespace pair") {
        return;
    }
    let names;
    {
        let p = testkit::Pair::with_queues("kitpair", "kt_a", "kt_b", 2);
        names = (p.a.to_string(), p.b.to_string());
        let link = p.b.must(&["ip", "-d", "link", "show", "kt_b"]);
        assert!(link.contains("veth") && link.contains("UP"), "{link}");
        assert!(link.contains("numrxqueues 2"), "{link}");
        assert!(p.a.ifindex("kt_a") > 1);
        assert_eq!(testkit::netns::dev_stat(&p.b, "kt_b", "rx_dropped"), 0);
        // One namespace with its own pair, and a thread inside it.
        let ns = testkit::Netns::with_veth("kitone", "k1", "k2");
        // The thread's interfaces are the namespace's (an ioctl; /sys is
        // the mount namespace's, not the network namespace's).
        let name = std::ffi::CString::new("k2").unwrap();
        // SAFETY: a valid NUL-terminated name.
        let index = ns.enter(|| unsafe { libc::if_nametoindex(name.as_ptr()) });
        assert_eq!(index, ns.ifindex("k2"));
        assert_eq!(testkit::netns::veth_drops(&ns, "k2", "k1"), 0);
    }
    let list = String::from_utf8(
        std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        !list.contains(&names.0) && !list.contains(&names.1),
        "{list}"
    );
}
