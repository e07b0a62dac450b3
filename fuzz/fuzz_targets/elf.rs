//! Any bytes as an ELF object: parsing never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(object) = obj::ElfObject::parse(data) {
        for p in object.programs() {
            let _ = isa::decode(&p.bytes);
        }
    }
});
