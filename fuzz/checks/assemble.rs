//! Any text: the assembler never panics, and what it accepts disassembles
//! and re-assembles to the same bytes.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(insns) = isa::assemble(text) else {
        return;
    };
    let bytes = isa::encode(&insns);
    assert_eq!(isa::decode(&bytes).expect("assembled code decodes"), insns);
    let listing = isa::listing(&insns, &isa::ListingOptions::default());
    assert_eq!(isa::assemble(&listing).expect("a listing assembles"), insns);
}
