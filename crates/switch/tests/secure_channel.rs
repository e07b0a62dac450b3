//! Who may program the switch: Open vSwitch's own client,
//! `ovs-ofctl -O OpenFlow13`, over `punix:` (a socket file only its owner
//! may connect to: another user is refused) and over `pssl:` (mutual TLS:
//! a client whose certificate the CA did not sign is refused); the
//! switch's active `ssl:` and `unix:` connections to a controller.
//! Certificates are made by the test (rcgen).

#[path = "../../openflow/tests/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use testkit::Scratch;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};
use switch::{Channel, ChannelEvent, ChannelOptions, Core, Endpoint, TlsFiles, Transmit};

struct Nowhere;

impl Transmit for Nowhere {
    fn transmit(&mut self, _port: u32, _frame: &[u8]) -> bool {
        false
    }
}

/// A switch served by a thread; its channel events kept.
struct Running {
    events: Arc<Mutex<Vec<ChannelEvent>>>,
    listening: Vec<Endpoint>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start(endpoints: &[Endpoint], tls: Option<TlsFiles>) -> Running {
    let core = Arc::new(Core::new(0x5a));
    let options = ChannelOptions {
        tls,
        log: true,
        ..ChannelOptions::default()
    };
    let mut ch = Channel::open_with(endpoints, &options).unwrap();
    let listening = ch.listening();
    let stop = Arc::new(AtomicBool::new(false));
    let events = Arc::new(Mutex::new(Vec::new()));
    let (s, ev) = (stop.clone(), events.clone());
    let thread = std::thread::spawn(move || {
        while !s.load(Ordering::Relaxed) {
            let busy = ch.poll(&core, &mut Nowhere);
            ev.lock().unwrap().extend(ch.take_events());
            if !busy {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    Running {
        events,
        listening,
        stop,
        thread: Some(thread),
    }
}

/// `[prefix...] ovs-ofctl [options] -O OpenFlow13 CMD TARGET ARGS`:
/// (success, stdout, stderr).
fn ofctl(
    prefix: &[&str],
    options: &[&str],
    cmd: &str,
    target: &str,
    args: &[&str],
) -> (bool, String, String) {
    let mut c = Command::new(prefix.first().copied().unwrap_or("ovs-ofctl"));
    if !prefix.is_empty() {
        c.args(&prefix[1..]).arg("ovs-ofctl");
    }
    c.args(options)
        .args(["-O", "OpenFlow13", cmd, target])
        .args(args);
    let out = testkit::tool::run_with_timeout(&mut c, Duration::from_secs(20));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn flow_lines(dump: &str) -> Vec<&str> {
    dump.lines().filter(|l| l.contains("actions=")).collect()
}

#[test]
fn punix_lets_ovs_ofctl_in_and_other_users_not() {
    if !common::have_ovs_ofctl("the punix channel test") {
        return;
    }
    let dir = Scratch::new("punix");
    // The directory is open to all: the socket's own mode must refuse.
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = dir.join("br0.mgmt");
    let r = start(&[Endpoint::ListenUnix(path.clone())], None);
    let target = format!("unix:{}", path.display());
    let (ok, _, err) = ofctl(
        &[],
        &[],
        "add-flow",
        &target,
        &["priority=7,tcp,actions=output:2"],
    );
    assert!(ok, "add-flow over punix: {err}");
    let (ok, dump, err) = ofctl(&[], &[], "dump-flows", &target, &[]);
    assert!(ok, "dump-flows over punix: {err}");
    assert_eq!(flow_lines(&dump).len(), 1, "{dump}");
    assert!(dump.contains("priority=7,tcp actions=output:2"), "{dump}");

    if testkit::root_available("the punix test's other user (setpriv to uid 65534)")
        && testkit::tools_for_test("the punix test's other user", &["setpriv"], &["util-linux"])
    {
        let nobody = [
            "setpriv",
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
        ];
        let (ok, _, err) = ofctl(
            &nobody,
            &[],
            "add-flow",
            &target,
            &["priority=65535,actions=drop"],
        );
        assert!(!ok, "uid 65534 reprogrammed the switch over punix");
        assert!(err.contains("Permission denied"), "{err}");
        let (_, dump, _) = ofctl(&[], &[], "dump-flows", &target, &[]);
        assert_eq!(flow_lines(&dump).len(), 1, "{dump}");
    }
    drop(r);
    assert!(
        !path.exists(),
        "the socket file is removed when the channel closes"
    );
}

/// A CA, and certificates it signs, written as PEM files.
struct Pki {
    dir: Scratch,
}

impl Pki {
    fn new(tag: &str) -> Pki {
        Pki {
            dir: Scratch::new(tag),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A CA `name`: `name-cacert.pem` and its issuer.
    fn ca(&self, name: &str) -> CertifiedIssuer<'static, KeyPair> {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(DnType::CommonName, format!("{name} CA"));
        let ca = CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(self.path(&format!("{name}-cacert.pem")), ca.pem()).unwrap();
        ca
    }

    /// `name-privkey.pem` and `name-cert.pem`, signed by `ca`.
    fn sign(&self, name: &str, ca: &CertifiedIssuer<'static, KeyPair>) -> TlsFiles {
        let mut p = CertificateParams::new(vec![name.to_string()]).unwrap();
        p.distinguished_name.push(DnType::CommonName, name);
        p.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = p.signed_by(&key, ca).unwrap();
        let files = TlsFiles {
            private_key: self.path(&format!("{name}-privkey.pem")),
            certificate: self.path(&format!("{name}-cert.pem")),
            ca_cert: PathBuf::new(),
        };
        std::fs::write(&files.private_key, key.serialize_pem()).unwrap();
        std::fs::write(&files.certificate, cert.pem()).unwrap();
        files
    }
}

fn ssl_options(f: &TlsFiles, ca: &Path) -> Vec<String> {
    vec![
        format!("--private-key={}", f.private_key.display()),
        format!("--certificate={}", f.certificate.display()),
        format!("--ca-cert={}", ca.display()),
    ]
}

#[test]
fn pssl_takes_ovs_ofctl_with_a_certificate_the_ca_signed_and_no_other() {
    if !common::have_ovs_ofctl("the pssl channel test") {
        return;
    }
    let pki = Pki::new("pssl");
    let ca = pki.ca("switch");
    let switch_files = TlsFiles {
        ca_cert: pki.path("switch-cacert.pem"),
        ..pki.sign("sc", &ca)
    };
    let good = pki.sign("controller", &ca);
    let rogue_ca = pki.ca("rogue");
    let rogue = pki.sign("intruder", &rogue_ca);
    let r = start(&["pssl:0".parse().unwrap()], Some(switch_files.clone()));
    let Endpoint::ListenTls(addr) = r.listening[0] else {
        panic!("{:?}", r.listening)
    };
    let target = format!("ssl:{addr}");
    let ca_pem = pki.path("switch-cacert.pem");
    let opts = ssl_options(&good, &ca_pem);
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let (ok, _, err) = ofctl(
        &[],
        &opts,
        "add-flow",
        &target,
        &["priority=9,udp,actions=output:1"],
    );
    assert!(ok, "add-flow over pssl: {err}");
    let (ok, dump, err) = ofctl(&[], &opts, "dump-flows", &target, &[]);
    assert!(ok, "dump-flows over pssl: {err}");
    assert!(dump.contains("priority=9,udp actions=output:1"), "{dump}");

    // Signed by another CA (which the client itself trusts): refused.
    let bad = ssl_options(&rogue, &ca_pem);
    let bad: Vec<&str> = bad.iter().map(String::as_str).collect();
    let (ok, _, _) = ofctl(
        &[],
        &bad,
        "add-flow",
        &target,
        &["priority=65535,actions=drop"],
    );
    assert!(
        !ok,
        "a client whose certificate the CA did not sign programmed the switch"
    );
    let (_, dump, _) = ofctl(&[], &opts, "dump-flows", &target, &[]);
    assert_eq!(flow_lines(&dump).len(), 1, "{dump}");
    let refused = |r: &Running| {
        r.events.lock().unwrap().iter().any(|e| {
            matches!(e, ChannelEvent::Disconnected(_, why) if why.contains("TLS") && why.contains("certificate"))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !refused(&r) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let events = r.events.lock().unwrap().clone();
    assert!(refused(&r), "no TLS refusal logged: {events:?}");

    // Plain TCP to the TLS port gets nothing done either.
    let (ok, _, _) = ofctl(&[], &[], "dump-flows", &format!("tcp:{addr}"), &[]);
    assert!(!ok, "plain TCP was served on the pssl port");
}

#[test]
fn tls_endpoints_need_their_files() {
    let e = Channel::open(&["pssl:0".parse().unwrap()]).err().unwrap();
    assert!(e.to_string().contains("needs --private-key"), "{e}");
    let pki = Pki::new("tlsfiles");
    let ca = pki.ca("c");
    let mut f = pki.sign("s", &ca);
    f.ca_cert = pki.path("missing.pem");
    let e = Channel::open_with(
        &["pssl:0".parse().unwrap()],
        &ChannelOptions {
            tls: Some(f.clone()),
            ..ChannelOptions::default()
        },
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("missing.pem"), "{e}");
    // A key file with no key in it.
    f.ca_cert = pki.path("c-cacert.pem");
    f.private_key = f.certificate.clone();
    let e = Channel::open_with(
        &["pssl:0".parse().unwrap()],
        &ChannelOptions {
            tls: Some(f),
            ..ChannelOptions::default()
        },
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("no private key"), "{e}");
}

/// The next whole OpenFlow message on `s`.
fn read_msg(s: &mut impl Read) -> Vec<u8> {
    let mut m = vec![0u8; 8];
    s.read_exact(&mut m).unwrap();
    let len = u16::from_be_bytes([m[2], m[3]]) as usize;
    m.resize(len.max(8), 0);
    s.read_exact(&mut m[8..]).unwrap();
    m
}

/// What `f` gives within 20 s (a test never hangs on a switch that does
/// not call).
fn within_20s<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(Instant::now() < deadline, "no {what} in 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The switch dials out: `ssl:` to a TLS controller that demands a
/// certificate from the CA (a rustls server in the test), and `unix:`;
/// either way its first words are OpenFlow 1.3's HELLO.
#[test]
fn ssl_and_unix_reach_a_controller() {
    let pki = Pki::new("ssl");
    let ca = pki.ca("net");
    let switch_files = TlsFiles {
        ca_cert: pki.path("net-cacert.pem"),
        ..pki.sign("sw", &ca)
    };
    let ctl = pki.sign("ctl", &ca);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sock = pki.path("controller.sock");
    let unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let _r = start(
        &[
            format!("ssl:{addr}").parse().unwrap(),
            format!("unix:{}", sock.display()).parse().unwrap(),
        ],
        Some(switch_files),
    );

    unix.set_nonblocking(true).unwrap();
    let mut u = within_20s("the switch's unix: connection", || unix.accept().ok()).0;
    u.set_nonblocking(false).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(read_msg(&mut u)[..2], [4, 0], "HELLO over unix:");

    use rustls::pki_types::pem::PemObject;
    let certs: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(&ctl.certificate)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(&ctl.private_key).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    listener.set_nonblocking(true).unwrap();
    let tcp = within_20s("the switch's ssl: connection", || listener.accept().ok()).0;
    tcp.set_nonblocking(false).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let conn = rustls::ServerConnection::new(Arc::new(config)).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    assert_eq!(read_msg(&mut tls)[..2], [4, 0], "HELLO over ssl:");
    assert!(
        tls.conn.peer_certificates().is_some_and(|c| !c.is_empty()),
        "the switch showed its certificate"
    );
    // Our HELLO back, then an echo: the switch answers through TLS.
    tls.write_all(&[4, 0, 0, 8, 0, 0, 0, 1]).unwrap();
    tls.write_all(&[4, 2, 0, 12, 0, 0, 0, 9, b'p', b'i', b'n', b'g'])
        .unwrap();
    let reply = loop {
        let m = read_msg(&mut tls);
        if m[1] == 3 {
            break m;
        }
    };
    assert_eq!(reply, [4, 3, 0, 12, 0, 0, 0, 9, b'p', b'i', b'n', b'g']);
    assert!(Instant::now() < deadline);
}
