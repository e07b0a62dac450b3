//! One tshark run per capture, shared by the tests that compare with
//! tshark (`tshark.rs`: flows, `rtt_tshark.rs`: handshake RTTs). Starting
//! tshark takes about 0.25 s of CPU and there are 406 captures: each test
//! running it for itself cost a minute of the suite. The output holds
//! every field either test reads ([`FIELDS`]), IP defragmentation off (as
//! the flow comparison needs: sluice sees each fragment), and is kept
//! under the target's tmp folder by capture (name, length, modification
//! time) and tshark version, so the second test reads the first one's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The fields asked for, in the order of a line's columns.
pub const FIELDS: &[&str] = &[
    "frame.number",
    "_ws.malformed",
    "frame.protocols",
    "frame.time_epoch",
    "ip.src",
    "ip.dst",
    "ip.proto",
    "ip.len",
    "ipv6.src",
    "ipv6.dst",
    "ipv6.plen",
    "tcp.srcport",
    "tcp.dstport",
    "tcp.flags",
    "tcp.stream",
    "tcp.analysis.initial_rtt",
    "udp.srcport",
    "udp.dstport",
    "sctp.srcport",
    "sctp.dstport",
    "icmp.type",
    "icmp.code",
    "icmpv6.type",
    "icmpv6.code",
];

/// tshark's first line of `--version`: part of the cache's key.
fn version() -> &'static str {
    static V: OnceLock<String> = OnceLock::new();
    V.get_or_init(|| {
        let out = testkit::tool::output(Command::new("tshark").arg("--version"));
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines().next().unwrap_or("").to_string()
    })
}

/// Where the output for `path` is kept.
fn cached(path: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let meta = std::fs::metadata(path).expect("the capture exists");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (path, meta.len(), meta.modified().ok(), version(), FIELDS).hash(&mut h);
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("tshark-fields")
        .join(format!("{name}-{:016x}.tsv", h.finish()))
}

/// tshark's lines for the capture at `path`: tab-separated columns in
/// [`FIELDS`]' order (the first occurrence of each).
pub fn lines(path: &Path) -> String {
    let keep = cached(path);
    if let Ok(text) = std::fs::read_to_string(&keep) {
        return text;
    }
    let mut c = Command::new("tshark");
    c.args(["-n", "-r"]).arg(path).args([
        "-o",
        "ip.defragment:FALSE",
        "-o",
        "ipv6.defragment:FALSE",
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=f",
    ]);
    for f in FIELDS {
        c.args(["-e", f]);
    }
    // tshark exits non-zero on captures it finds cut or corrupt, after
    // printing the frames before: those lines are what is compared.
    let out = testkit::tool::output(&mut c);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // Written whole under a name of its own, then renamed: a reader never
    // sees half a file.
    let dir = keep.parent().expect("a folder");
    std::fs::create_dir_all(dir).expect("the cache folder");
    let tmp = dir.join(format!(
        ".{}.{}.{:?}",
        keep.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id(),
        std::thread::current().id()
    ));
    if std::fs::write(&tmp, &text).is_ok() {
        let _ = std::fs::rename(&tmp, &keep);
    }
    text
}

/// Field `name` of a line's columns, if it has a value.
pub fn field<'a>(f: &[&'a str], name: &str) -> Option<&'a str> {
    let i = FIELDS
        .iter()
        .position(|x| *x == name)
        .expect("a field asked for");
    f.get(i).copied().filter(|s| !s.is_empty())
}
