//! Argument values shared by the commands that run programs: the engine
//! and what a capture's frames without an Ethernet form become; each
//! gives the engine crate's own type.

/// Which engine runs the programs.
#[derive(clap::ValueEnum, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum Engine {
    #[default]
    Jit,
    Interp,
}

impl From<Engine> for engine::VmEngine {
    fn from(e: Engine) -> engine::VmEngine {
        match e {
            Engine::Jit => engine::VmEngine::Jit,
            Engine::Interp => engine::VmEngine::Interpreter,
        }
    }
}

/// What a capture's frames without an Ethernet form become.
#[derive(clap::ValueEnum, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum ForeignFrames {
    #[default]
    Skip,
    Pass,
}

impl From<ForeignFrames> for engine::Foreign {
    fn from(f: ForeignFrames) -> engine::Foreign {
        match f {
            ForeignFrames::Skip => engine::Foreign::Skip,
            ForeignFrames::Pass => engine::Foreign::Pass,
        }
    }
}
