//! The simulation of the paper's Figure 3 against what its parameters
//! give by hand: the RTT of a lone segment, the delay a router adds, the
//! link or the router as the bottleneck, loss recovery, determinism, and
//! the model file it reads.

use profile::sim::{
    ModelDelay, ProcessingDelay, Router, Scenario, Window, compare, serialization_ns, simulate,
};
use profile::{CostModel, Cpu};

/// Odd parameters, so that nothing comes out right by accident.
fn lone() -> Scenario {
    Scenario {
        rate_bps: 7_000_000,
        prop_ns: 3_300_000,
        buffer: 10,
        segment_sizes: vec![1000],
        ack_bytes: 40,
        window: Window::Fixed(1),
        segments: Some(50),
        until_ns: None,
    }
}

fn constant(ns: u64) -> ProcessingDelay {
    ProcessingDelay::Constant { ns }
}

#[test]
fn a_lone_segment_takes_the_propagation_and_the_serialization_both_ways() {
    let s = lone();
    let r = simulate(&s, &Router::none()).unwrap();
    // 1000 bytes at 7 Mb/s: 8000 bits / 7e6 = 1142857.14 ns, rounded up; 40 bytes: 45714.29.
    let (data, ack) = (1_142_858, 45_715);
    assert_eq!(serialization_ns(1000, 7_000_000), data);
    assert_eq!(serialization_ns(40, 7_000_000), ack);
    let want = 4 * 3_300_000 + 2 * data + 2 * ack;
    assert_eq!(s.base_rtt_ns(1000), want);
    assert!(r.complete);
    assert_eq!(r.rtt.samples, 50);
    assert!(r.samples.iter().all(|x| x.rtt_ns == want), "{:?}", r.rtt);
    assert_eq!(
        (r.rtt.min_ns, r.rtt.max_ns, r.rtt.median_ns),
        (want, want, want)
    );
    // One segment per round trip; the run ends with the 50th ACK.
    assert_eq!(r.end_ns, 50 * want);
    assert_eq!(r.delivered, 50);
    // Without processing the packets do not take the processor.
    assert_eq!(r.router.data_processed + r.router.acks_processed, 0);
    assert_eq!((r.router.processing_ns, r.router.dropped()), (0, 0));
    assert_eq!(r.router.out_data.arrived, 50);
    assert_eq!(r.router.input.queued + r.router.out_data.queued, 0);
    // A delay of 0 ns takes it, for no time.
    let zero = simulate(&s, &Router::both(constant(0))).unwrap();
    assert_eq!(zero.router.data_processed + zero.router.acks_processed, 100);
    assert_eq!(zero.samples, r.samples);
}

#[test]
fn a_constant_delay_adds_twice_itself_to_a_lone_segment() {
    let s = lone();
    let base = s.base_rtt_ns(1000);
    for d in [1, 999, 250_000, 5_000_000] {
        let r = simulate(&s, &Router::both(constant(d))).unwrap();
        assert!(r.samples.iter().all(|x| x.rtt_ns == base + 2 * d), "{d}");
        assert_eq!(r.router.processing_ns, 100 * d);
        // Data only: once.
        let only = Router {
            data: constant(d),
            ack: ProcessingDelay::None,
        };
        let r = simulate(&s, &only).unwrap();
        assert!(r.samples.iter().all(|x| x.rtt_ns == base + d), "{d}");
    }
}

#[test]
fn mixed_sizes_are_used_in_turn() {
    let s = Scenario {
        segment_sizes: vec![1000, 200],
        ..lone()
    };
    let r = simulate(&s, &Router::none()).unwrap();
    for (i, x) in r.samples.iter().enumerate() {
        let bytes = if i % 2 == 0 { 1000 } else { 200 };
        assert_eq!(x.rtt_ns, s.base_rtt_ns(bytes), "sample {i}");
    }
    assert_eq!(r.delivered_bytes, 25 * 1200);
}

#[test]
fn a_large_window_fills_the_link() {
    // 10 Mb/s, 1500 bytes: one segment every 1.2 ms; 100 segments in
    // flight are more than the 35 of the bandwidth-delay product.
    let s = Scenario {
        window: Window::Fixed(100),
        buffer: 200,
        segments: Some(2000),
        ..Scenario::default()
    };
    let r = simulate(&s, &Router::none()).unwrap();
    assert!(r.complete);
    assert_eq!(r.throughput_bps, 10e6);
    assert_eq!(r.router.dropped(), 0);
    // No packet waits at the router: departures come before arrivals at
    // the same instant.
    assert_eq!(r.router.out_data.queued, 0);
    // Reno with the default window (43 segments) gets there after slow
    // start (some 140 ms of the link unused).
    let s = Scenario {
        segments: Some(20_000),
        ..Scenario::default()
    };
    let r = simulate(&s, &Router::none()).unwrap();
    assert!(r.complete);
    assert!(r.throughput_bps > 0.99e7, "{}", r.throughput_bps);
    assert!(r.throughput_bps <= 1e7, "{}", r.throughput_bps);
    assert_eq!(r.sender.final_window, 43.0);
}

#[test]
fn a_router_slower_than_the_link_is_the_bottleneck() {
    // Enough segments in flight to keep the router busy.
    let s = Scenario {
        window: Window::Fixed(60),
        buffer: 100,
        segments: Some(2000),
        ..Scenario::default()
    };
    // 3 ms per data segment, more than its 1.2 ms on the link: 1500 bytes
    // every 3 ms, from the first delivery on.
    let data_only = Router {
        data: constant(3_000_000),
        ack: ProcessingDelay::None,
    };
    let r = simulate(&s, &data_only).unwrap();
    let want = 1500.0 * 8.0 / 3e-3;
    assert!(
        (r.throughput_bps - want).abs() < 1e-9 * want,
        "{}",
        r.throughput_bps
    );
    assert_eq!(r.router.dropped(), 0);
    assert_eq!(r.router.input.queued, 1999);
    // The ACKs take the same processor: each segment costs 3 ms + 3 ms
    // (the first segments, before any ACK, go through at 3 ms).
    let r = simulate(&s, &Router::both(constant(3_000_000))).unwrap();
    let want = 1500.0 * 8.0 / 6e-3;
    assert!(
        (r.throughput_bps - want).abs() < 0.005 * want,
        "{}",
        r.throughput_bps
    );
    // Below the link's time (0.5 ms + 0.5 ms per segment and its ACK
    // against 1.2 ms) the router keeps up: the link is the bottleneck.
    let s = Scenario {
        window: Window::Fixed(100),
        buffer: 200,
        ..s
    };
    let r = simulate(&s, &Router::both(constant(500_000))).unwrap();
    assert!(
        r.throughput_bps > 0.999e7 && r.throughput_bps <= 1e7,
        "{}",
        r.throughput_bps
    );
}

#[test]
fn losses_are_recovered_and_runs_repeat_exactly() {
    // A slow router with a small buffer: Reno overflows it.
    let s = Scenario {
        buffer: 4,
        segments: Some(800),
        ..Scenario::default()
    };
    let r = Router::both(constant(900_000));
    let a = simulate(&s, &r).unwrap();
    assert!(a.complete);
    assert_eq!(a.delivered, 800);
    assert!(a.router.input.dropped > 0, "{:?}", a.router);
    assert!(
        a.sender.retransmits > 0 && a.sender.fast_retransmits > 0,
        "{:?}",
        a.sender
    );
    assert!(a.sender.sent > 800);
    let b = simulate(&s, &r).unwrap();
    assert_eq!(a, b);
    // A fixed window larger than the buffer recovers too.
    let fixed = Scenario {
        window: Window::Fixed(30),
        ..s.clone()
    };
    let f = simulate(&fixed, &r).unwrap();
    assert!(f.complete && f.router.dropped() > 0, "{:?}", f.router);
    assert_eq!(f, simulate(&fixed, &r).unwrap());
}

#[test]
fn a_time_limit_stops_an_endless_flow() {
    let s = Scenario {
        segments: None,
        until_ns: Some(2_000_000_000),
        ..Scenario::default()
    };
    let r = simulate(&s, &Router::none()).unwrap();
    assert!(!r.complete);
    assert_eq!(r.end_ns, 2_000_000_000);
    // At most one segment per 1.2 ms reached the sink.
    assert!(r.delivered <= 2_000_000_000 / 1_200_000, "{}", r.delivered);
    assert!(r.delivered > 1500, "{}", r.delivered);
}

#[test]
fn the_comparison_reports_what_the_router_adds() {
    let s = lone();
    let routers = vec![
        ("fast".to_string(), Router::both(constant(1_000))),
        (
            "slow data".to_string(),
            Router {
                data: constant(40_000),
                ack: constant(1_000),
            },
        ),
    ];
    let c = compare(&s, &routers).unwrap();
    assert_eq!(c.rows.len(), 3);
    assert_eq!(c.rows[0].name, "no processing");
    assert_eq!(c.rows[0].mean_rtt_increase_ns, 0.0);
    for row in &c.rows {
        assert_eq!(
            row.median_rtt_increase_ns as u64, row.round_trip_processing_ns,
            "{}",
            row.name
        );
        assert_eq!(
            row.mean_rtt_increase_ns,
            row.round_trip_processing_ns as f64
        );
    }
    assert_eq!(c.rows[2].round_trip_processing_ns, 41_000);
}

/// xdp_count profiled over a few sizes.
fn fitted() -> CostModel {
    let object = obj::Object::parse(programs::object("xdp_count").unwrap()).unwrap();
    let image = runtime::Image::load(object, &runtime::LoadOptions::default()).unwrap();
    let prog = image.find_program(None).unwrap();
    let mut h = runtime::Hook::new(image, prog, 0).unwrap();
    let specs: Vec<packet::GenSpec> = [64, 512, 1500]
        .iter()
        .map(|s| packet::GenSpec::parse(&format!("udp,size={s},count=2")).unwrap())
        .collect();
    let mut source = pipeline::Generated::new(&specs);
    let p = profile::profile(&mut h, "xdp_count", &mut source, None, &mut |_| {}).unwrap();
    CostModel::fit(&p)
}

#[test]
fn the_model_file_gives_the_model_it_was_written_from() {
    let m = fitted();
    let cpus = Cpu::parse("ixp1200").unwrap();
    let text = serde_json::to_string(&profile::model_json(&m, &cpus)).unwrap();
    for (pick, cpu) in [(None, &cpus[0]), (Some(cpus[3].name.as_str()), &cpus[3])] {
        let read = ModelDelay::from_json(&text, "m.json", pick).unwrap();
        let direct = ModelDelay::from_cost_model(&m, cpu.clone());
        assert_eq!(read, direct);
        assert_eq!(read.ns(1500), m.delay_ns(cpu, 1500.0).round() as u64);
        assert!(read.ns(1500) > 0);
    }
    // In a network: a window of 1 pays the model for the segment and the ACK.
    let d = ProcessingDelay::Model(ModelDelay::from_cost_model(&m, cpus[4].clone()));
    let s = lone();
    let r = simulate(&s, &Router::both(d.clone())).unwrap();
    let want = s.base_rtt_ns(1000) + d.ns(1000) + d.ns(40);
    assert!(r.samples.iter().all(|x| x.rtt_ns == want));
}

#[test]
fn a_bad_model_file_names_the_file_and_the_field() {
    let dir = std::env::temp_dir().join(format!("profile-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    let m = fitted();
    let mut v = profile::model_json(&m, &Cpu::parse("f=1GHz,tmem=1ns").unwrap());
    v["delta"] = serde_json::json!("many");
    std::fs::write(&path, v.to_string()).unwrap();
    let e = ModelDelay::read(&path, None).unwrap_err().to_string();
    assert!(e.starts_with(&path.display().to_string()), "{e}");
    assert!(e.contains("field `delta`: expected a number"), "{e}");
    v["delta"] = serde_json::json!(0);
    v["cpus"][0].as_object_mut().unwrap().remove("tmem_ns");
    std::fs::write(&path, v.to_string()).unwrap();
    let e = ModelDelay::read(&path, None).unwrap_err().to_string();
    assert!(e.contains("field `cpus[0].tmem_ns` is missing"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
