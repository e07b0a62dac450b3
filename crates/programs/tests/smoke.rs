use runtime::*;

#[test]
fn xdp_count_counts() {
    let object = obj::Object::parse(programs::object("xdp_count").unwrap()).unwrap();
    let image = Image::load(object, &LoadOptions::default()).unwrap();
    let prog = image.find_program(None).unwrap();
    let mut hook = Hook::new(image, prog, 0).unwrap();
    let pkt = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53)
        .payload(b"hello")
        .build();
    let out = hook.run(&pkt, &PacketMeta::default()).unwrap();
    assert_eq!(out.verdict, Verdict::Xdp(XdpAction::Pass));
    let v = hook.maps()[0].user_lookup(&17u32.to_le_bytes()).unwrap();
    assert_eq!(&v[..8], &1u64.to_le_bytes());
    assert_eq!(&v[8..16], &(pkt.len() as u64).to_le_bytes());
}
