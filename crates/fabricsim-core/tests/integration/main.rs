//! End-to-end behaviour of the core, one module per topic.

mod alloc;
mod arbitration;
mod broadcast;
mod conservation;
mod determinism;
mod flow_deps;
mod host;
mod host_egress;
mod hpcc;
mod htcp;
mod load_balancing;
mod multicast;
mod nscc;
mod outputs;
mod pcap;
mod pipeline;
mod power;
mod rate_control;
mod reordering;
mod roce;
mod shared_buffer;
mod stall;
mod switch_buffers;
mod tcp;
mod tcp_cc;
mod tcp_limits;
mod tcp_sack;
mod timing;
mod trimming;

use fabricsim_core::stats::{Column, RunOutput, Value};
use fabricsim_core::{Scenario, Simulation};

/// A random permutation of `n` hosts without fixed points (Sattolo's
/// algorithm: one cycle through all hosts), from a fixed LCG.
pub fn derangement(n: usize, mut state: u64) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let j = ((state >> 33) as usize) % i;
        p.swap(i, j);
    }
    p
}

/// Builds and runs a scenario given as JSON.
pub fn run_json(json: &str) -> RunOutput {
    let sc = Scenario::from_json(json).expect("valid scenario JSON");
    Simulation::new(&sc).expect("valid scenario").finish()
}

pub fn int(out: &RunOutput, key: &str) -> i64 {
    match out.summary.get(key) {
        Some(Value::Int(v)) => *v,
        other => panic!("summary.{key} is {other:?}"),
    }
}

pub fn flag(out: &RunOutput, key: &str) -> bool {
    match out.summary.get(key) {
        Some(Value::Bool(v)) => *v,
        other => panic!("summary.{key} is {other:?}"),
    }
}

pub fn i64_col(out: &RunOutput, table: &str, col: &str) -> Vec<i64> {
    match out.tables[table].column(col) {
        Some(Column::I64(v)) => v.clone(),
        Some(Column::U64(v)) => v.iter().map(|&x| x as i64).collect(),
        Some(Column::U32(v)) => v.iter().map(|&x| x as i64).collect(),
        Some(Column::U8(v)) => v.iter().map(|&x| x as i64).collect(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}
