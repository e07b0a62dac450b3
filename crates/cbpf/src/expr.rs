//! tcpdump's filter language, compiled by libpcap itself (`pcap_compile`,
//! through the `pcap` crate) for a link type and snap length: the very
//! program tcpdump would run, whose `ret` accepts as many bytes as the
//! snap length.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use crate::insn::Insn;

/// The snap length tcpdump compiles for when no capture gives one
/// (libpcap's `MAXIMUM_SNAPLEN`).
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// LINKTYPE_ETHERNET.
pub const ETHERNET: u32 = 1;

/// Why an expression does not compile: libpcap's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExprError(pub String);

/// Compiles `expr` as tcpdump does for packets of link type `linktype`
/// (LINKTYPE_* numbers) captured with `snaplen` (optimised, as tcpdump
/// does unless `-O`).
pub fn compile_expr(expr: &str, linktype: u32, snaplen: u32) -> Result<Vec<Insn>, ExprError> {
    // The pcap crate's dead handles fix the snap length at 65535; an empty
    // capture file with the right header is a handle with any.
    let file = tempfile(linktype, snaplen)?;
    let capture =
        pcap::Capture::from_file(&file.0).map_err(|e| ExprError(format!("libpcap: {e}")))?;
    // Open, the file is no longer needed (nor left behind by a compile
    // that never returns, see [`compile_expr_until`]).
    drop(file);
    let prog = capture
        .compile(expr, true)
        .map_err(|e| ExprError(e.to_string()))?;
    // `BpfInstruction` has no accessors; it prints as `code jt jf k`.
    let text: String = (prog.get_instructions().iter())
        .map(|i| format!(",{i}"))
        .collect();
    let n = prog.get_instructions().len();
    crate::insn::parse_decimal(&format!("{n}{text}"))
        .map_err(|e| ExprError(format!("reading libpcap's program: {e}")))
}

/// [`compile_expr`], which a stop flag (set by a signal handler) cuts
/// short: libpcap's compiler runs on a thread of its own, since its
/// optimizer takes minutes on long expressions (`tcpdump -d` itself: 87 s
/// for 900 `host` terms or'ed, 5,159 instructions), and the wait for it
/// looks at `stop` every 50 ms. `Ok(None)`: stopped; the thread is left to end
/// with the process.
pub fn compile_expr_until(
    expr: &str,
    linktype: u32,
    snaplen: u32,
    stop: Option<&'static AtomicBool>,
) -> Result<Option<Vec<Insn>>, ExprError> {
    let Some(stop) = stop else {
        return compile_expr(expr, linktype, snaplen).map(Some);
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let text = expr.to_string();
    std::thread::Builder::new()
        .name("pcap-compile".into())
        .spawn(move || {
            let _ = tx.send(compile_expr(&text, linktype, snaplen));
        })
        .map_err(|e| ExprError(format!("starting libpcap's compiler: {e}")))?;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(r) => return r.map(Some),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(ExprError(
                    "libpcap's compiler ended without a program".into(),
                ));
            }
        }
    }
}

/// A file removed when dropped.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An empty pcap file of `linktype` and `snaplen`.
fn tempfile(linktype: u32, snaplen: u32) -> Result<TempFile, ExprError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "sluice-expr-{}-{}.pcap",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let mut header = Vec::with_capacity(24);
    header.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    header.extend_from_slice(&2u16.to_le_bytes());
    header.extend_from_slice(&4u16.to_le_bytes());
    header.extend_from_slice(&[0; 8]);
    header.extend_from_slice(&snaplen.to_le_bytes());
    header.extend_from_slice(&linktype.to_le_bytes());
    let file = TempFile(path);
    std::fs::File::create(&file.0)
        .and_then(|mut f| f.write_all(&header))
        .map_err(|e| ExprError(format!("{}: {e}", file.0.display())))?;
    Ok(file)
}
