//! Any bytes: decoding never panics, and what decodes re-encodes to the same
//! bytes and survives a trip through the text form.
pub fn check(data: &[u8]) {
    let Ok(insns) = isa::decode(data) else { return };
    assert_eq!(isa::encode(&insns), data);
    let text = isa::listing(
        &insns,
        &isa::ListingOptions {
            labels: true,
            annotate: true,
        },
    );
    let back = isa::assemble(&text).expect("a listing assembles");
    assert_eq!(isa::encode(&back), data);
}
