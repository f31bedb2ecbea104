//! Congestion controllers registered from outside the core
//! (`extension/tcp_cc.rs`): a built-in called through the registry gives
//! the built-in's outputs exactly, errors name the field, and a
//! controller's randomness is its own seeded stream.

use fabricsim_core::extension::tcp_cc::{self, CcFactory, ParamError, Params, Registration};
use fabricsim_core::stats::RunOutput;
use fabricsim_core::transport::tcp::cc::{AckInfo, CcInit, CongestionOps, LossInfo, NewReno, Window};
use fabricsim_core::{Scenario, Simulation};
use serde_json::{json, Value};

/// The built-in NewReno behind a trait object, under another name.
#[derive(Clone, Debug)]
struct RenoPort(NewReno);

impl CongestionOps for RenoPort {
    fn name(&self) -> &str {
        "reno-port"
    }
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo) {
        self.0.cong_avoid(w, ack);
    }
    fn ssthresh(&mut self, w: &Window, loss: &LossInfo) -> u64 {
        self.0.ssthresh(w, loss)
    }
    fn clone_box(&self) -> Box<dyn CongestionOps> {
        Box::new(self.clone())
    }
}

struct RenoPortFactory;

impl CcFactory for RenoPortFactory {
    fn validate(&self, params: &Value) -> Result<(), ParamError> {
        Params::new(params, &["byte_counting"])?.bool("byte_counting", false).map(|_| ())
    }
    fn create(&self, params: &Value, _init: CcInit) -> Box<dyn CongestionOps> {
        let bc = Params::new(params, &["byte_counting"]).and_then(|p| p.bool("byte_counting", false)).unwrap();
        Box::new(RenoPort(NewReno::new(bc)))
    }
}

/// NewReno whose window after a loss is cut by a random 40-60 %: the draws
/// come from the stream the core hands it.
#[derive(Clone, Debug)]
struct RandomCut {
    reno: NewReno,
    rng: fabricsim_core::rng::RandomStream,
}

impl CongestionOps for RandomCut {
    fn name(&self) -> &str {
        "random-cut"
    }
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo) {
        self.reno.cong_avoid(w, ack);
    }
    fn ssthresh(&mut self, w: &Window, loss: &LossInfo) -> u64 {
        let f = 0.4 + 0.2 * (self.rng.next_u64() as f64 / u64::MAX as f64);
        ((loss.flight as f64 * f) as u64).max(2 * w.mss)
    }
    fn clone_box(&self) -> Box<dyn CongestionOps> {
        Box::new(self.clone())
    }
}

struct RandomCutFactory;

impl CcFactory for RandomCutFactory {
    fn validate(&self, params: &Value) -> Result<(), ParamError> {
        Params::new(params, &[]).map(|_| ())
    }
    fn create(&self, _params: &Value, init: CcInit) -> Box<dyn CongestionOps> {
        Box::new(RandomCut { reno: NewReno::new(false), rng: init.rng })
    }
}

fn register() {
    let schema = json!({"type": "object", "properties": {"byte_counting": {"type": "boolean"}}});
    tcp_cc::register_or_replace(Registration::new(
        "reno-port",
        "NewReno through the registry",
        schema,
        RenoPortFactory,
    ))
    .unwrap();
    tcp_cc::register_or_replace(Registration::new(
        "random-cut",
        "random cuts",
        json!({"type": "object"}),
        RandomCutFactory,
    ))
    .unwrap();
}

/// Four senders into one port of a small buffer (losses, fast recovery, timeouts).
fn incast(tcp: &str, seed: u64) -> String {
    format!(
        r#"{{"duration_ps": 2000000000000, "seed": {seed},
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 60000}}}}}},
        "topology": {{"kind": "star", "hosts": 5, "link": {{"rate_bps": 10000000000, "delay_ps": 2000000}}}},
        "tcp": {tcp},
        "traffic": [{{"kind": "tcp_bulk", "src": ["h1", "h2", "h3", "h4"], "dst": "h0", "bytes": 3000000}}],
        "stats": {{"queue_sample_interval_ps": 10000000, "throughput_interval_ps": 100000000}}}}"#
    )
}

fn run(json: &str) -> Result<RunOutput, fabricsim_core::ConfigError> {
    let sc = Scenario::from_json(json)?;
    Ok(Simulation::new(&sc)?.finish())
}

/// Every table and the summary as text, the flows table's `cc` column left out.
fn dump(out: &RunOutput) -> String {
    let mut s = format!("{:?}\n", out.summary);
    for (name, t) in &out.tables {
        for (col, c) in &t.columns {
            if !(name == "flows" && col == "cc") {
                s += &format!("{name}.{col} {c:?}\n");
            }
        }
    }
    s
}

#[test]
fn a_builtin_through_the_registry_gives_the_builtins_outputs() {
    register();
    for (profile, bc) in [(r#""profile": "rfc""#, false), (r#""profile": "linux""#, true)] {
        let builtin = run(&incast(&format!(r#"{{{profile}, "cc": "newreno"}}"#), 1)).unwrap();
        let ported =
            run(&incast(&format!(r#"{{{profile}, "cc": "reno-port", "cc_params": {{"byte_counting": {bc}}}}}"#), 1))
                .unwrap();
        assert!(super::int(&builtin, "packets_dropped") > 0, "the scenario has losses");
        assert_eq!(dump(&builtin), dump(&ported), "{profile}");
        match ported.tables["flows"].column("cc") {
            Some(fabricsim_core::stats::Column::Cat { labels, .. }) => assert!(labels.contains(&"reno-port".into())),
            other => panic!("flows.cc is {other:?}"),
        }
    }
}

#[test]
fn unknown_names_and_bad_parameters_name_the_field() {
    register();
    let e = run(&incast(r#"{"cc": "no-such-cc"}"#, 1)).err().unwrap();
    assert_eq!(e.path, "tcp.cc");
    assert!(e.message.starts_with("unknown value 'no-such-cc'; allowed: newreno, cubic, dctcp, htcp"), "{e}");
    assert!(e.message.contains("reno-port"), "{e}");
    let e = run(&incast(r#"{"cc": "reno-port", "cc_params": {"byte_counting": 3}}"#, 1)).err().unwrap();
    assert_eq!((e.path.as_str(), e.message.as_str()), ("tcp.cc_params.byte_counting", "must be true or false, not 3"));
    let e = run(&incast(r#"{"cc": "cubic", "cc_params": {}}"#, 1)).err().unwrap();
    // Checked with the entry that uses the configuration.
    assert_eq!(e.path, "traffic[0].tcp.cc_params");
    assert!(e.message.contains("built-in 'cubic'"), "{e}");
}

#[test]
fn a_controllers_randomness_is_its_own_seeded_stream() {
    register();
    let a = dump(&run(&incast(r#"{"profile": "rfc", "cc": "random-cut"}"#, 7)).unwrap());
    let b = dump(&run(&incast(r#"{"profile": "rfc", "cc": "random-cut"}"#, 7)).unwrap());
    let c = dump(&run(&incast(r#"{"profile": "rfc", "cc": "random-cut"}"#, 8)).unwrap());
    assert_eq!(a, b);
    assert_ne!(a, c, "another seed gives other draws");
}
