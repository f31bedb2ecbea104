"""ABM-like (model: abm) against dynamic thresholds (model: shared) on one
switch: a 16-to-1 incast of 64 KB responses, repeated, beside two long TCP
flows that keep another egress queue congested (2:1). Prints, per buffer and
alpha: packets dropped (all, and of the incast), incast FCT p50/p99 and the
long flows' goodput. Needs a core built with the example-buffer feature:

    cargo build --release -p fabricsim-py --features example-buffer
    cp target/release/lib_core.so python/fabricsim/_core.abi3.so
    PYTHONPATH=python python crates/fabricsim-ext-example-buffer/scripts/compare.py
"""

import sys

import fabricsim

SCENARIO = """
name: abm-vs-dt
seed: 1
duration: 30ms
network:
  classes: 1
  switch: {{latency: 500ns, buffer: {buffer}}}
topology: {{kind: star, hosts: 20, link: {{rate: 10Gbps, delay: 2us}}}}
tcp: {{min_rto: 1ms}}
traffic:
  - {{kind: tcp_bulk, name: long, src: [h17, h18], dst: h19, duration: 30ms}}
  - {{kind: tcp_incast, name: incast, client: h0,
     servers: [h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12, h13, h14, h15, h16],
     response_size: 64KB, rounds: 20, start: 5ms, gap: 500us}}
stats: {{queue_sample_interval: 0}}
"""

BUFFER = 1_000_000


def run(label, buffer):
    result = fabricsim.run(fabricsim.loads(SCENARIO.format(buffer=buffer)), progress=False)
    s = result.summary
    assert s["conservation_ok"] and s["buffer_accounting_ok"], label
    flows = result.flows
    incast = flows.filter(flows["name"] == "incast")
    long = flows.filter(flows["name"] == "long")
    fct = [f / 1e6 for f in incast["fct_ps"].to_list() if f is not None and f >= 0]
    long_gbps = long["app_bytes_delivered"].sum() * 8 / 30e-3 / 1e9
    drops_incast = int(incast["packets_dropped"].sum())
    done = int(incast["completed"].sum())
    print(f"| {label} | {s['packets_dropped']} | {drops_incast} | {done}/{len(incast)} | "
          f"{sorted(fct)[len(fct) // 2]:.0f} | {fct_quantile(fct, 0.99):.0f} | {long_gbps:.2f} |")


def fct_quantile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    print("| buffer | packets dropped | incast packets dropped | incast flows completed | "
          "incast FCT p50 (us) | p99 (us) | long flows goodput (Gb/s) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for alpha in (0.5, 1.0, 2.0):
        run(f"dynamic thresholds, alpha {alpha}",
            f"{{model: shared, size: {BUFFER}, cell: 64B, alpha: {alpha}}}")
        run(f"abm, alpha {alpha}", f"{{model: abm, params: {{size: {BUFFER}, alpha: {alpha}}}}}")


if __name__ == "__main__":
    sys.exit(main())
