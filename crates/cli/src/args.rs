//! Argument values shared by the commands that run programs: the engine,
//! what a capture's frames without an Ethernet form become, and the clsact
//! hook a tc configuration's packets arrive at; each gives the library's
//! own type.

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

/// Which clsact hook packets arrive at.
#[derive(clap::ValueEnum, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum TcHook {
    #[default]
    Ingress,
    Egress,
}

impl From<TcHook> for tc::ClsactHook {
    fn from(h: TcHook) -> tc::ClsactHook {
        match h {
            TcHook::Ingress => tc::ClsactHook::Ingress,
            TcHook::Egress => tc::ClsactHook::Egress,
        }
    }
}
