//! LINKTYPE numbers and their names: the names reports give them
//! ([`linktype_name`], [`describe_linktype`]) and the names tcpdump's `-y`
//! takes (libpcap's `DLT_` names: [`linktype_from_name`]).

/// A link type name no table here has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown link type `{0}` (a number, or EN10MB, RAW, LINUX_SLL, LINUX_SLL2, NULL, IEEE802_11, IEEE802_11_RADIO)"
)]
pub struct UnknownLinkType(pub String);

/// The LINKTYPE number of `name`: a number, or one of libpcap's `DLT_`
/// names (without the prefix) that tcpdump's `-y` takes.
pub fn linktype_from_name(name: &str) -> Result<u32, UnknownLinkType> {
    Ok(match name {
        "EN10MB" => 1,
        "NULL" => 0,
        "RAW" => 101,
        "LINUX_SLL" => 113,
        "LINUX_SLL2" => 276,
        "IEEE802_11" => 105,
        "IEEE802_11_RADIO" => 127,
        n => n.parse().map_err(|_| UnknownLinkType(n.to_string()))?,
    })
}

/// The name of a LINKTYPE_* number (without the prefix), for reports.
pub fn linktype_name(linktype: u32) -> Option<&'static str> {
    Some(match linktype {
        0 => "NULL",
        1 => "ETHERNET",
        6 => "IEEE802_5",
        7 => "ARCNET_BSD",
        8 => "SLIP",
        9 => "PPP",
        10 => "FDDI",
        50 => "PPP_HDLC",
        51 => "PPP_ETHER",
        101 => "RAW",
        104 => "C_HDLC",
        105 => "IEEE802_11",
        107 => "FRELAY",
        108 => "LOOP",
        113 => "LINUX_SLL",
        117 => "PFLOG",
        119 => "IEEE802_11_PRISM",
        127 => "IEEE802_11_RADIOTAP",
        129 => "ARCNET_LINUX",
        130 => "JUNIPER_MLPPP",
        131 => "JUNIPER_MLFR",
        132 => "JUNIPER_ES",
        133 => "JUNIPER_GGSN",
        134 => "JUNIPER_MFR",
        135 => "JUNIPER_ATM2",
        136 => "JUNIPER_SERVICES",
        137 => "JUNIPER_ATM1",
        164 => "JUNIPER_MONITOR",
        167 => "JUNIPER_PPPOE",
        168 => "JUNIPER_PPPOE_ATM",
        178 => "JUNIPER_ETHER",
        179 => "JUNIPER_PPP",
        180 => "JUNIPER_FRELAY",
        181 => "JUNIPER_CHDLC",
        183 => "JUNIPER_VP",
        194 => "JUNIPER_ISM",
        200 => "JUNIPER_ST",
        217 => "JUNIPER_VS",
        218 => "JUNIPER_SRX_E2E",
        219 => "JUNIPER_FIBRECHANNEL",
        163 => "IEEE802_11_AVS",
        187 => "BLUETOOTH_HCI_H4",
        189 => "USB_LINUX",
        192 => "PPI",
        195 => "IEEE802_15_4_WITHFCS",
        220 => "USB_LINUX_MMAPPED",
        227 => "CAN_SOCKETCAN",
        226 => "IPNET",
        228 => "IPV4",
        229 => "IPV6",
        239 => "NFLOG",
        238 => "JUNIPER_ATM_CEMIC",
        253 => "NETLINK",
        276 => "LINUX_SLL2",
        _ => return None,
    })
}

/// `NAME (N)`, or `LINKTYPE N` for numbers without a name here.
pub fn describe_linktype(linktype: u32) -> String {
    match linktype_name(linktype) {
        Some(name) => format!("{name} ({linktype})"),
        None => format!("LINKTYPE {linktype}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert_eq!(linktype_from_name("EN10MB"), Ok(1));
        assert_eq!(linktype_from_name("IEEE802_11_RADIO"), Ok(127));
        assert_eq!(linktype_from_name("147"), Ok(147));
        let e = linktype_from_name("ETHER").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown link type `ETHER` (a number, or EN10MB")
        );
        assert_eq!(describe_linktype(113), "LINUX_SLL (113)");
        assert_eq!(describe_linktype(4242), "LINKTYPE 4242");
    }
}
