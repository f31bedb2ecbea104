"""The runs a profile-guided build of the core is trained on.

``scripts/build-pgo.sh`` builds the core instrumented, runs :func:`train` with
it (``python -m fabricsim.bench --train``), and builds the core again with the
branch and call counts those runs recorded. The mix decides what the compiler
treats as hot: every bench scenario at its ``--quick`` size (the event loop on
open-loop fat-trees, TCP fat-trees, the data-mining leaf-spine, incast) and
every shipped scenario at the short size the golden tests run it at, so that
the features only those exercise (PFC and RoCEv2, pipelines, host datapath
models, multicast, cut-through) are trained too instead of being laid out as
never taken.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

__all__ = ["SHORT_RUNS", "train"]

#: Per shipped scenario: the overrides that make its run short (well under a
#: second each). Every scenario in scenarios/ has an entry (the golden tests run
#: the same, and check that).
SHORT_RUNS: Dict[str, List[str]] = {
    # Rings of two servers, an all-to-all of one GPU per rail, 10 us of storage arrivals: about 300 flows.
    "ai-rail-64gpu": [
        *(f"traffic.{g}.hosts=[s0g{g}, s1g{g}]" for g in range(8)),
        *(f"traffic.{i}.size=256KB" for i in range(9)),
        "traffic.8.hosts=[s0g0, s1g1, s2g2, s3g3, s4g4, s5g5, s6g6, s7g7]",
        "duration=10us",
    ],
    "ai-rail-alltoall": ["traffic.0.size=1MB"],
    "allreduce-ring": ["traffic.0.size=4MB"],
    "burst-absorption": [],
    "burst-incast": [],
    "dumbbell-udp": [],
    "esg-acl": [],
    "esg-fairness": [],
    "dumbbell": ["duration=20ms", "traffic.0.size=2MB", "traffic.1.size=2MB", "traffic.2.size=2MB",
                 "traffic.3.size=2MB"],
    "fat-tree": ["duration=1ms"],
    "incast": ["traffic.0.size=200KB"],
    "leafspine-datamining": ["duration=100ms", "load=80%"],
    "leafspine-enterprise": ["duration=10ms"],
    "pt-sdn": [],
    "quickstart": ["duration=2ms"],
    "shared-buffer-dt": [],
    "single-port-md1": ["duration=5ms"],
    "tcp-rocev2-mixed": ["duration=2ms", "traffic.0.size=200KB", "traffic.1.messages=4"],
    "tolly-latency": [],
}


def train(scenarios: Path, log=sys.stderr) -> Dict[str, int]:
    """Runs the training mix in this process and returns the events each run
    processed. ``scenarios`` is the checkout's ``scenarios/`` directory (the
    shipped scenarios are read from there)."""
    import fabricsim
    from fabricsim.bench.run import run_one
    from fabricsim.bench.scenarios import SCENARIOS

    missing = sorted(name for name in SHORT_RUNS if not (scenarios / f"{name}.yaml").is_file())
    if missing:
        raise FileNotFoundError(f"{scenarios}: no {missing[0]}.yaml (expected the checkout's scenarios/ directory)")
    events: Dict[str, int] = {}
    for name in SCENARIOS:
        t0 = time.perf_counter()
        events[f"bench:{name}"] = run_one(name, quick=True)["events"]
        print(f"trained on bench {name} --quick ({time.perf_counter() - t0:.1f} s)", file=log)
    for name, overrides in SHORT_RUNS.items():
        t0 = time.perf_counter()
        sc = fabricsim.load(scenarios / f"{name}.yaml", overrides=list(overrides))
        events[f"scenario:{name}"] = int(fabricsim.run(sc, seed=1).summary["events"])
        print(f"trained on scenarios/{name}.yaml ({time.perf_counter() - t0:.1f} s)", file=log)
    return events


def main(scenarios: Optional[str]) -> int:
    root = Path(scenarios) if scenarios else Path(__file__).resolve().parents[3] / "scenarios"
    try:
        events = train(root)
    except FileNotFoundError as e:
        print(f"python -m fabricsim.bench --train: {e}; pass --scenarios DIR", file=sys.stderr)
        return 2
    print(json.dumps({"runs": len(events), "events": sum(events.values())}))
    return 0
