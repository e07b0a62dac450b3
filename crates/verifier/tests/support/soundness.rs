//! The soundness property, shared by the test and the fuzz target: a
//! program the verifier accepts runs over random packets and map contents
//! in the checked interpreter without tripping a run-time check.

use maps::{MapSpec, MapType};
use obj::{MapDef, MapOrigin, Object, Program, ProgramKind, XdpAttach};
use runtime::{Hook, Image, LoadOptions, PacketMeta};
use verifier::randprog::{ARRAY_VALUE, HASH_VALUE, Rng};
use verifier::{MapView, VerifyOptions};

fn map(name: &str, t: MapType, value: u32, entries: u32) -> MapDef {
    MapDef {
        spec: MapSpec::new(name, t, 4, value, entries),
        origin: MapOrigin::Btf,
        pin_by_name: false,
        inner: None,
        initial: vec![],
        data: None,
        key_type: None,
        value_type: None,
    }
}

/// The maps generated programs use, and how the verifier is run.
pub struct Setup {
    maps: Vec<MapDef>,
    infos: Vec<MapView>,
    opts: VerifyOptions,
}

impl Setup {
    pub fn new() -> Setup {
        let maps = vec![
            map("array", MapType::Array, ARRAY_VALUE, 4),
            map("hash", MapType::Hash, HASH_VALUE, 8),
        ];
        let infos = MapView::of_maps(&maps, &|_| None);
        let kind = ProgramKind::Xdp {
            attach: XdpAttach::Device,
            frags: false,
        };
        let opts = VerifyOptions {
            helpers: runtime::helpers::ids_for(&kind),
            // Random callbacks with a precise counter never converge (as in
            // the kernel): give up on them early, it says nothing about
            // soundness.
            insn_limit: 20_000,
            ..VerifyOptions::default()
        };
        Setup { maps, infos, opts }
    }

    /// The maps generated programs use.
    #[allow(dead_code)]
    pub fn maps(&self) -> &[MapDef] {
        &self.maps
    }

    /// An XDP program of `insns`, as generated programs are loaded.
    pub fn program(insns: Vec<isa::Insn>) -> Program {
        Program {
            name: "random".into(),
            section: "xdp".into(),
            kind: ProgramKind::Xdp {
                attach: XdpAttach::Device,
                frags: false,
            },
            insns,
            functions: vec![("random".into(), 0)],
            lines: vec![],
            kfuncs: vec![],
            core_relocations: 0,
            core_poisoned: vec![],
            type_given: false,
            attach_type: None,
        }
    }

    /// Whether sluice's verifier accepts `program`.
    pub fn accepts(&self, program: &Program) -> bool {
        self.rejection(program).is_none()
    }

    /// Why sluice's verifier rejects `program`, if it does.
    pub fn rejection(&self, program: &Program) -> Option<String> {
        let report = verifier::verify(program, &self.infos, &self.opts);
        report
            .result
            .err()
            .map(|e| format!("{} ({})", e.kernel, e.reason))
    }

    #[allow(dead_code)]
    /// Verifies `insns`; if accepted, runs them over packets drawn from
    /// `seed`. `Err` describes a soundness failure; `Ok(accepted)` else.
    pub fn check(&self, insns: Vec<isa::Insn>, seed: u64) -> Result<bool, String> {
        let program = Setup::program(insns);
        if !self.accepts(&program) {
            return Ok(false);
        }
        let object = Object {
            license: "GPL".into(),
            kernel_version: None,
            maps: self.maps.clone(),
            programs: vec![program],
            btf: None,
            core_target: None,
        };
        let image = Image::load(object, &LoadOptions::default()).map_err(|e| e.to_string())?;
        let mut hook = Hook::new(image, 0, 0).map_err(|e| e.to_string())?;
        hook.set_budget(1 << 20);
        let r = &mut Rng::new(seed ^ 0x5eed);
        for i in 0..4u32 {
            let v: Vec<u8> = (0..ARRAY_VALUE).map(|_| r.next_u64() as u8).collect();
            hook.maps()[0]
                .user_update(&i.to_le_bytes(), &v, maps::update::ANY)
                .unwrap();
        }
        for _ in 0..r.below(6) {
            let k = (r.below(8) as u32).to_le_bytes();
            let v: Vec<u8> = (0..HASH_VALUE).map(|_| r.next_u64() as u8).collect();
            hook.maps()[1]
                .user_update(&k, &v, maps::update::ANY)
                .unwrap();
        }
        for _ in 0..4 {
            let len = 14 + r.below(90) as usize;
            let packet: Vec<u8> = (0..len).map(|_| r.next_u64() as u8).collect();
            if let Err(e) = hook.run(&packet, &PacketMeta::default()) {
                return Err(format!(
                    "accepted, but a {len}-byte packet trips a run-time check: {e}"
                ));
            }
        }
        Ok(true)
    }
}
