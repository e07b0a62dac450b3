//! libbpf's messages (warnings, the kernel verifier's log on a rejected
//! program) captured instead of printed, so errors can quote them.

use std::sync::Mutex;

use libbpf_rs::PrintLevel;

static CAPTURED: Mutex<String> = Mutex::new(String::new());

fn capture(_level: PrintLevel, msg: String) {
    let mut log = CAPTURED.lock().unwrap_or_else(|p| p.into_inner());
    // Bound the buffer: a verifier log can be megabytes; the end (where the
    // kernel says why) is what matters.
    if log.len() > 4 << 20 {
        let cut = log.len() - (1 << 20);
        let cut = (cut..log.len())
            .find(|&i| log.is_char_boundary(i))
            .unwrap_or(log.len());
        log.drain(..cut);
    }
    log.push_str(&msg);
}

/// Routes libbpf's messages at `Info` and above into the capture buffer
/// (once per process; later calls do nothing).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Info, capture)));
    });
}

/// Takes what libbpf said since the last call.
pub fn take() -> String {
    std::mem::take(&mut *CAPTURED.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The kernel verifier's log out of libbpf's messages: the lines between
/// libbpf's "BEGIN PROG LOAD LOG" and "END PROG LOAD LOG" markers, or
/// every line when the markers are missing.
pub fn verifier_log(messages: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in messages.lines() {
        if line.contains("-- BEGIN PROG LOAD LOG --") {
            inside = true;
            continue;
        }
        if line.contains("-- END PROG LOAD LOG --") {
            inside = false;
            continue;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    if out.is_empty() {
        messages.to_string()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_log_is_cut_out_of_libbpf_messages() {
        let m = "libbpf: prog 'p': BPF program load failed: Permission denied\n\
                 libbpf: prog 'p': -- BEGIN PROG LOAD LOG --\n\
                 0: (b7) r0 = 0\n\
                 R0 !read_ok\n\
                 -- END PROG LOAD LOG --\n\
                 libbpf: failed to load object\n";
        assert_eq!(verifier_log(m), "0: (b7) r0 = 0\nR0 !read_ok\n");
        assert_eq!(verifier_log("no markers\n"), "no markers\n");
    }
}
