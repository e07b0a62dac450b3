//! [`ProfileSpec`]: a profile (`sluice profile`) as data: the program, its
//! packets, a limit, a warm-up. [`ProfileSpec::run`] builds the hook, runs
//! the packets counting, and fits the cost model ([`Profiled`]);
//! [`ProfileSpec::start`] and [`Profiling::finish`] are the same in two
//! steps, for front ends that show progress.

use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::Source;
use profile::{CostModel, Profile};
use runtime::Hook;

use crate::Error;
use crate::hook_spec::HookSpec;
use crate::source::{Skipped, SourceSpec};

/// A program's profile over packets.
#[derive(Clone, Debug)]
pub struct ProfileSpec {
    pub hook: HookSpec,
    pub source: SourceSpec,
    /// Packets taken from the source at most (with a filter: packets that
    /// pass it).
    pub limit: Option<u64>,
    /// Run the packets once, uncounted, before profiling them (per-flow
    /// state then exists: the steady state). The source is read twice.
    pub warm_up: bool,
}

/// A profile started: the hook built (and warmed up), the source open.
pub struct Profiling<'a> {
    spec: &'a ProfileSpec,
    hook: Hook,
    source: Box<dyn Source>,
    warnings: Vec<String>,
}

/// A finished profile.
#[derive(Clone, Debug)]
pub struct Profiled {
    /// Every packet's cost.
    pub profile: Profile,
    /// The model fitted to them; its notes hold the warnings.
    pub model: CostModel,
    /// What a front end warns of: a program with nothing to do (an ESP
    /// program without its security association), frames cut by the
    /// capture's snapshot length.
    pub warnings: Vec<String>,
    /// Frames the capture had no Ethernet form for.
    pub skipped: Skipped,
}

impl ProfileSpec {
    /// `hook` over `source`, every packet, no warm-up.
    pub fn new(hook: HookSpec, source: SourceSpec) -> ProfileSpec {
        ProfileSpec {
            hook,
            source,
            limit: None,
            warm_up: false,
        }
    }

    /// Builds the hook, profiles, fits; `progress` counts the packets done.
    pub fn run(&self, progress: Option<&AtomicU64>) -> Result<Profiled, Error> {
        let built = self.hook.build()?;
        self.start(built.hook)?.finish(progress)
    }

    /// Warms `hook` (built from [`ProfileSpec::hook`]) up if asked, and
    /// opens the source.
    pub fn start(&self, mut hook: Hook) -> Result<Profiling<'_>, Error> {
        let program = hook.program().name.clone();
        let mut warnings = Vec::new();
        // An ESP program's SA (esp_sa entry 0) starts with its SPI: 0, no SA.
        let no_sa = hook.object().map_index("esp_sa").is_some_and(|i| {
            hook.maps()[i]
                .user_lookup(&0u32.to_le_bytes())
                .is_ok_and(|v| v.get(..4).is_some_and(|spi| spi == [0; 4]))
        });
        if no_sa {
            warnings.push(format!(
                "{program} has no security association (no --sa SPI:KEY): it passes every packet unencrypted, and the profile is of that path"
            ));
        }
        if self.warm_up {
            profile::warm_up(&mut hook, self.source.open(None)?.as_mut(), self.limit)?;
        }
        let source = self.source.open(None)?;
        Ok(Profiling {
            spec: self,
            hook,
            source,
            warnings,
        })
    }
}

impl Profiling<'_> {
    /// The packets the profile will take, when the source knows.
    pub fn expected(&self) -> Option<u64> {
        let limit = self.spec.limit;
        self.source
            .expected()
            .map(|n| limit.map_or(n, |l| l.min(n)))
    }

    /// Profiles the packets and fits the model.
    pub fn finish(mut self, progress: Option<&AtomicU64>) -> Result<Profiled, Error> {
        let program = self.hook.program().name.clone();
        let profiled = profile::profile(
            &mut self.hook,
            &program,
            self.source.as_mut(),
            self.spec.limit,
            &mut |n| {
                if let Some(p) = progress {
                    p.store(n, Ordering::Relaxed);
                }
            },
        )?;
        let snapped = self.source.snapped();
        if snapped > 0 {
            self.warnings.push(format!(
                "{snapped} of the capture's frames were cut by its snapshot length: they are profiled at their captured length, and a program that checks lengths against the headers (the RFC 1812 router) takes them for broken packets"
            ));
        }
        let mut model = CostModel::fit(&profiled);
        model.notes.extend(self.warnings.iter().cloned());
        Ok(Profiled {
            profile: profiled,
            model,
            warnings: self.warnings,
            skipped: Skipped::of(self.source.as_ref()),
        })
    }
}
