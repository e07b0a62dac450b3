//! `sluice tc`'s configuration file against careless and hostile
//! neighbours (issue 41, items 2 and 9): a planted symbolic link is
//! refused and nothing is created at its target; a file others may write
//! or another user owns is refused with the fix named; the default is in
//! the user's own state directory, not the current one; a full disk
//! leaves the file as its last whole version and the command exits 1;
//! writers at once lose no line.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use testkit::Scratch;

use common::SLUICE;

/// A line nobody should adopt.
const PLANTED: &str = "qdisc add dev evil0 clsact\n\
    filter add dev evil0 ingress prio 1 protocol all matchall action mirred egress redirect dev evil0\n";

/// A scratch directory `sluice-tcconf-NAME-PID`, removed when the test ends.
fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("tcconf-{name}"))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn tc(conf: &Path, line: &str) -> Output {
    Command::new(SLUICE)
        .arg("tc")
        .arg("--config")
        .arg(conf)
        .args(line.split(' '))
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn refused(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in {err}");
    }
}

#[test]
fn a_planted_symlink_is_refused_and_nothing_is_created_at_its_target() {
    let dir = scratch("link");
    let conf = dir.join("tc.conf");
    let target = dir.join("chosen-by-nobody");
    std::os::unix::fs::symlink(&target, &conf).unwrap();
    let out = tc(&conf, "qdisc add dev v0 clsact");
    refused(&out, &[&conf.display().to_string(), "symbolic link"]);
    assert!(!target.exists(), "a file was created at the link's target");
    // A link to a file of planted lines: not read, not written.
    std::fs::write(&target, PLANTED).unwrap();
    let out = tc(&conf, "qdisc show");
    refused(&out, &["symbolic link"]);
    let out = tc(&conf, "qdisc add dev v0 clsact");
    refused(&out, &["symbolic link"]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), PLANTED);
    assert!(
        std::fs::symlink_metadata(&conf)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_file_others_may_write_is_refused_until_fixed() {
    let dir = scratch("mode");
    let conf = dir.join("tc.conf");
    std::fs::write(&conf, PLANTED).unwrap();
    for mode in [0o666, 0o620, 0o602] {
        std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = tc(&conf, "qdisc show");
        refused(
            &out,
            &[
                &conf.display().to_string(),
                &format!("mode {mode:04o}"),
                "chmod go-w",
            ],
        );
        let out = tc(&conf, "qdisc add dev v0 clsact");
        refused(&out, &["chmod go-w"]);
        assert_eq!(std::fs::read_to_string(&conf).unwrap(), PLANTED);
    }
    // Fixed as the message says: read, and a new line keeps the mode.
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = tc(&conf, "qdisc add dev v0 clsact");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        format!("{PLANTED}qdisc add dev v0 clsact\n")
    );
    assert_eq!(std::fs::metadata(&conf).unwrap().mode() & 0o777, 0o644);
}

/// Root, and a file uid 65534 owns: refused, named with its owner; uid
/// 65534, and a file root owns: taken (root may write anyone's files).
#[test]
fn a_file_another_user_owns_is_refused() {
    if !common::root_available("a configuration owned by uid 65534") {
        return;
    }
    let dir = scratch("owner");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = dir.join("tc.conf");
    std::fs::write(&conf, PLANTED).unwrap();
    std::os::unix::fs::chown(&conf, Some(65534), Some(65534)).unwrap();
    let out = tc(&conf, "qdisc show");
    refused(
        &out,
        &[&conf.display().to_string(), "owned by uid 65534", "chown 0"],
    );
    let out = tc(&conf, "qdisc add dev v0 clsact");
    refused(&out, &["owned by uid 65534"]);
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), PLANTED);

    std::os::unix::fs::chown(&conf, Some(0), Some(0)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", SLUICE])
        .args(["tc", "--config"])
        .arg(&conf)
        .args(["qdisc", "show"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("dev evil0"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Without --config, in a directory everyone may write holding a planted
/// `sluice-tc.conf` (the old default): the planted lines are not adopted
/// (only named on stderr), the configuration goes to the user's state
/// directory (mode 0700, the file 0600), and nothing changes in the
/// current directory. As root this runs as uid 65534 (setpriv).
#[test]
fn the_default_configuration_is_in_the_users_state_directory() {
    let dir = scratch("default");
    let home = dir.join("home");
    let shared = dir.join("shared");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(shared.join("sluice-tc.conf"), PLANTED).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    }
    let run = |line: &str, xdg: Option<&Path>| {
        let mut c = if is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", SLUICE]);
            c
        } else {
            Command::new(SLUICE)
        };
        c.arg("tc").args(line.split(' ')).current_dir(&shared);
        c.env("HOME", &home).env_remove("XDG_STATE_HOME");
        if let Some(x) = xdg {
            c.env("XDG_STATE_HOME", x);
        }
        c.output().unwrap()
    };
    let out = run("qdisc add dev v0 clsact", None);
    assert!(out.status.success(), "{}", stderr(&out));
    let conf = home.join(".local/state/sluice/tc.conf");
    assert!(
        stderr(&out).contains("./sluice-tc.conf is no longer read by default"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains(&conf.display().to_string()));
    let out = run("qdisc show", None);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("dev v0") && !shown.contains("evil0"),
        "{shown}"
    );
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        "qdisc add dev v0 clsact\n"
    );
    assert_eq!(std::fs::metadata(&conf).unwrap().mode() & 0o777, 0o600);
    let state = conf.parent().unwrap();
    assert_eq!(std::fs::metadata(state).unwrap().mode() & 0o777, 0o700);
    assert_eq!(
        std::fs::read_to_string(shared.join("sluice-tc.conf")).unwrap(),
        PLANTED
    );
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 1);
    // XDG_STATE_HOME, when set, is the state directory.
    let xdg = home.join("xdg");
    let out = run("qdisc add dev v1 clsact", Some(&xdg));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(xdg.join("sluice/tc.conf")).unwrap(),
        "qdisc add dev v1 clsact\n"
    );
}

/// root's default is /var/lib/sluice/tc.conf: tried in a private mount
/// namespace with a tmpfs over /var/lib, so the host's is not touched.
#[test]
fn roots_default_configuration_is_in_var_lib_sluice() {
    if !common::root_available("root's default configuration") {
        return;
    }
    let dir = scratch("rootdefault");
    std::fs::write(dir.join("sluice-tc.conf"), PLANTED).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=1m sluice-tcconf /var/lib || exit 99; \
         {SLUICE} tc qdisc add dev v0 clsact || exit 98; \
         stat -c '%a %u' /var/lib/sluice /var/lib/sluice/tc.conf; \
         cat /var/lib/sluice/tc.conf; {SLUICE} tc qdisc show"
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "700 0\n600 0\nqdisc add dev v0 clsact\nqdisc clsact ffff: dev v0 parent ffff:fff1 \n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sluice-tc.conf")).unwrap(),
        PLANTED
    );
}

/// A 64-KiB tmpfs, filled: `sluice tc ... add` until one finds no room.
/// That one exits 1 naming the file and the cause, the file is still the
/// lines that succeeded (whole, no temporary file left beside it), and
/// once room is made the next command works.
#[test]
fn a_full_disk_leaves_the_last_whole_configuration() {
    if !common::root_available("a full tmpfs") {
        return;
    }
    let dir = scratch("full");
    let mnt = dir.join("mnt");
    let kept = dir.join("kept");
    std::fs::create_dir_all(&mnt).unwrap();
    std::fs::create_dir_all(&kept).unwrap();
    let conf = mnt.join("tc.conf");
    // Filled, then 8 KiB freed: the file and its next version fit while
    // the file is under a page.
    let script = format!(
        "mount -t tmpfs -o size=64k sluice-tcconf {mnt} || exit 99; \
         {SLUICE} tc --config {conf} qdisc add dev v0 clsact || exit 98; \
         dd if=/dev/zero of={mnt}/filler bs=4096 2>/dev/null; \
         truncate -s -8K {mnt}/filler || exit 97; \
         i=0; while [ $i -lt 300 ]; do i=$((i+1)); \
           line=\"filter add dev v0 ingress prio $i protocol ip flower src_ip 10.0.$((i/250)).$((i%250+1)) dst_ip 192.168.0.1 action drop\"; \
           if {SLUICE} tc --config {conf} $line 2>{kept}/err; then echo \"$line\" >>{kept}/ok; \
           else echo $? >{kept}/status; break; fi; \
         done; \
         cp {conf} {kept}/full; ls -A {mnt} >{kept}/ls; rm {mnt}/filler; \
         {SLUICE} tc --config {conf} filter add dev v0 ingress prio 999 protocol ip flower src_ip 10.9.9.9 action drop || exit 96; \
         cp {conf} {kept}/freed",
        mnt = mnt.display(),
        conf = conf.display(),
        kept = kept.display(),
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}: {}", out.status, stderr(&out));
    let read = |f: &str| std::fs::read_to_string(kept.join(f)).unwrap_or_default();
    assert_eq!(read("status"), "1\n", "no add failed: {}", read("ok"));
    let err = read("err");
    assert!(
        err.contains(&conf.display().to_string()) && err.contains("No space left on device"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let ok = read("ok");
    assert!(ok.lines().count() > 10, "{ok}");
    let whole = format!("qdisc add dev v0 clsact\n{ok}");
    assert_eq!(read("full"), whole, "the file after the failed add");
    assert_eq!(read("ls"), "filler\ntc.conf\n", "files left beside it");
    assert_eq!(
        read("freed"),
        format!(
            "{whole}filter add dev v0 ingress prio 999 protocol ip flower src_ip 10.9.9.9 action drop\n"
        )
    );
    eprintln!(
        "64-KiB tmpfs: {} adds fitted, the next exited 1: {}",
        ok.lines().count(),
        err.trim()
    );
}

/// Eight `sluice tc` adds at once: every line is kept (each waits for
/// the others to write the file back).
#[test]
fn writers_at_once_lose_no_line() {
    let dir = scratch("race");
    let conf = dir.join("tc.conf");
    assert!(tc(&conf, "qdisc add dev v0 clsact").status.success());
    let children: Vec<_> = (1..=8)
        .map(|i| {
            Command::new(SLUICE)
                .arg("tc")
                .arg("--config")
                .arg(&conf)
                .args(
                    format!("filter add dev v0 ingress prio {i} protocol ip flower src_ip 10.0.0.{i} action drop")
                        .split(' '),
                )
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let text = std::fs::read_to_string(&conf).unwrap();
    assert_eq!(text.lines().count(), 9, "{text}");
    for i in 1..=8 {
        assert!(text.contains(&format!("prio {i} ")), "{text}");
    }
}
