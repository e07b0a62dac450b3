//! What the verifier's facts let a trusted hook skip (`vm::trusted`): the
//! stack below the programs' depth is not zeroed per run, and array map
//! lookups whose map the call site fixes are done inline by native code.

use vm::ArrayLookup;

use super::Hook;

impl Hook {
    /// The deepest stack use, in bytes, of every program this hook may run
    /// from its entry frame ([`Hook::runnable`]), as the verifier reports
    /// it (`verifier::Report::stack_depth`): trusted runs zero only that
    /// much of the stack. Too small a value cannot break memory safety
    /// (the frame is the VM's own), only make runs depend on earlier ones.
    pub fn set_stack_depth(&mut self, bytes: usize) {
        self.vm.set_stack_depth(bytes);
    }

    /// Tells the VM which lookups of each of its programs are on array maps
    /// and where this hook's CPU finds their values.
    pub(super) fn inline_array_lookups(&mut self) {
        for program in 0..self.vm.programs().len() {
            let sites = self
                .vm
                .constant_map_lookups(program)
                .into_iter()
                .filter_map(|(pc, handle)| {
                    let map = &self.env.maps[self.env.map_of(handle)?];
                    let (base, stride, max_entries) = map.array_layout(self.env.cpu())?;
                    Some((
                        pc,
                        ArrayLookup {
                            base,
                            stride,
                            max_entries,
                        },
                    ))
                })
                .collect();
            // SAFETY: `constant_map_lookups` proved r1 holds the handle at
            // each site, which names an array map of this hook; its values
            // live in the map's arena, which never moves or shrinks while
            // the map (shared by `env`, so for this hook's life) lives, at
            // the layout `array_layout` gave for this hook's CPU.
            unsafe { self.vm.inline_array_lookups(program, sites) };
        }
    }
}
