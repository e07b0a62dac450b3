//! Hooks built by the engine for the commands that run programs, with
//! what building them noted told on standard error (`sluice: note: ...`)
//! as it comes.

use engine::{Built, HookSpec};

/// Loads the hook `spec` describes, unverified; its notes told.
pub(crate) fn load(spec: &HookSpec) -> Result<Built, String> {
    let mut built = spec
        .load_with(Some(crate::signals::flag()))
        .map_err(|e| e.to_string())?;
    tell(&mut built);
    Ok(built)
}

/// Verifies a hook [`load`] gave; a note says why run-time checks stay,
/// when they do.
pub(crate) fn verify(built: &mut Built) -> Result<(), String> {
    built.verify().map_err(|e| e.to_string())?;
    tell(built);
    Ok(())
}

/// The hook `spec` describes, verified when it says so.
pub(crate) fn build(spec: &HookSpec) -> Result<Built, String> {
    let mut built = load(spec)?;
    if spec.verify {
        verify(&mut built)?;
    }
    Ok(built)
}

fn tell(built: &mut Built) {
    for note in built.notes.drain(..) {
        say!("sluice: note: {note}");
    }
}

/// The simulated CPUs of a hook `sluice run` would build by default: one
/// per core (a worker thread per core, each its per-CPU slot).
pub(crate) fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as u32
}
