//! Same scenario and seed give the same run; a different seed changes random draws.

use super::{i64_col, int, run_json};

fn leaf_spine(seed: u64) -> fabricsim_core::stats::RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 100000000, "seed": {seed},
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4,
                     "host_link": {{"rate_bps": 25000000000, "delay_ps": 500000}},
                     "fabric_link": {{"rate_bps": 100000000000, "delay_ps": 500000}}}},
        "traffic": [{{"kind": "udp_poisson", "src": ["h0", "h1", "h2", "h3"], "dst": "h5", "load": 0.3}},
                    {{"kind": "udp_poisson", "src": ["h4", "h6"], "dst": "h1", "load": 0.5, "frame_bytes": 512}}]}}"#
    ))
}

#[test]
fn same_seed_same_everything() {
    let (a, b) = (leaf_spine(9), leaf_spine(9));
    assert_eq!(a.summary, b.summary);
    for t in ["flows", "links", "queues", "drops"] {
        assert_eq!(format!("{:?}", a.tables[t]), format!("{:?}", b.tables[t]), "table {t}");
    }
}

#[test]
fn another_seed_changes_poisson_draws_and_ecmp_paths() {
    let (a, c) = (leaf_spine(9), leaf_spine(10));
    assert_ne!(i64_col(&a, "flows", "packets_sent"), i64_col(&c, "flows", "packets_sent"));
    assert_ne!(i64_col(&a, "links", "packets"), i64_col(&c, "links", "packets"));
    assert!(int(&a, "events") > 0);
}
