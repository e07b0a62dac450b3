//! Any bytes as an ELF object: reading its sections and loading it (maps,
//! BTF, relocations, linking) never panic.
pub fn check(data: &[u8]) {
    if let Ok(object) = obj::Object::parse(data) {
        for p in &object.programs {
            let _ = isa::encode(&p.insns);
        }
    }
    if let Ok(object) = obj::ElfObject::parse(data) {
        for p in object.programs() {
            let _ = isa::decode(&p.bytes);
        }
    }
}
