//! Each helper as the kernel documents it, errors included: small C
//! programs compiled at test time, results read from their globals.

mod common;

use common::*;
use packet::Builder;
use runtime::*;

/// Compiles `body` (with parse.h and a results array) and loads program `prog`.
fn load(name: &str, body: &str, prog: Option<&str>) -> Hook {
    let source = format!(
        "#include \"parse.h\"\n#include <linux/pkt_cls.h>\nlong res[16];\n{body}\nchar _license[] SEC(\"license\") = \"GPL\";\n"
    );
    let object = obj::Object::parse(&compile(name, &source)).unwrap();
    let image = Image::load(
        object,
        &LoadOptions {
            ncpus: 2,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let p = image.find_program(prog).unwrap();
    Hook::new(image, p, 1).unwrap()
}

/// The program's `res[]` after a run.
fn res(h: &mut Hook) -> Vec<i64> {
    let bss = map(h, ".bss").user_lookup(&0u32.to_le_bytes()).unwrap();
    bss[..128]
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn udp() -> Vec<u8> {
    Builder::udp("10.0.0.1", "10.0.0.2", 1000, 2000)
        .payload(&[7; 32])
        .build()
}

#[test]
fn map_helpers_and_their_errors() {
    let mut h = load(
        "maps",
        r#"
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 2); __type(key, __u32); __type(value, __u64); } h SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_QUEUE); __uint(max_entries, 2); __type(value, __u32); } q SEC(".maps");
SEC("xdp") int prog(struct xdp_md *ctx) {
    __u32 k = 1, k2 = 2, k3 = 3; __u64 v = 10; __u32 e = 0;
    res[0] = bpf_map_update_elem(&h, &k, &v, BPF_NOEXIST);
    res[1] = bpf_map_update_elem(&h, &k, &v, BPF_NOEXIST);
    res[2] = bpf_map_update_elem(&k2 == 0 ? 0 : &h, &k2, &v, BPF_EXIST);
    bpf_map_update_elem(&h, &k2, &v, BPF_ANY);
    res[3] = bpf_map_update_elem(&h, &k3, &v, BPF_ANY);
    res[4] = bpf_map_update_elem(&h, &k, &v, 7);
    __u64 *p = bpf_map_lookup_elem(&h, &k);
    res[5] = p ? *p : -1;
    res[6] = bpf_map_delete_elem(&h, &k);
    res[7] = bpf_map_delete_elem(&h, &k);
    res[8] = bpf_map_lookup_elem(&h, &k) == 0;
    e = 5; res[9] = bpf_map_push_elem(&q, &e, 0);
    e = 6; bpf_map_push_elem(&q, &e, 0);
    e = 7; res[10] = bpf_map_push_elem(&q, &e, 0);
    res[11] = bpf_map_peek_elem(&q, &e); res[12] = e;
    bpf_map_pop_elem(&q, &e); bpf_map_pop_elem(&q, &e);
    res[13] = bpf_map_pop_elem(&q, &e);
    return XDP_PASS;
}
"#,
        None,
    );
    h.run(&udp(), &meta(0)).unwrap();
    let r = res(&mut h);
    assert_eq!(
        &r[..14],
        &[0, -17, -2, -7, -22, 10, 0, -2, 1, 0, -7, 0, 5, -2]
    );
}

#[test]
fn bpf_loop_and_for_each_map_elem() {
    let mut h = load(
        "loops",
        r#"
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 8); __type(key, __u32); __type(value, __u64); } h SEC(".maps");
struct acc { __u64 sum; __u64 stop_at; };
static long add_i(__u64 i, struct acc *a) { a->sum += i; return i + 1 == a->stop_at; }
static long add_v(void *map, __u32 *k, __u64 *v, struct acc *a) { a->sum += *k * 100 + *v; *v += 1; return a->sum > a->stop_at; }
SEC("xdp") int prog(struct xdp_md *ctx) {
    struct acc a = {0, 1000};
    res[0] = bpf_loop(10, add_i, &a, 0); res[1] = a.sum;
    a.sum = 0; a.stop_at = 4;
    res[2] = bpf_loop(10, add_i, &a, 0); res[3] = a.sum;
    res[4] = bpf_loop(10, add_i, &a, 1);
    res[5] = bpf_loop((1 << 23) + 1, add_i, &a, 0);
    for (__u32 k = 1; k <= 3; k++) { __u64 v = k; bpf_map_update_elem(&h, &k, &v, 0); }
    a.sum = 0; a.stop_at = 100000;
    res[6] = bpf_for_each_map_elem(&h, add_v, &a, 0); res[7] = a.sum;
    __u32 k = 2; __u64 *v = bpf_map_lookup_elem(&h, &k); res[8] = v ? *v : -1;
    a.sum = 0; a.stop_at = 150;
    res[9] = bpf_for_each_map_elem(&h, add_v, &a, 0);
    res[10] = bpf_for_each_map_elem(&h, add_v, &a, 2);
    return XDP_PASS;
}
"#,
        None,
    );
    h.run(&udp(), &meta(0)).unwrap();
    let r = res(&mut h);
    assert_eq!(
        &r[..6],
        &[10, 45, 4, 6, -22, -7],
        "bpf_loop: all, early stop, bad flags, too many"
    );
    assert_eq!(
        (r[6], r[7], r[8]),
        (3, 606, 3),
        "visits every element; values writable"
    );
    assert_eq!(r[9], 2, "stops when the callback returns 1");
    assert_eq!(r[10], -22);
}

#[test]
fn ring_buffer_and_perf_events() {
    let mut h = load(
        "output",
        r#"
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4096); } rb SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY); __uint(key_size, 4); __uint(value_size, 4); } ev SEC(".maps");
SEC("xdp") int prog(struct xdp_md *ctx) {
    __u32 *rec = bpf_ringbuf_reserve(&rb, 4, 0);
    if (!rec) return XDP_ABORTED;
    *rec = 0xabcd;
    bpf_ringbuf_submit(rec, 0);
    __u32 *gone = bpf_ringbuf_reserve(&rb, 4, 0);
    if (gone) { *gone = 1; bpf_ringbuf_discard(gone, 0); }
    res[0] = bpf_ringbuf_reserve(&rb, 4, 1) == 0;
    __u64 x = 0x1122;
    res[1] = bpf_ringbuf_output(&rb, &x, 8, 0);
    res[2] = bpf_ringbuf_output(&rb, &x, 8, 4);
    res[3] = bpf_ringbuf_query(&rb, 1);
    res[4] = bpf_ringbuf_query(&rb, 0) > 0;
    __u32 tag = 0x77;
    res[5] = bpf_perf_event_output(ctx, &ev, BPF_F_CURRENT_CPU | (14ULL << 32), &tag, 4);
    res[6] = bpf_perf_event_output(ctx, &ev, 9, &tag, 4);
    return XDP_PASS;
}
"#,
        None,
    );
    let pkt = udp();
    h.run(&pkt, &meta(0)).unwrap();
    let r = res(&mut h);
    assert_eq!(&r[..7], &[1, 0, -22, 4096, 1, 0, -7]);
    let mut rb = map(&h, "rb").ringbuf().unwrap();
    assert_eq!(
        rb.consume(),
        vec![
            0xabcdu32.to_le_bytes().to_vec(),
            0x1122u64.to_le_bytes().to_vec()
        ]
    );
    // CPU 1 (the hook's), the tag and the 14 bytes of Ethernet header.
    let ev = map(&h, "ev").perf_drain();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].0, 1);
    assert_eq!(&ev[0].1[..4], &0x77u32.to_le_bytes());
    assert_eq!(&ev[0].1[4..], &pkt[..14]);
}

#[test]
fn trace_printk_formats() {
    let mut h = load(
        "trace",
        r#"
SEC("xdp") int prog(struct xdp_md *ctx) {
    bpf_printk("len %d proto %x", ctx->data_end - ctx->data, 0x800);
    char s[] = "name";
    bpf_printk("%s=%05u %lld", s, 42, -5LL);
    bpf_printk("%llx|%-3d|%c", 0xdeadbeefcafeULL, 7, 'z');
    return XDP_PASS;
}
"#,
        None,
    );
    let out = h.run(&udp(), &meta(0)).unwrap();
    assert_eq!(
        out.trace,
        &[
            format!("len {} proto 800", udp().len()),
            "name=00042 -5".into(),
            "deadbeefcafe|7  |z".into()
        ]
    );
}

#[test]
fn xdp_head_tail_and_meta_limits() {
    let mut h = load(
        "adjust",
        r#"
SEC("xdp") int prog(struct xdp_md *ctx) {
    res[0] = bpf_xdp_adjust_head(ctx, -300);          /* beyond the headroom */
    res[1] = bpf_xdp_adjust_head(ctx, -16);
    res[2] = ctx->data_end - ctx->data;
    res[3] = bpf_xdp_adjust_head(ctx, 10000);         /* past the end */
    res[4] = bpf_xdp_adjust_tail(ctx, 8);             /* grown bytes are zero */
    void *d = (void *)(long)ctx->data, *e = (void *)(long)ctx->data_end;
    if (e - 1 < d || e > d + 2000) return XDP_ABORTED;
    res[5] = *(__u8 *)(e - 1);
    res[6] = bpf_xdp_adjust_tail(ctx, 4000);          /* beyond the frame */
    res[7] = bpf_xdp_adjust_meta(ctx, -8);
    res[8] = ctx->data - ctx->data_meta;
    res[9] = bpf_xdp_adjust_meta(ctx, -30);           /* 38 bytes: too much */
    res[10] = bpf_xdp_adjust_meta(ctx, 12);           /* after data */
    __u8 buf[4];
    res[11] = bpf_xdp_load_bytes(ctx, 16 + 12, buf, 2);
    res[12] = buf[0];
    res[13] = bpf_xdp_load_bytes(ctx, 5000, buf, 2);
    res[14] = bpf_xdp_store_bytes(ctx, 0, buf, 2);
    return XDP_PASS;
}
"#,
        None,
    );
    let pkt = udp();
    let out = h.run(&pkt, &meta(0)).unwrap();
    let (len, start) = (out.packet.len(), out.packet[..2].to_vec());
    let r = res(&mut h);
    assert_eq!(r[0], -22);
    assert_eq!(r[1], 0);
    assert_eq!(r[2] as usize, pkt.len() + 16);
    assert_eq!((r[3], r[4], r[5], r[6]), (-22, 0, 0, -22));
    assert_eq!((r[7], r[8], r[9], r[10]), (0, 8, -13, -22));
    assert_eq!((r[11], r[12], r[13], r[14]), (0, 0x08, -22, 0));
    assert_eq!(len, pkt.len() + 16 + 8);
    assert_eq!(start, vec![0x08, 0x00], "stored bytes");
}

#[test]
fn redirects_and_their_fallbacks() {
    let mut h = load(
        "redirect",
        r#"
struct { __uint(type, BPF_MAP_TYPE_DEVMAP); __uint(max_entries, 4); __type(key, __u32); __type(value, __u32); } dev SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_XSKMAP); __uint(max_entries, 4); __type(key, __u32); __type(value, __u32); } xsk SEC(".maps");
SEC("xdp") int prog(struct xdp_md *ctx) {
    res[0] = bpf_redirect(5, 1);
    res[1] = bpf_redirect_map(&dev, 3, XDP_PASS);
    res[2] = bpf_redirect_map(&dev, 3, 1 << 9);
    res[3] = bpf_redirect_map(&xsk, 0, XDP_DROP);
    res[4] = bpf_redirect_map(&dev, 1, 0);
    /* Broadcast is for devmaps only; an empty entry does not matter. */
    res[5] = bpf_redirect_map(&xsk, 0, BPF_F_BROADCAST);
    if (ctx->rx_queue_index == 1)
        return bpf_redirect_map(&dev, 3, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
    return res[4];
}
"#,
        None,
    );
    map(&h, "dev")
        .user_update(&1u32.to_le_bytes(), &9u32.to_le_bytes(), 0)
        .unwrap();
    let out = h.run(&udp(), &meta(0)).unwrap();
    assert_eq!(out.verdict, Verdict::Xdp(XdpAction::Redirect));
    assert_eq!(
        out.redirect.unwrap().target,
        RedirectTarget::Device {
            ifindex: 9,
            ingress: false
        }
    );
    let r = res(&mut h);
    assert_eq!(
        &r[..6],
        &[0, 2, 0, 1, 4, 0],
        "bad flags abort; empty entries give the fallback"
    );
    let mut m = meta(0);
    m.rx_queue = 1;
    let out = h.run(&udp(), &m).unwrap();
    assert_eq!(out.verdict, Verdict::Xdp(XdpAction::Redirect));
    assert_eq!(
        out.redirect.unwrap().target,
        RedirectTarget::Broadcast {
            exclude_ingress: true
        }
    );
}

#[test]
fn checksum_and_skb_helpers() {
    let mut h = load(
        "skb",
        r#"
SEC("tc") int prog(struct __sk_buff *skb) {
    __u32 a[2] = {1, 2}, b[2] = {1, 3};
    res[0] = bpf_csum_diff(a, 8, b, 8, 0);
    res[1] = bpf_csum_diff(a, 6, b, 8, 0);
    res[2] = bpf_l3_csum_replace(skb, 24, 0, 0, 3);
    res[3] = bpf_l3_csum_replace(skb, 25, 0, 0, 2);
    res[4] = bpf_l4_csum_replace(skb, 40, 0, 0, BPF_F_MARK_MANGLED_0 | 2);
    __u8 buf[8] = {};
    res[5] = bpf_skb_load_bytes(skb, 26, buf, 4);
    res[6] = buf[0];
    res[7] = bpf_skb_load_bytes(skb, 4000, buf, 4);
    res[8] = buf[0];
    res[9] = bpf_skb_store_bytes(skb, 0, buf, 2, 0);
    res[10] = bpf_skb_store_bytes(skb, 0, buf, 2, 8);
    res[11] = bpf_skb_change_tail(skb, skb->len + 10, 0);
    res[12] = skb->len;
    res[13] = bpf_skb_change_head(skb, 4, 0);
    res[14] = skb->len;
    res[15] = bpf_get_hash_recalc(skb) != 0;
    return TC_ACT_OK;
}
"#,
        None,
    );
    let pkt = udp();
    let out = h.run(&pkt, &meta(0)).unwrap();
    assert_eq!(out.packet.len(), pkt.len() + 14);
    assert_eq!(&out.packet[..4], &[0, 0, 0, 0], "the new head is zeroed");
    assert_eq!(
        &out.packet[out.packet.len() - 10..],
        &[0; 10],
        "the new tail is zeroed"
    );
    let r = res(&mut h);
    assert_eq!(r[0], 1, "the diff of 2 -> 3");
    assert_eq!((r[1], r[2], r[3], r[4]), (-22, -22, -14, 0));
    assert_eq!(
        (r[5], r[6], r[7], r[8], r[9], r[10]),
        (0, 10, -14, 0, 0, -22)
    );
    assert_eq!((r[11] as usize, r[12] as usize), (0, pkt.len() + 10));
    assert_eq!(
        (r[13] as usize, r[14] as usize, r[15]),
        (0, pkt.len() + 14, 1)
    );
}

#[test]
fn fib_lookup_codes() {
    let mut h = load(
        "fib",
        r#"
SEC("xdp") int prog(struct xdp_md *ctx) {
    struct bpf_fib_lookup p = {};
    p.family = 2; p.ipv4_dst = bpf_htonl(0x0a0a0101); p.tot_len = 100;
    res[0] = bpf_fib_lookup(ctx, &p, sizeof(p), 0); res[1] = p.ifindex; res[2] = p.dmac[5];
    p.ipv4_dst = bpf_htonl(0x0a0b0101); res[3] = bpf_fib_lookup(ctx, &p, sizeof(p), 0);
    p.ipv4_dst = bpf_htonl(0x0a0a0101); p.tot_len = 2000; res[4] = bpf_fib_lookup(ctx, &p, sizeof(p), 0); res[5] = p.mtu_result;
    p.ipv4_dst = bpf_htonl(0x08080808); res[6] = bpf_fib_lookup(ctx, &p, sizeof(p), 0);
    p.ipv4_dst = bpf_htonl(0x0a420001); res[7] = bpf_fib_lookup(ctx, &p, sizeof(p), 0);
    res[8] = bpf_fib_lookup(ctx, &p, 8, 0);
    p.family = 99; res[9] = bpf_fib_lookup(ctx, &p, sizeof(p), 0);
    return XDP_PASS;
}
"#,
        None,
    );
    h.env_mut().fib = runtime::fib::Fib::parse(
        "link e1 index 3 address 02:00:00:00:00:03 mtu 1500\nneigh 10.10.0.254 dev e1 lladdr 02:00:00:00:00:fe\n\
         10.10.0.0/16 via 10.10.0.254 dev e1\n10.11.0.0/16 via 10.11.0.254 dev e1\nblackhole 10.66.0.0/16\n",
    )
    .unwrap();
    h.run(&udp(), &meta(0)).unwrap();
    let r = res(&mut h);
    assert_eq!(&r[..10], &[0, 3, 0xfe, 7, 8, 1500, 4, 1, -22, -97]);
}

#[test]
fn syncookies_check_what_they_generate() {
    let mut h = load(
        "cookie",
        r#"
SEC("xdp") int prog(struct xdp_md *ctx) {
    struct cursor c = { (void *)(long)ctx->data, (void *)(long)ctx->data_end };
    struct ethhdr *eth; struct iphdr *ip;
    if (parse_eth(&c, &eth) != bpf_htons(ETH_P_IP) || parse_ipv4(&c, &ip) != IPPROTO_TCP) return XDP_PASS;
    struct tcphdr *th = c.pos;
    if ((void *)(th + 1) > c.end) return XDP_PASS;
    __s64 v = bpf_tcp_raw_gen_syncookie_ipv4(ip, th, sizeof(*th));
    res[0] = v >> 32;
    __u32 cookie = v;
    th->ack_seq = bpf_htonl(cookie + 1);
    th->seq = bpf_htonl(bpf_ntohl(th->seq) + 1);
    res[1] = bpf_tcp_raw_check_syncookie_ipv4(ip, th);
    th->ack_seq = bpf_htonl(cookie + 0x1001);
    res[2] = bpf_tcp_raw_check_syncookie_ipv4(ip, th);
    res[3] = bpf_tcp_raw_gen_syncookie_ipv4(ip, th, 3);
    return XDP_PASS;
}
"#,
        None,
    );
    h.run(
        &Builder::tcp("10.0.0.1", "10.0.0.2", 1000, 80).build(),
        &meta(0),
    )
    .unwrap();
    let r = res(&mut h);
    assert_eq!(
        &r[..4],
        &[536, 0, -13, -22],
        "MSS 536 without the option; a wrong cookie fails"
    );
}

#[test]
fn time_random_cpu_and_tail_calls() {
    let mut h = load(
        "misc",
        r#"
struct { __uint(type, BPF_MAP_TYPE_PROG_ARRAY); __uint(max_entries, 2); __uint(key_size, 4); __array(values, int (void *)); } jmp SEC(".maps");
SEC("xdp") int target(struct xdp_md *ctx) { res[5] = 1; return XDP_TX; }
struct { __uint(type, BPF_MAP_TYPE_PROG_ARRAY); __uint(max_entries, 2); __uint(key_size, 4); __array(values, int (void *)); } jmp2 SEC(".maps") = { .values = { [1] = (void *)&target } };
SEC("xdp") int prog(struct xdp_md *ctx) {
    __u64 t1 = bpf_ktime_get_ns(), t2 = bpf_ktime_get_ns();
    res[0] = t2 > t1; res[1] = t1 >= 5000000000ULL;
    res[2] = bpf_get_prandom_u32() != bpf_get_prandom_u32();
    res[3] = bpf_get_smp_processor_id();
    bpf_tail_call(ctx, &jmp2, 0);
    res[4] = 7;
    bpf_tail_call(ctx, &jmp2, 1);
    return XDP_DROP;
}
"#,
        Some("prog"),
    );
    let out = h.run(&udp(), &meta(5_000_000_000)).unwrap();
    assert_eq!(
        out.verdict,
        Verdict::Xdp(XdpAction::Tx),
        "the tail call went to `target`"
    );
    let r = res(&mut h);
    assert_eq!(
        &r[..6],
        &[1, 1, 1, 1, 7, 1],
        "clock follows packets; CPU 1; empty slot falls through"
    );
}

#[test]
fn global_subprograms_and_devmap_programs() {
    let mut h = load(
        "devmap",
        r#"
struct { __uint(type, BPF_MAP_TYPE_DEVMAP); __uint(max_entries, 4); __type(key, __u32); __type(value, struct bpf_devmap_val); } out SEC(".maps");
__attribute__((noinline)) int pick(struct xdp_md *ctx, int k) { return k + (ctx->data_end - ctx->data > 0); }
SEC("xdp") int prog(struct xdp_md *ctx) { return bpf_redirect_map(&out, pick(ctx, 0), 0); }
SEC("xdp/devmap") int egress(struct xdp_md *ctx) {
    res[0] = ctx->egress_ifindex;
    void *d = (void *)(long)ctx->data, *e = (void *)(long)ctx->data_end;
    if (d + 1 > e) return XDP_DROP;
    *(__u8 *)d = 0xee;
    return res[1]++ ? XDP_DROP : XDP_PASS;
}
"#,
        Some("prog"),
    );
    let egress_id = h
        .object()
        .programs
        .iter()
        .position(|p| p.name == "egress")
        .unwrap() as u32
        + 1;
    let value = [8u32.to_le_bytes(), egress_id.to_le_bytes()].concat();
    map(&h, "out")
        .user_update(&1u32.to_le_bytes(), &value, 0)
        .unwrap();
    let out = h.run(&udp(), &meta(0)).unwrap();
    assert_eq!(out.verdict, Verdict::Xdp(XdpAction::Redirect));
    assert_eq!(out.followup.as_ref().unwrap().program, "egress");
    assert_eq!(out.packet[0], 0xee, "the devmap program rewrote the frame");
    assert_eq!(res(&mut h)[0], 8, "it saw the egress interface");
    // The second time the devmap program drops the frame.
    assert_eq!(
        h.run(&udp(), &meta(0)).unwrap().verdict,
        Verdict::Xdp(XdpAction::Drop)
    );
}

#[test]
fn sockets_tunnels_and_packet_type() {
    let mut h = load(
        "sock",
        r#"
SEC("tc") int prog(struct __sk_buff *skb) {
    struct bpf_sock_tuple t = {};
    struct bpf_sock *sk = bpf_sk_lookup_tcp(skb, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
    res[0] = sk != 0;
    if (sk)
        bpf_sk_release(sk);
    struct bpf_sock *u = bpf_sk_lookup_udp(skb, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
    res[1] = u != 0;
    if (u)
        bpf_sk_release(u);
    struct bpf_tunnel_key key = {};
    key.tunnel_id = 42;
    key.remote_ipv4 = 0x0a000001;
    res[2] = bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0);
    res[3] = key.tunnel_id; /* cleared by the failed get */
    key.tunnel_id = 42;
    key.remote_ipv4 = 0x0a000001;
    /* Only short packets get a tunnel. */
    res[4] = skb->len < 100 ? bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 0) : 1;
    res[5] = bpf_skb_set_tunnel_key(skb, &key, sizeof(key), 1 << 10);
    __u32 opt[2] = {1, 2};
    res[6] = bpf_skb_set_tunnel_opt(skb, opt, 6);
    res[7] = bpf_skb_set_tunnel_opt(skb, opt, 8);
    res[8] = bpf_skb_change_type(skb, 5);
    res[9] = bpf_skb_change_type(skb, 1);
    res[10] = skb->pkt_type;
    res[11] = bpf_get_netns_cookie(skb);
    res[12] = bpf_jiffies64();
    return TC_ACT_OK;
}
"#,
        None,
    );
    let out = h.run(&udp(), &meta(2_000_000_000)).unwrap();
    let tunnel = out
        .skb
        .as_ref()
        .unwrap()
        .tunnel
        .clone()
        .expect("a tunnel key was set");
    assert_eq!(tunnel.id(), 42);
    assert_eq!(tunnel.remote().to_string(), "10.0.0.1");
    assert_eq!(tunnel.options, [1, 0, 0, 0, 2, 0, 0, 0]);
    let r = res(&mut h);
    assert_eq!((r[0], r[1]), (0, 0), "a replay has no sockets");
    assert_eq!((r[2], r[3]), (-22, 0), "no received tunnel metadata");
    assert_eq!((r[4], r[5]), (0, -22), "unknown flags are refused");
    assert_eq!((r[6], r[7]), (-22, 0), "options come in 4-byte words");
    assert_eq!((r[8], r[9], r[10]), (-22, 0, 1));
    assert_eq!(r[11], 1);
    // The clock starts at the first packet's timestamp: 2 s is 500 jiffies.
    assert_eq!(r[12], 500);
    // The next packet starts without tunnel metadata.
    let big = Builder::udp("10.0.0.1", "10.0.0.2", 1, 2)
        .payload(&[0; 200])
        .build();
    let out = h.run(&big, &meta(2_000_000_001)).unwrap();
    assert_eq!(out.skb.as_ref().unwrap().tunnel, None);
    assert_eq!(res(&mut h)[4], 1);
}

#[test]
fn skb_room_protocol_and_tc_redirects() {
    let mut h = load(
        "room",
        r#"
SEC("tc") int prog(struct __sk_buff *skb) {
    __u32 len0 = skb->len;
    res[0] = bpf_skb_adjust_room(skb, 8, BPF_ADJ_ROOM_NET, 0);
    res[1] = skb->len - len0;
    res[2] = bpf_skb_adjust_room(skb, -8, BPF_ADJ_ROOM_NET, 0);
    res[3] = bpf_skb_adjust_room(skb, 8, 7, 0);
    res[4] = bpf_skb_adjust_room(skb, 0x1000, BPF_ADJ_ROOM_MAC, 0);
    res[5] = bpf_skb_adjust_room(skb, 8, BPF_ADJ_ROOM_MAC, 1ULL << 40);
    res[6] = bpf_skb_adjust_room(skb, -(int)skb->len, BPF_ADJ_ROOM_MAC, 0);
    /* Encapsulation flags need an outer L3 protocol. */
    res[7] = bpf_skb_adjust_room(skb, 8, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_ENCAP_L4_UDP);
    /* IPv4 in IPv6: the outer protocol becomes IPv6. */
    res[8] = bpf_skb_adjust_room(skb, 40, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_ENCAP_L3_IPV6);
    res[9] = skb->protocol == bpf_htons(ETH_P_IPV6);
    res[10] = bpf_skb_change_proto(skb, bpf_htons(ETH_P_IPV6), 0);
    res[11] = bpf_skb_pull_data(skb, skb->len + 1);
    res[12] = bpf_skb_pull_data(skb, 0);
    struct bpf_redir_neigh nh = {};
    res[13] = bpf_redirect_neigh(3, &nh, 4, 0);
    res[14] = bpf_redirect_peer(3, 1);
    res[15] = bpf_redirect_neigh(5, &nh, sizeof(nh), 0);
    return res[15];
}
"#,
        None,
    );
    let pkt = udp();
    let out = h.run(&pkt, &meta(0)).unwrap();
    assert_eq!(out.verdict.name(), "REDIRECT");
    assert_eq!(
        out.redirect.map(|r| r.target),
        Some(RedirectTarget::Device {
            ifindex: 5,
            ingress: false
        })
    );
    // 8 bytes were inserted after the 20-byte IPv4 header and removed again;
    // then 40 after the MAC header.
    assert_eq!(out.packet.len(), pkt.len() + 40);
    assert_eq!(&out.packet[..14], &pkt[..14]);
    assert_eq!(&out.packet[14..54], &[0; 40]);
    assert_eq!(&out.packet[54..], &pkt[14..]);
    let r = res(&mut h);
    assert_eq!((r[0], r[1], r[2]), (0, 8, 0));
    // -ENOTSUPP (524) for an unknown mode, -EFAULT past 0xfff, -EINVAL for
    // unknown flags, -ENOTSUPP for shrinking past the network header.
    assert_eq!((r[3], r[4], r[5], r[6]), (-524, -14, -22, -524));
    assert_eq!((r[7], r[8], r[9]), (-22, 0, 1));
    assert_eq!(r[10], -524, "already IPv6: nothing to translate");
    assert_eq!((r[11], r[12]), (-12, 0));
    assert_eq!((r[13], r[14]), (2, 2), "bad params or flags: TC_ACT_SHOT");
}

#[test]
fn clone_redirect_sends_copies_and_goes_on() {
    let mut h = load(
        "clone",
        r#"
SEC("tc") int prog(struct __sk_buff *skb) {
    res[0] = bpf_clone_redirect(skb, 5, 0);
    /* The copy is taken at the call: growing the packet afterwards
       changes only the original and the second copy. */
    res[1] = bpf_skb_change_tail(skb, skb->len + 4, 0);
    res[2] = bpf_clone_redirect(skb, 7, BPF_F_INGRESS);
    res[3] = bpf_clone_redirect(skb, 9, 1ULL << 8);
    return TC_ACT_OK;
}
"#,
        None,
    );
    let pkt = udp();
    let out = h.run(&pkt, &meta(0)).unwrap();
    assert_eq!(out.verdict.name(), "OK");
    assert_eq!(out.packet.len(), pkt.len() + 4);
    let clones: Vec<(u32, bool, usize)> = (out.clones.iter())
        .map(|c| (c.ifindex, c.ingress, c.packet.len()))
        .collect();
    assert_eq!(
        clones,
        [(5, false, pkt.len()), (7, true, pkt.len() + 4)],
        "unknown flags send nothing"
    );
    assert_eq!(out.clones[0].packet, pkt);
    let r = res(&mut h);
    assert_eq!((r[0], r[1], r[2], r[3]), (0, 0, 0, -22));
    // A new packet starts with no copies.
    let out = h.run(&pkt, &meta(1)).unwrap();
    assert_eq!(out.clones.len(), 2);
}

#[test]
fn clocks_vprintk_locks_and_buff_len() {
    let mut h = load(
        "misc",
        r#"
struct locked { struct bpf_spin_lock lock; __u64 n; };
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, struct locked); } locks SEC(".maps");
SEC("xdp") int prog(struct xdp_md *ctx) {
    __u64 a = bpf_ktime_get_ns(), b = bpf_ktime_get_boot_ns(), c = bpf_ktime_get_coarse_ns();
    res[0] = a >= 5000 && b > a && c > b;
    res[1] = bpf_xdp_get_buff_len(ctx);
    __u64 args[2] = {7, 9};
    static const char fmt[] = "v=%d w=%d";
    res[2] = bpf_trace_vprintk(fmt, sizeof(fmt), args, sizeof(args));
    res[3] = bpf_trace_vprintk(fmt, sizeof(fmt), args, 12);
    __u32 k = 0;
    struct locked *l = bpf_map_lookup_elem(&locks, &k);
    if (l) {
        bpf_spin_lock(&l->lock);
        l->n++;
        bpf_spin_unlock(&l->lock);
    }
    return XDP_PASS;
}
"#,
        None,
    );
    let pkt = udp();
    let out = h.run(&pkt, &meta(5000)).unwrap();
    assert_eq!(out.trace, ["v=7 w=9"]);
    h.run(&pkt, &meta(6000)).unwrap();
    let r = res(&mut h);
    assert_eq!(r[0], 1, "the clocks follow the packets and advance");
    assert_eq!(r[1], pkt.len() as i64);
    assert_eq!(r[2], 7, "the length of the formatted text");
    assert_eq!(r[3], -22, "args must be whole u64s");
    let v = map(&h, "locks").user_lookup(&0u32.to_le_bytes()).unwrap();
    assert_eq!(u64::from_le_bytes(v[8..16].try_into().unwrap()), 2);
}

/// Multi-buffer XDP: a frame past one page keeps 3520 bytes in the linear
/// part and the rest in fragments that the byte helpers and the tail
/// adjustment reach (the context probe `programs/probes/xdp_frags_probe.c`).
#[test]
fn xdp_fragments_carry_frames_past_one_page() {
    let bytes = programs::probes()
        .find(|(n, _)| *n == "xdp_frags_probe")
        .unwrap()
        .1;
    let image = Image::load(obj::Object::parse(bytes).unwrap(), &LoadOptions::default()).unwrap();
    let mut h = Hook::new(image, 0, 0).unwrap();
    let frame: Vec<u8> = (0..9000u32).map(|i| (i % 251) as u8).collect();
    let out = h.run(&frame, &meta(0)).unwrap();
    let result = |h: &mut Hook, k: u32| {
        let v = map(h, "results").user_lookup(&k.to_le_bytes()).unwrap();
        u64::from_le_bytes(v.try_into().unwrap())
    };
    let (packet, frags) = (out.packet.to_vec(), out.frags.to_vec());
    assert_eq!(packet.len(), 3520, "one page of packet data");
    // 9000 % 700 = 600 bytes cut from the fragments, then 10 zero bytes grown.
    assert_eq!(frags.len(), 9000 - 3520 - 600 + 10);
    let whole = [packet, frags].concat();
    assert_eq!(&whole[..3518], &frame[..3518]);
    assert_eq!(
        &whole[3518..3522],
        &0xdeadbeefu32.to_le_bytes(),
        "a store across the page end"
    );
    assert_eq!(
        &whole[8390..8400],
        &frame[8390..8400],
        "the store at 8900 was cut away"
    );
    assert_eq!(&whole[8400..8410], &[0; 10], "grown bytes are zeros");
    assert_eq!(result(&mut h, 0), 9000, "bpf_xdp_get_buff_len");
    assert_eq!(result(&mut h, 1), 3520, "data_end - data");
    assert_eq!(
        result(&mut h, 3),
        u64::from_le_bytes(frame[8992..9000].try_into().unwrap())
    );
    assert_eq!(
        result(&mut h, 5),
        u64::from_le_bytes(frame[3516..3524].try_into().unwrap())
    );
    assert_eq!((result(&mut h, 6), result(&mut h, 7)), (0, 0));
    // A small frame stays linear.
    let out = h.run(&frame[..600], &meta(0)).unwrap();
    assert!(out.frags.is_empty());
    // 600 % 700 = 600: shrinking to nothing is refused (the Ethernet header stays).
    assert_eq!(result(&mut h, 6) as i64, -22);
}
