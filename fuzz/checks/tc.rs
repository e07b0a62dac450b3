//! Any text as a `tc -batch` file (`qdisc ...`, `filter ...`, `actions
//! ...` lines), run line by line against one configuration, as `sluice tc`
//! keeps it: no line panics; a line that fails changes nothing (what `tc
//! -s filter show` and `tc actions list` print, and how packets classify,
//! stay as they were); and a few frames classify through every device's
//! hooks without panicking. Lines naming files (`bpf obj FILE`) are left
//! out: objects have their own target (`elf`), and reading a file the
//! input names would make the run depend on the machine.

use tc::{ClsactHook, Config, ShowOptions, Skb};

const SHOW: ShowOptions = ShowOptions {
    stats: true,
    json: false,
};

/// Everything the configuration shows, to tell whether a failed line
/// changed it.
fn state(c: &mut Config, devs: &[String]) -> String {
    let mut out = String::new();
    for d in devs {
        for hook in ["ingress", "egress"] {
            let w = ["filter", "show", "dev", d.as_str(), hook];
            out += &c.run(&w, SHOW).unwrap_or_else(|e| e.to_string());
        }
    }
    for kind in tc::KINDS {
        out += &c
            .run(&["actions", "list", "action", kind], SHOW)
            .unwrap_or_else(|e| e.to_string());
    }
    out += &c.run(&["qdisc", "show"], SHOW).unwrap_or_default();
    out
}

fn frames() -> Vec<Vec<u8>> {
    vec![
        packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53).build(),
        packet::Builder::tcp("192.168.1.1", "10.1.2.3", 40000, 80)
            .payload(b"GET /")
            .build(),
        packet::Builder::udp("2001:db8::1", "2001:db8::2", 5, 6).build(),
        vec![0xff; 20],
    ]
}

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.contains("obj") || text.contains("object") || text.lines().count() > 64 {
        return;
    }
    let mut c = Config::default();
    let mut devs: Vec<String> = Vec::new();
    for line in text.lines() {
        let w = tc::words(line);
        let w: Vec<&str> = w.iter().map(String::as_str).collect();
        if let Some(i) = w.iter().position(|&x| x == "dev") {
            if let Some(d) = w.get(i + 1) {
                if !devs.iter().any(|x| x == d) && devs.len() < 4 {
                    devs.push(d.to_string());
                }
            }
        }
        let before = state(&mut c, &devs);
        // One line as a batch of one: comments go as in a file.
        if c.run_batch(line, ShowOptions::default()).is_err() {
            assert_eq!(
                state(&mut c, &devs),
                before,
                "the failed line {line:?} changed the configuration"
            );
        }
    }
    // The same text as one batch gives the same configuration as line by line
    // unless a line failed (a batch stops there) or continues (`\\`).
    let mut b = Config::default();
    if !text.contains('\\') && b.run_batch(text, ShowOptions::default()).is_ok() {
        assert_eq!(
            state(&mut b, &devs),
            state(&mut c, &devs),
            "batch and lines differ"
        );
    }
    for d in &devs {
        for f in frames() {
            for hook in [ClsactHook::Ingress, ClsactHook::Egress] {
                let mut skb = Skb::from_frame(&f, 1);
                let _ = c.classify(d, hook, &mut skb);
            }
        }
    }
}
