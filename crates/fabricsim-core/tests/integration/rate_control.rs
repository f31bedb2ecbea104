//! RoCE rate controllers registered from outside the core (`roce.cc`): the
//! rate and window a controller answers pace its queue pair as closed forms
//! say, and ACKs echo every CE mark to it.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::extension::buffer_policy::{ParamError, Params};
use fabricsim_core::extension::rate_cc::{self, QpContext, RateControlInfo};
use fabricsim_core::transport::roce::rate::{AckFeedback, RateControl};
use fabricsim_core::units::SimTime;
use fabricsim_core::Scenario;
use serde_json::json;

/// A fixed rate and an optional window (in full frames); counts the ACKs
/// that echo a CE mark as its "cuts" and keeps the smallest RTT sample.
#[derive(Debug)]
struct Fixed {
    rate: u64,
    window: Option<u64>,
    echoes: u64,
    min_rtt: Option<SimTime>,
}

impl RateControl for Fixed {
    fn on_ack(&mut self, fb: &AckFeedback<'_>) {
        assert!(fb.int.is_empty(), "no switch adds telemetry");
        self.echoes += fb.ecn_echo as u64;
        if let Some(r) = fb.rtt {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
    }
    fn rate_bps(&self) -> u64 {
        self.rate
    }
    fn window_bytes(&self) -> Option<u64> {
        self.window
    }
    fn cuts(&self) -> u64 {
        self.echoes
    }
}

fn fixed(p: &Params<'_>, ctx: &QpContext) -> Result<Box<dyn RateControl>, ParamError> {
    let rate = p.u64("rate_bps", Some(ctx.line_rate_bps), 1, ctx.line_rate_bps)?;
    let window = p.u64("window_packets", Some(0), 0, 1 << 20)?;
    Ok(Box::new(Fixed {
        rate,
        window: (window > 0).then_some(window * ctx.frame_bytes as u64),
        echoes: 0,
        min_rtt: None,
    }))
}

fn register() {
    rate_cc::register(RateControlInfo {
        name: "test_fixed".into(),
        summary: "fixed rate and window".into(),
        schema: json!({"type": "object"}),
        factory: fixed,
    })
    .unwrap();
}

const G100: u64 = 100_000_000_000;

/// h1 -> h0 over one switch (100G links, 1 us each, no switch latency), one QP, one message.
fn one_qp(message_bytes: u64, cc_params: &str, ecn: &str) -> String {
    format!(
        r#"{{"duration_ps": 50000000000, "seed": 1,
        "network": {{"switch": {{"latency_ps": 0,
            "buffer": {{"model": "shared", "total_bytes": 12000000, "cell_bytes": 256, "alpha": [8.0]}},
            "ecn": {ecn}}}}},
        "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": {G100}, "delay_ps": 1000000}}}},
        "roce": {{"cc": "test_fixed", "cc_params": {cc_params}}},
        "traffic": [{{"kind": "rdma_write", "src": ["h1"], "dst": "h0", "qps": 1, "messages": 1,
                      "message_bytes": {message_bytes}, "class": 3}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#
    )
}

const NO_ECN: &str = "null";
/// Frame bytes of a full data packet (1024 + 62) and on the wire (+ 20).
const FRAME: u64 = 1086;
const WIRE: u64 = FRAME + 20;

#[test]
fn a_fixed_rate_paces_the_message_at_that_rate() {
    register();
    let bytes = 1_000_000u64;
    let out = run_json(&one_qp(bytes, r#"{"rate_bps": 10000000000}"#, NO_ECN));
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    assert_eq!(int(&out, "rdma_qps_completed"), 1);
    assert_eq!(i64_col(&out, "flows", "final_rate_bps"), vec![10_000_000_000]);
    // N packets leave every WIRE x 8 / 10 Gb/s; the message completes one
    // path delay and one ACK after the last left: (N - 1) gaps plus at most 10 us.
    let n = bytes.div_ceil(1024);
    let gaps_ps = (n - 1) * WIRE * 8 * 100; // ps at 10 Gb/s: bits x 100
    let t = i64_col(&out, "flows", "msg_time_max_ps")[0] as u64;
    assert!(t > gaps_ps && t < gaps_ps + 10_000_000, "message time {t} ps, gaps {gaps_ps} ps");
}

#[test]
fn a_window_of_w_packets_sends_w_packets_per_round_trip() {
    register();
    let bytes = 4_000_000u64;
    let w = 8u64;
    let out = run_json(&one_qp(bytes, &format!(r#"{{"window_packets": {w}}}"#), NO_ECN));
    assert_eq!(int(&out, "rdma_qps_completed"), 1);
    // Round trip of a data packet and its ACK: serialization of the frame at
    // the host and at the switch, of the 66-byte ACK at both, and 4 x 1 us.
    let ser = |b: u64| b * 8 * 1_000_000_000_000 / G100;
    let rtt = 2 * ser(WIRE) + 2 * ser(66 + 20) + 4_000_000;
    let n = bytes.div_ceil(1024);
    let expect = n as f64 / w as f64 * rtt as f64;
    let t = i64_col(&out, "flows", "msg_time_max_ps")[0] as f64;
    assert!((t / expect - 1.0).abs() < 0.02, "message time {t} ps, W/RTT predicts {expect} ps");
}

#[test]
fn every_ce_mark_reaches_the_sender_as_an_ecn_echo() {
    register();
    // Line rate into a 100G port with a step marking at 2 KB: h1 and h2 both
    // send to h0, so the queue grows and many packets are marked.
    let json = one_qp(2_000_000, "{}", r#"{"kmin_bytes": 2000, "kmax_bytes": 2001, "pmax": 1.0, "classes": [3]}"#)
        .replace(r#""src": ["h1"]"#, r#""src": ["h1", "h2"]"#);
    let out = run_json(&json);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    let marked = i64_col(&out, "flows", "ecn_marked");
    let echoed = i64_col(&out, "flows", "rate_cuts");
    assert!(marked.iter().all(|&m| m > 100), "{marked:?}");
    // ACK every packet, no loss: one echo per marked packet.
    assert_eq!(marked, echoed);
    // CNPs go out for CE marks with a registered controller too (at most one
    // per 50 us per QP).
    assert!(i64_col(&out, "flows", "cnps").iter().all(|&c| c > 0));
}

#[test]
fn unknown_controllers_and_bad_params_name_the_field() {
    register();
    let sc = Scenario::from_json(&one_qp(1000, r#"{"rate_bps": 0}"#, NO_ECN)).unwrap();
    let e = fabricsim_core::Simulation::new(&sc).err().unwrap();
    assert_eq!(e.path, "roce.cc_params.rate_bps");
    assert!(e.message.contains("out of range"), "{}", e.message);
    let sc = Scenario::from_json(&one_qp(1000, "{}", NO_ECN).replace("test_fixed", "no_such_cc")).unwrap();
    let e = fabricsim_core::Simulation::new(&sc).err().unwrap();
    assert_eq!(e.path, "roce.cc");
    assert!(e.message.starts_with("unknown value 'no_such_cc'; allowed: dcqcn"), "{}", e.message);
}
