"""Benchmark scenario of the workload generator: leaf-spine data mining at 60 % load.

:func:`datamining_bench_scenario` returns the resolved scenario (the JSON
document the core takes) of ``scenarios/leafspine-datamining.yaml`` with its
arrivals window stretched until at least ``min_flows`` TCP flows are generated.
Its load counts application bytes (``load_basis: payload``), as it did when
the benchmark's recorded numbers were taken, so they stay comparable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabricsim.shipped import scenario_path
from fabricsim.schema import from_dict
from fabricsim.schema import load as load_file
from fabricsim.workloads.flowgen import plan

__all__ = ["datamining_bench_scenario"]

_SCENARIO = scenario_path("leafspine-datamining.yaml")


def datamining_bench_scenario(min_flows: int = 10_000, load: str = "60%", seed: int = 1) -> dict[str, Any]:
    """Resolved leaf-spine data-mining scenario at ``load`` with >= ``min_flows`` flows."""
    if _SCENARIO.is_file():
        base = load_file(_SCENARIO).source_data
    else:  # installed without the repository's scenarios directory
        base = _fallback()
    base["load"] = load
    base["load_basis"] = "payload"
    base["seed"] = seed
    scenario = from_dict(base)
    rate = sum(plan(scenario, i)["arrival_rate_per_s"] for i in range(len(scenario.traffic)))
    duration_s = 1.1 * min_flows / rate
    for _ in range(8):
        base["duration"] = f"{max(duration_s * 1e3, 1.0):.3f}ms"
        scenario = from_dict(base)
        resolved = scenario.to_resolved()
        flows = sum(len(entry["flows"]) for entry in resolved["traffic"])
        if flows >= min_flows:
            return resolved
        duration_s *= 1.2 * min_flows / max(flows, 1)
    raise RuntimeError(f"could not generate {min_flows} flows")


def _fallback() -> dict[str, Any]:
    servers = [f"h{i}" for i in range(24)]
    return {
        "name": "leafspine-datamining",
        "seed": 1,
        "duration": "20ms",
        "load": "60%",
        "network": {"switch": {"device": "nexus-ib-5mb"}},
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "links_per_spine": 2,
                     "hosts_per_leaf": [24, 1], "host_link": {"rate": "10Gbps", "delay": "1us"},
                     "fabric_link": {"rate": "40Gbps", "delay": "1us"}},
        "tcp": {"cc": "cubic", "min_rto": "5ms"},
        "traffic": [
            {"kind": "workload", "name": "responses", "cdf": "datamining_vl2_pfabric", "pattern": "many_to_one",
             "requester": "h24", "responders": servers},
            {"kind": "workload", "name": "east_west", "cdf": "datamining_vl2_pfabric", "pattern": "all_to_all",
             "hosts": servers, "load_scale": 0.25},
        ],
        "stats": {"queue_sample_interval": "100us", "throughput_interval": "1ms"},
    }
