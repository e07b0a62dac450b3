//! Any text as `ovs-ofctl` flows and groups (`add-flow`, `del-flows`,
//! `add-group` arguments, `add-flows FILE` files): parsing never panics;
//! what parses prints (`dump-flows` style) and parses back to the same
//! flow-mod or group-mod; a parsed flow-mod's match meets its
//! prerequisites and goes onto the wire and back unchanged.

use openflow::*;

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for command in [
        FlowModCommand::Add,
        FlowModCommand::ModifyStrict,
        FlowModCommand::Delete,
    ] {
        if let Ok(fm) = parse_flow(text, command) {
            let again = format_flow(&fm);
            let back = parse_flow(&again, command)
                .unwrap_or_else(|e| panic!("{text:?} printed as {again:?}: {e}"));
            assert_eq!(back, fm, "{text:?} printed as {again:?}");
            let m = Message::FlowMod(fm);
            let (_, decoded) = Message::decode(&m.encode(1))
                .unwrap_or_else(|e| panic!("{text:?}: the flow-mod does not decode: {e}"));
            assert_eq!(decoded, m, "{text:?}");
        }
    }
    if let Ok(g) = parse_group(text, GroupModCommand::Add) {
        let again = format_group(&g);
        let back = parse_group(&again, GroupModCommand::Add)
            .unwrap_or_else(|e| panic!("{text:?} printed as {again:?}: {e}"));
        assert_eq!(back, g, "{text:?} printed as {again:?}");
    }
    if let Ok(fms) = parse_flows_file(text) {
        for fm in fms {
            let _ = format_flow(&fm);
        }
    }
}
