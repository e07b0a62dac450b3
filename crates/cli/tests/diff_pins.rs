//! `sluice diff` of an object that pins maps by name, where no BPF
//! filesystem is mounted on /sys/fs/bpf: the run mounts a private one.

use std::process::Command;

#[test]
fn pinned_maps_without_a_bpffs_get_a_private_one() {
    if !testkit::kernel_available("sluice diff without a bpffs") {
        return;
    }
    let obj = programs::compile::compile("pinned", include_str!("programs/pinned.c"));
    let dir = std::env::temp_dir().join(format!("sluice-pins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("pinned.o");
    std::fs::write(&path, obj).unwrap();
    // In a mount namespace of the test's own, /sys/fs/bpf unmounted.
    let script = format!(
        "umount /sys/fs/bpf 2>/dev/null; exec {} diff {} --gen udp,count=5 --json",
        env!("CARGO_BIN_EXE_sluice"),
        path.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["compared"], 5, "{stdout}");
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .contains("no BPF filesystem is mounted"),
        "{stdout}"
    );
}
