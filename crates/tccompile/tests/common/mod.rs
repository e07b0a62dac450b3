//! What the tests share: a rule set covering what compiles, the frames
//! of every capture, and the user-space chain's answer for each.
#![allow(dead_code)]

use runtime::TcAction;
use tc::{ClsactHook, Config, ShowOptions, Skb};

/// The device packets arrive on, and the one mirred redirects to (an
/// index no device of the test's machine has: the kernel's test run does
/// not send redirected packets; a clone to it fails harmlessly).
pub const DEV: &str = "v0";
pub const OUT: &str = "v1";
pub const OUT_IFINDEX: u32 = 4000;

/// The rules: every flower key kind the tests' captures meet, u32 at
/// fixed offsets and through a hash table with `eat`, matchall, and gact
/// controls (continue, pipe, jump, goto chain, reclassify to the restart
/// limit, drop) and mirred redirect.
pub const RULES: &str = "\
qdisc add dev v0 clsact
qdisc add dev v1 clsact
filter add dev v0 ingress prio 1 protocol all matchall action continue
filter add dev v0 ingress prio 2 protocol ip u32 match ip protocol 17 0xff match ip dport 53 0xffff flowid 1:53 action drop
filter add dev v0 ingress prio 2 protocol ip u32 match ip src 10.0.0.0/8 match ip protocol 6 0xff flowid 1:10 action continue
filter add dev v0 ingress prio 2 protocol ip u32 match ip tos 0x10 0xff classid 1:16 action pipe action pass
filter add dev v0 ingress prio 3 handle 1: protocol ip u32 divisor 16
filter add dev v0 ingress prio 3 protocol ip u32 match ip protocol 6 0xff offset at 0 mask 0f00 shift 6 eat hashkey mask 0x0000ffff at 20 link 1:
filter add dev v0 ingress prio 3 protocol ip u32 ht 1: sample tcp dst 80 0xffff divisor 16 match tcp dst 80 0xffff flowid 1:80 action goto chain 1
filter add dev v0 ingress prio 3 protocol ip u32 ht 1: sample tcp dst 443 0xffff divisor 16 match tcp dst 443 0xffff flowid 1:443 action pass
filter add dev v0 ingress prio 4 protocol ip flower ip_proto tcp tcp_flags 0x2/0x12 classid 1:2 action pipe action pipe
filter add dev v0 ingress prio 4 protocol ip flower ip_proto tcp dst_port 22 action drop
filter add dev v0 ingress prio 4 protocol ip flower ip_proto udp src_ip 192.168.0.0/16 dst_port 1024-65535 action continue
filter add dev v0 ingress prio 4 protocol ip flower ip_proto udp dst_ip 10.0.0.0/8 dst_port 1024-65535 classid 1:5 action mirred egress redirect dev v1
filter add dev v0 ingress prio 4 protocol ip flower ip_proto udp dst_port 100-200 src_port 100-2000 action drop
filter add dev v0 ingress prio 4 protocol ip flower ip_flags frag/nofirstfrag classid 1:3 action drop
filter add dev v0 ingress prio 4 protocol ip flower ip_proto icmp type 8 code 0 classid 1:4 action gact jump 1 action drop action pass
filter add dev v0 ingress prio 4 protocol ip flower ip_proto icmp type 0 action goto chain 2
filter add dev v0 ingress prio 4 protocol ip flower ip_proto 0x2 action reclassify
filter add dev v0 ingress prio 4 protocol ip flower ip_tos 0x10/0xfc ip_ttl 64 action pass
filter add dev v0 ingress prio 4 protocol ip flower dst_mac 01:00:5e:00:00:00/ff:ff:ff:80:00:00 action continue
filter add dev v0 ingress prio 5 protocol ipv6 flower src_ip fe80::/10 ip_proto icmpv6 type 135 classid 1:6 action drop
filter add dev v0 ingress prio 5 protocol ipv6 flower dst_ip ff02::1:2 ip_proto udp action pass
filter add dev v0 ingress prio 5 protocol ipv6 flower ip_proto tcp src_port 80 action pipe
filter add dev v0 ingress prio 6 protocol 802.1Q flower vlan_id 1 vlan_ethtype ip action drop
filter add dev v0 ingress prio 10 protocol 802.1ad flower vlan_ethtype 802.1Q cvlan_id 100 cvlan_ethtype ip action pass
filter add dev v0 ingress prio 7 protocol arp flower arp_op request arp_tip 10.0.0.0/8 action drop
filter add dev v0 ingress prio 7 protocol arp flower src_mac 00:00:0c:00:00:00/ff:ff:ff:00:00:00 action pass
filter add dev v0 ingress prio 8 protocol 0x8847 flower mpls_label 16 action drop
filter add dev v0 ingress prio 9 protocol ip flower skip_sw ip_proto tcp action drop
filter add dev v0 ingress chain 1 prio 1 protocol ip flower ip_proto tcp src_ip 10.0.0.0/8 action drop
filter add dev v0 ingress chain 1 prio 2 protocol ip matchall classid 1:99 action pass
filter add dev v0 ingress chain 2 prio 1 protocol ip flower ip_ttl 64 action goto chain 0
filter add dev v0 ingress chain 2 prio 2 protocol all matchall action ok
";

/// The configuration the tests compile.
pub fn config() -> Config {
    let mut c = Config::default();
    c.run_batch(RULES, ShowOptions::default())
        .unwrap_or_else(|e| panic!("the rules: {e}"));
    c.devices.set(OUT, OUT_IFINDEX);
    c
}

/// Every frame of every capture of tcpdump's suite, whatever its link
/// type: the hook takes a frame's bytes as an Ethernet frame, so any
/// bytes are a packet to classify (the point is that the user-space chain
/// and the compiled program agree on them, malformed or not).
pub fn frames() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for f in testkit::captures() {
        let Ok(mut src) = capture::PcapSource::open(&f) else {
            continue;
        };
        while let Some(Ok(r)) = src.next_raw() {
            out.push(r.data.to_vec());
        }
    }
    out
}

/// What the user-space chain decided for a frame, in the terms the
/// compiled tc program answers in: its return code and where it
/// redirected (a mirred redirect is `bpf_redirect`, TC_ACT_REDIRECT).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub tc: TcAction,
    pub redirect: Option<u32>,
    /// The deciding rule's class (0 without one).
    pub classid: u32,
}

pub fn user_space(c: &mut Config, frame: &[u8]) -> Verdict {
    user_space_at(c, ClsactHook::Ingress, frame)
}

pub fn user_space_at(c: &mut Config, hook: ClsactHook, frame: &[u8]) -> Verdict {
    let mut skb = Skb::from_frame(frame, 1);
    let out = c.classify(DEV, hook, &mut skb);
    if out.verdict == TcAction::Stolen {
        let to = out.emitted.last().expect("a redirect emits").ifindex;
        return Verdict {
            tc: TcAction::Redirect,
            redirect: Some(to),
            classid: out.classid,
        };
    }
    Verdict {
        tc: out.verdict,
        redirect: None,
        classid: out.classid,
    }
}

/// The XDP verdict the compiled XDP program gives for a tc verdict.
pub fn xdp_of(v: &Verdict) -> runtime::XdpAction {
    match v.tc {
        TcAction::Shot => runtime::XdpAction::Drop,
        TcAction::Redirect => runtime::XdpAction::Redirect,
        _ => runtime::XdpAction::Pass,
    }
}

/// The counters the user-space chain kept, in the manifest's slots
/// (rules: matchall's hits only; flower and u32 keep none).
pub fn user_counters(c: &Config, m: &tccompile::Manifest) -> Vec<tccompile::ActionCounters> {
    m.actions
        .iter()
        .map(|s| {
            let a = c.actions.get(&s.action).expect("the action");
            tccompile::ActionCounters {
                packets: a.stats.packets,
                bytes: a.stats.bytes,
                drops: a.stats.drops,
            }
        })
        .collect()
}

/// Loads one program of an object into the VM (`tc_classify` or
/// `xdp_classify`).
pub fn vm_hook(object: &[u8], program: &str, ncpus: u32) -> runtime::Hook {
    let opts = runtime::LoadOptions {
        ncpus,
        ..runtime::LoadOptions::default()
    };
    let image = runtime::Image::load(obj::Object::parse(object).unwrap(), &opts).unwrap();
    let p = image.find_program(Some(program)).unwrap();
    runtime::Hook::new(image, p, 0).unwrap()
}

/// What a run in the VM answered: the verdict and where it redirected.
pub fn vm_verdict(out: &runtime::Outcome<'_>) -> (runtime::Verdict, Option<u32>) {
    let to = out.redirect.as_ref().and_then(|r| match r.target {
        runtime::RedirectTarget::Device { ifindex, .. } => Some(ifindex),
        _ => None,
    });
    (out.verdict, to)
}

/// The compiled object of the rules (and its C and manifest).
pub fn compiled() -> tccompile::Compiled {
    tccompile::compile(
        &config(),
        DEV,
        ClsactHook::Ingress,
        &tccompile::CompileOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The rules at the egress hook instead.
pub fn egress_config() -> Config {
    let mut c = Config::default();
    c.run_batch(
        &RULES.replace(" ingress ", " egress "),
        ShowOptions::default(),
    )
    .unwrap_or_else(|e| panic!("the rules: {e}"));
    c.devices.set(OUT, OUT_IFINDEX);
    c
}

/// `tc -s filter show dev v0 ingress` of a configuration.
pub fn show_stats(c: &mut Config) -> String {
    show_stats_at(c, ClsactHook::Ingress)
}

pub fn show_stats_at(c: &mut Config, hook: ClsactHook) -> String {
    c.run(
        &["filter", "show", "dev", DEV, hook.name()],
        ShowOptions {
            stats: true,
            ..ShowOptions::default()
        },
    )
    .unwrap()
}
