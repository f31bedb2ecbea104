//! In-band telemetry and HPCC (`roce.cc: hpcc`): the stacks switches stamp
//! reach the controller hop by hop, and HPCC holds the bottleneck's queue
//! near empty at close to the target utilisation where DCQCN lets it build.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::extension::buffer_policy::{ParamError, Params};
use fabricsim_core::extension::rate_cc::{self, QpContext, RateControlInfo};
use fabricsim_core::stats::RunOutput;
use fabricsim_core::transport::roce::rate::{AckFeedback, IntHop, RateControl};
use serde_json::json;

/// Sends at line rate and answers, as its "cuts" (the flows table's
/// `rate_cuts`), the most hops an ACK carried times 10, plus 1 if any hop's
/// stamps ever went backwards (bytes sent or time) or named a rate other
/// than the links' 100 Gb/s.
#[derive(Debug)]
struct Probe {
    line: u64,
    last: Vec<IntHop>,
    most: u64,
    wrong: bool,
}

impl RateControl for Probe {
    fn on_ack(&mut self, fb: &AckFeedback<'_>) {
        self.most = self.most.max(fb.int.len() as u64);
        for (i, h) in fb.int.iter().enumerate() {
            if let Some(p) = self.last.get(i) {
                self.wrong |= h.tx_bytes < p.tx_bytes || h.timestamp < p.timestamp;
            }
            self.wrong |= h.link_rate_bps != 100_000_000_000;
        }
        if !fb.int.is_empty() {
            self.last = fb.int.to_vec();
        }
    }
    fn rate_bps(&self) -> u64 {
        self.line
    }
    fn cuts(&self) -> u64 {
        self.most * 10 + self.wrong as u64
    }
}

fn probe(_p: &Params<'_>, ctx: &QpContext) -> Result<Box<dyn RateControl>, ParamError> {
    Ok(Box::new(Probe { line: ctx.line_rate_bps, last: Vec::new(), most: 0, wrong: false }))
}

fn leaf_spine(roce: &str, traffic: &str) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 20000000000, "seed": 1,
        "network": {{"switch": {{"buffer": {{"model": "static", "port_bytes": 10000000}}}}}},
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                     "host_link": {{"rate_bps": 100000000000, "delay_ps": 1000000}},
                     "fabric_link": {{"rate_bps": 100000000000, "delay_ps": 1000000}}}},
        "roce": {roce},
        "traffic": [{traffic}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#
    ))
}

#[test]
fn switches_stamp_each_hop_and_the_ack_echoes_the_stack() {
    rate_cc::register(RateControlInfo {
        name: "test_int_probe".into(),
        summary: "reports the telemetry it sees".into(),
        schema: json!({"type": "object"}),
        factory: probe,
    })
    .unwrap();
    // h0 -> h2 crosses leaf0, a spine and leaf1: three stamps; h0 -> h1 one.
    let traffic = r#"{"kind": "rdma_write", "src": ["h0"], "dst": "h2", "messages": 1, "message_bytes": 200000},
                     {"kind": "rdma_write", "src": ["h1"], "dst": "h0", "messages": 1, "message_bytes": 200000}"#;
    let with = leaf_spine(r#"{"cc": "test_int_probe", "int": true, "dcqcn": {"enabled": false}}"#, traffic);
    assert!(flag(&with, "conservation_ok") && flag(&with, "drained"));
    assert_eq!(int(&with, "rdma_qps_completed"), 2);
    // h1 -> h0 stays on leaf0: one stamp.
    assert_eq!(i64_col(&with, "flows", "rate_cuts"), vec![30, 10]);
    // Without `int` the controller hears no telemetry, and nothing else changes.
    let without = leaf_spine(r#"{"cc": "test_int_probe", "dcqcn": {"enabled": false}}"#, traffic);
    assert_eq!(i64_col(&without, "flows", "rate_cuts"), vec![0, 0]);
    assert_eq!(i64_col(&without, "flows", "fct_ps"), i64_col(&with, "flows", "fct_ps"));
}

/// Two QPs of 100 MB each into one 100G receiver through one switch (shared
/// 12 MB buffer, ECN 5-200 KB for DCQCN): a 2:1 incast.
fn incast(cc: &str) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 50000000000, "seed": 1,
        "network": {{"switch": {{"buffer": {{"model": "shared", "total_bytes": 12000000, "cell_bytes": 256, "alpha": [8.0]}},
                     "ecn": {{"kmin_bytes": 5000, "kmax_bytes": 200000, "pmax": 0.01}}}}}},
        "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": 100000000000, "delay_ps": 1000000}}}},
        "roce": {{"cc": "{cc}"}},
        "traffic": [{{"kind": "rdma_write", "src": ["h1", "h2"], "dst": "h0", "messages": 1, "message_bytes": 100000000}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#
    ))
}

#[test]
fn hpcc_keeps_the_incast_queue_near_empty_at_close_to_line_rate() {
    let hpcc = incast("hpcc");
    let dcqcn = incast("dcqcn");
    for out in [&hpcc, &dcqcn] {
        assert!(flag(out, "conservation_ok") && flag(out, "drained") && flag(out, "buffer_accounting_ok"));
        assert_eq!(int(out, "rdma_qps_completed"), 2);
        assert_eq!(int(out, "packets_dropped"), 0);
    }
    // The bottleneck (the switch's port towards h0) has the longest mean queue delay.
    let qdelay = |out: &RunOutput| match out.tables["links"].column("queue_delay_mean_ps") {
        Some(fabricsim_core::stats::Column::F64(v)) => v.iter().cloned().fold(0.0, f64::max),
        other => panic!("{other:?}"),
    };
    let fct = |out: &RunOutput| *i64_col(out, "flows", "fct_ps").iter().max().unwrap() as f64;
    // 200 MB of payload in frames of 1024 + 62 B, 20 B of framing each, at 100 Gb/s.
    let ideal = 200e6 / 1024.0 * 1106.0 * 8.0 / 100e9 * 1e12;
    eprintln!(
        "2:1 incast: HPCC queue delay {:.0} ps, job {:.3} ms ({:.3} of ideal); DCQCN {:.0} ps, {:.3} ms",
        qdelay(&hpcc),
        fct(&hpcc) / 1e9,
        ideal / fct(&hpcc),
        qdelay(&dcqcn),
        fct(&dcqcn) / 1e9
    );
    // HPCC: the queue holds about nothing once the first RTT's line-rate
    // burst is absorbed, and the link runs near eta = 95 % or above.
    assert!(qdelay(&hpcc) * 20.0 < qdelay(&dcqcn), "HPCC {} ps, DCQCN {} ps", qdelay(&hpcc), qdelay(&dcqcn));
    assert!(ideal / fct(&hpcc) > 0.93, "{}", ideal / fct(&hpcc));
}
