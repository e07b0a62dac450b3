//! `filter_capture` with an engine: the packets an engine refuses are
//! decided by the interpreter, counted by reason, and the output is what
//! the interpreter alone writes; an engine that cannot run a program, or
//! fails on a packet, stops the filter with its reason.

use std::path::{Path, PathBuf};

use cbpf::{
    Decider, Decision, EngineError, FilterEngine, FilterOptions, Insn, Interp, Meta, filter_capture,
};

fn capture() -> PathBuf {
    testkit::capture("of10_s4810.pcap")
}

/// The interpreter, refusing every other packet.
struct Picky(u64);

impl FilterEngine for Picky {
    fn name(&self) -> &'static str {
        "picky"
    }

    fn decider(&mut self, linktype: u32, prog: &[Insn]) -> Result<Decider, EngineError> {
        let mut inner = Interp.decider(linktype, prog)?;
        let mut n = self.0;
        Ok(Box::new(move |data: &[u8], meta: &Meta| {
            n += 1;
            if n.is_multiple_of(2) {
                return Ok(Decision::Refused("every other packet"));
            }
            inner(data, meta)
        }))
    }
}

struct Failing(&'static str);

impl FilterEngine for Failing {
    fn name(&self) -> &'static str {
        "failing"
    }

    fn decider(&mut self, _linktype: u32, _prog: &[Insn]) -> Result<Decider, EngineError> {
        match self.0 {
            "program" => Err(EngineError::Engine("no such machine".into())),
            _ => Ok(Box::new(|_: &[u8], _: &Meta| {
                Err(EngineError::Engine("the machine broke".into()))
            })),
        }
    }
}

fn write(engine: &mut dyn FilterEngine, out: &Path) -> cbpf::FilterSummary {
    let opts = FilterOptions {
        write: Some(out),
        count: None,
        stop: None,
    };
    filter_capture(&capture(), "udp or len > 100", engine, &opts).unwrap()
}

#[test]
fn refused_packets_are_decided_by_the_interpreter_and_counted() {
    let dir = std::env::temp_dir().join(format!("cbpf-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("interp.pcap"), dir.join("picky.pcap"));
    let want = write(&mut Interp, &a);
    let got = write(&mut Picky(0), &b);
    assert_eq!(want.engine, "interp");
    assert_eq!(got.engine, "picky");
    assert!(want.interpreted.is_empty());
    assert_eq!(got.read, 137);
    assert_eq!(got.interpreted, vec![("every other packet", 68)]);
    assert_eq!(got.interpreted_total(), 68);
    assert_eq!(got.matched, want.matched);
    assert!(want.matched > 0);
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_engine_that_fails_stops_the_filter_with_its_reason() {
    let opts = FilterOptions::default();
    let e = filter_capture(&capture(), "udp", &mut Failing("program"), &opts)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "`udp` for link type 1: the failing engine cannot run it: no such machine"
    );
    let e = filter_capture(&capture(), "udp", &mut Failing("packet"), &opts)
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("of10_s4810.pcap: packet 1: the failing engine failed: the machine broke"),
        "{e}"
    );
}
