"""``fabricsim bench``: speed of the core on fixed scenarios.

Each scenario runs in its own Python process so that its peak memory is its own.
The scenarios are fixed (same seed, same sizes) so numbers are comparable over
time; they are resolved scenarios handed straight to the core, so the timing is
the core's event loop plus result conversion, not YAML parsing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional

G = 1_000_000_000
US = 1_000_000
MS = 1_000_000_000


def _leafspine_udp(quick: bool) -> Dict[str, Any]:
    """4 leaves x 16 hosts at 100G, 4 spines at 400G; every host sends Poisson
    UDP at 50% load to its partner on the next leaf (a permutation)."""
    leaves, per_leaf = 4, 16
    hosts = leaves * per_leaf
    traffic = []
    for h in range(hosts):
        dst = (h + per_leaf) % hosts
        traffic.append({"kind": "udp_poisson", "name": f"p{h}", "src": [f"h{h}"], "dst": f"h{dst}",
                        "load": 0.5, "frame_bytes": 1500})
    return {
        "name": "leafspine-udp", "seed": 1, "duration_ps": (2 if quick else 10) * MS, "drain": True,
        "network": {"switch": {"latency_ps": 500_000, "buffer": {"model": "static", "port_bytes": 2_000_000}}},
        "topology": {"kind": "leaf_spine", "leaves": leaves, "spines": 4, "hosts_per_leaf": per_leaf,
                     "host_link": {"rate_bps": 100 * G, "delay_ps": 1 * US},
                     "fabric_link": {"rate_bps": 400 * G, "delay_ps": 1 * US}},
        "traffic": traffic,
        "stats": {"queue_sample_interval_ps": 10 * US},
    }


def _fattree_incast(quick: bool) -> Dict[str, Any]:
    """k=8 fat-tree (128 hosts, 10G); 127 hosts send CBR UDP at 2% load to h0
    (an oversubscribed last hop that drops), with a static 500 KB buffer per port."""
    srcs = [f"h{i}" for i in range(1, 128)]
    return {
        "name": "fattree-incast", "seed": 1, "duration_ps": (5 if quick else 50) * MS, "drain": True,
        "network": {"switch": {"latency_ps": 500_000, "buffer": {"model": "static", "port_bytes": 500_000}}},
        "topology": {"kind": "fat_tree", "k": 8, "link": {"rate_bps": 10 * G, "delay_ps": 1 * US}},
        "traffic": [{"kind": "udp_cbr", "src": srcs, "dst": "h0", "load": 0.02, "frame_bytes": 1000},
                    {"kind": "udp_poisson", "src": [f"h{i}" for i in range(64, 128)], "dst": "h1",
                     "load": 0.01, "frame_bytes": 1000}],
        "stats": {"queue_sample_interval_ps": 10 * US},
    }


def _single_port_mm1(quick: bool) -> Dict[str, Any]:
    """One 10G output port fed by Poisson arrivals at 80% load (the M/D/1 check)."""
    return {
        "name": "single-port-md1", "seed": 1, "duration_ps": (100 if quick else 500) * MS, "drain": True,
        "network": {"switch": {"latency_ps": 0, "buffer": {"model": "static", "port_bytes": 100_000_000}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10 * G, "delay_ps": 1 * US}},
        "traffic": [{"kind": "udp_poisson", "src": ["h0"], "dst": "h1", "load": 0.8, "frame_bytes": 1000}],
        "stats": {"queue_sample_interval_ps": 0},
    }


def _incast_tcp(quick: bool) -> Dict[str, Any]:
    """16 senders x 50 MB of NewReno TCP into one 10G port (1 us links, a
    1000-packet drop-tail queue), mirroring ns-3's settings exactly so the same
    experiment can be timed in ns-3 (``--ns3``)."""
    from fabricsim.scenario import from_dict
    from fabricsim.validation import star_scenario

    size = 5_000_000 if quick else 50_000_000
    return from_dict(star_scenario(senders=16, bytes_per_flow=size, name="incast-tcp-16x50MB")).to_resolved()


def _leafspine_datamining(quick: bool) -> Dict[str, Any]:
    """The leaf-spine data-mining FCT experiment (2 spines, 2 leaves with 4x40G
    uplinks, 24 servers at 10G and one requester) at 60% load, TCP NewReno, an
    intelligent-buffer leaf preset, with at least 10,000 flows (1,000 quick)."""
    from fabricsim.workload_bench import datamining_bench_scenario

    return datamining_bench_scenario(min_flows=1_000 if quick else 10_000, load="60%", seed=1)


def _fattree_cbr(k: int) -> Callable[[bool], Dict[str, Any]]:
    """Scale benchmark (a): a k-ary fat-tree of 320 kb/s links with 100-packet
    queues; k^3/8 open-loop flows (half the hosts, each to the host half the
    fabric away, so every path crosses the core) send one 1000 B frame per
    second each for 1500 s (150 s quick), starts staggered evenly over the
    first second. Cost per event should not grow with k."""

    def build(quick: bool) -> Dict[str, Any]:
        hosts = k ** 3 // 4
        flows = hosts // 2
        wire_bits = (1000 + 20) * 8  # frame plus Ethernet overhead: one frame per second
        traffic = [{"kind": "udp_cbr", "name": "cbr", "src": [f"h{i}"], "dst": f"h{i + hosts // 2}",
                    "rate_bps": wire_bits, "frame_bytes": 1000, "start_ps": i * 1_000_000_000_000 // flows}
                   for i in range(flows)]
        return {
            "name": f"fattree-k{k}-cbr", "seed": 1, "duration_ps": (150 if quick else 1500) * 1_000_000_000_000,
            "drain": True,
            "network": {"switch": {"latency_ps": 500_000,
                                   "buffer": {"model": "static", "port_bytes": 100_000_000, "queue_packets": 100}}},
            "topology": {"kind": "fat_tree", "k": k, "link": {"rate_bps": 320_000, "delay_ps": 1 * US}},
            "traffic": traffic,
            "stats": {"queue_sample_interval_ps": 10_000_000_000_000, "throughput_interval_ps": 100_000_000_000_000},
        }

    return build


def _fattree_cubic(k: int) -> Callable[[bool], Dict[str, Any]]:
    """Scale benchmark (b): a k-ary fat-tree at 10G with 1 us links and
    100-packet queues; every host sends one 1 MB CUBIC flow (100 KB quick) to
    its partner in a random permutation (seeded; no host sends to itself)."""

    def build(quick: bool) -> Dict[str, Any]:
        import random

        hosts = k ** 3 // 4
        rng = random.Random(k)
        dst = list(range(hosts))
        while True:
            rng.shuffle(dst)
            if all(i != d for i, d in enumerate(dst)):
                break
        size = 100_000 if quick else 1_000_000
        flows = [{"src": f"h{i}", "dst": f"h{d}", "bytes": size} for i, d in enumerate(dst)]
        return {
            "name": f"fattree-k{k}-cubic", "seed": 1, "duration_ps": 1 * MS, "drain": True,
            "drain_limit_ps": 10_000 * MS,
            "network": {"switch": {"latency_ps": 500_000,
                                   "buffer": {"model": "static", "port_bytes": 100_000_000, "queue_packets": 100}}},
            "topology": {"kind": "fat_tree", "k": k, "link": {"rate_bps": 10 * G, "delay_ps": 1 * US}},
            "tcp": {"cc": "cubic"},
            "traffic": [{"kind": "tcp_flows", "name": "perm", "flows": flows}],
            "stats": {"queue_sample_interval_ps": 100 * US, "throughput_interval_ps": 1 * MS},
        }

    return build


def _leafspine_datamining_80(quick: bool) -> Dict[str, Any]:
    """Scale benchmark (c): ``scenarios/leafspine-datamining.yaml`` as shipped
    (1 s of arrivals) at 80% load (100 ms quick)."""
    from pathlib import Path

    from fabricsim.scenario import load

    path = Path(__file__).resolve().parents[2] / "scenarios" / "leafspine-datamining.yaml"
    overrides = ["load=80%"] + (["duration=100ms"] if quick else [])
    resolved = load(path, overrides=overrides).to_resolved()
    resolved["name"] = "leafspine-datamining-80"
    return resolved


SCENARIOS: Dict[str, Callable[[bool], Dict[str, Any]]] = {
    "leafspine-udp": _leafspine_udp,
    "fattree-incast": _fattree_incast,
    "single-port-md1": _single_port_mm1,
    "incast-tcp-16x50MB": _incast_tcp,
    "leafspine-datamining": _leafspine_datamining,
    **{f"fattree-k{k}-cbr": _fattree_cbr(k) for k in (8, 16, 32)},
    **{f"fattree-k{k}-cubic": _fattree_cubic(k) for k in (8, 16, 32)},
    "leafspine-datamining-80": _leafspine_datamining_80,
}

#: The scale benchmarks: their cost per event is compared across k.
SCALE_FAMILIES = {"fattree-k{}-cbr": (8, 16, 32), "fattree-k{}-cubic": (8, 16, 32)}

#: Bench scenarios that have an ns-3 twin: the arguments of
#: ``python -m fabricsim.validation.ns3``.
NS3_TWINS: Dict[str, List[str]] = {
    "incast-tcp-16x50MB": ["incast", "--senders", "16", "--cc", "newreno"],
}


def run_one(name: str, quick: bool) -> Dict[str, Any]:
    """Runs one bench scenario in this process and returns its measurements."""
    from fabricsim import _core

    import numpy as np

    scenario = SCENARIOS[name](quick)
    t0 = time.perf_counter()
    sim = _core.Simulation(json.dumps(scenario))
    t1 = time.perf_counter()
    c1 = time.thread_time()
    sim.run_until(2**63)
    c2 = time.thread_time()
    t2 = time.perf_counter()
    memory = sim.memory() if hasattr(sim, "memory") else {}
    out = sim.finish()
    t3 = time.perf_counter()
    s = out["summary"]
    loop = t2 - t1
    dtype, data = out["tables"]["links"]["packets"]
    hops = int(np.frombuffer(data, dtype="<u8").sum())
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    in_flight = ["packets", "port_queues", "wires"]
    return {
        "scenario": name,
        "sim_time_s": s["sim_time_s"],
        "events": s["events"],
        "packets": s["packets_created"],
        "packet_hops": hops,
        "flows": s["flows_total"],
        "build_s": round(t1 - t0, 4),
        "loop_s": round(loop, 4),
        "loop_cpu_s": round(c2 - c1, 4),
        "wall_s": round(t3 - t0, 4),
        "events_per_sec": round(s["events"] / loop) if loop > 0 else None,
        "packets_per_sec": round(s["packets_created"] / loop) if loop > 0 else None,
        "hops_per_sec": round(hops / loop) if loop > 0 else None,
        "events_per_packet": round(s["events"] / max(s["packets_created"], 1), 2),
        "ns_per_event": round(loop * 1e9 / max(s["events"], 1), 1),
        "cpu_per_sim_s": round((c2 - c1) / s["sim_time_s"], 4) if s["sim_time_s"] > 0 else None,
        "peak_memory_mb": round(peak_kib / 1024, 1),
        "peak_packets": s.get("peak_packets_alive"),
        "bytes_per_packet": round(sum(memory[k] for k in in_flight) / max(memory["peak_packets"], 1), 1)
        if memory else None,
        "conservation_ok": s["conservation_ok"],
    }


def _run_ns3(name: str, quick: bool) -> Optional[Dict[str, Any]]:
    """Times the ns-3 twin of a bench scenario in its own process, if ns-3 is installed."""
    import importlib.util

    if name not in NS3_TWINS or importlib.util.find_spec("ns") is None:
        return None
    size = "5000000" if quick else "50000000"
    args = [sys.executable, "-m", "fabricsim.validation.ns3", *NS3_TWINS[name], "--bytes-per-flow", size, "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-300:]}
    r = json.loads(proc.stdout)
    return {"ns3_run_s": round(r["wall_s"], 3), "ns3_process_s": round(total, 3), "ns3_jct_s": r["jct_s"]}


def _run_isolated(name: str, quick: bool) -> Dict[str, Any]:
    args = [sys.executable, "-m", "fabricsim.bench", "--one", name] + (["--quick"] if quick else [])
    # Keep numpy's BLAS threads from spinning beside the single-threaded core.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"bench scenario {name} failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def main(args: argparse.Namespace) -> int:
    """Entry point of ``fabricsim bench``."""
    names: List[str] = list(args.scenario) if getattr(args, "scenario", None) else list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        from fabricsim.errors import FabricsimError

        raise FabricsimError(f"unknown bench scenario {unknown[0]!r}; allowed: {', '.join(SCENARIOS)}")
    quick = bool(getattr(args, "quick", False))
    results = []
    for n in names:
        r = _run_isolated(n, quick)
        if getattr(args, "ns3", False):
            twin = _run_ns3(n, quick)
            if twin is not None:
                r.update(twin)
                if "ns3_run_s" in twin and r["loop_s"] > 0:
                    r["speedup_vs_ns3"] = round(twin["ns3_run_s"] / r["wall_s"], 1)
        results.append(r)
    if getattr(args, "json", False):
        print(json.dumps({"machine": _machine(), "results": results, "cost_vs_k": _cost_curve(results)}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"fabricsim bench ({_machine()['cpu']})")
    for col in ("scenario", "sim time", "events", "packets", "ev/pkt", "wall s", "Mevents/s", "Mhops/s", "peak MB",
                "B/pkt", "conserved"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for r in results:
        table.add_row(
            r["scenario"], _sim_time(r["sim_time_s"]), f"{r['events']:,}", f"{r['packets']:,}",
            f"{r['events_per_packet']:.1f}", f"{r['wall_s']:.2f}", f"{r['events_per_sec'] / 1e6:.1f}",
            f"{r['hops_per_sec'] / 1e6:.2f}", f"{r['peak_memory_mb']:.0f}",
            "-" if r.get("bytes_per_packet") is None else f"{r['bytes_per_packet']:.0f}",
            "yes" if r["conservation_ok"] else "NO",
        )
    Console().print(table)
    curve = _cost_curve(results)
    if curve:
        scale = Table(title="cost per event and per packet-hop vs k (relative to the smallest k run)")
        for col in ("family", "k", "ns/event", "ns/hop", "x event", "x hop"):
            scale.add_column(col, justify="left" if col == "family" else "right")
        for row in curve:
            scale.add_row(row["family"], str(row["k"]), f"{row['ns_per_event']:.1f}", f"{row['ns_per_hop']:.1f}",
                          f"{row['event_ratio']:.2f}", f"{row['hop_ratio']:.2f}")
        Console().print(scale)
    for r in results:
        if "speedup_vs_ns3" in r:
            Console().print(
                f"{r['scenario']}: ns-3 Simulator::Run {r['ns3_run_s']:.2f} s ({r['ns3_process_s']:.1f} s with start-up) "
                f"vs fabricsim {r['wall_s']:.3f} s: {r['speedup_vs_ns3']}x faster; "
                f"job completion ns-3 {r['ns3_jct_s'] * 1e3:.3f} ms"
            )
    return 0


def _sim_time(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1e3:.1f} ms"


def _cost_curve(results: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per scale family run at two or more sizes: loop time per event and per
    packet-hop at each k, and their ratio to the smallest k."""
    by_name = {r["scenario"]: r for r in results}
    rows = []
    for family, ks in SCALE_FAMILIES.items():
        runs = [(k, by_name[family.format(k)]) for k in ks if family.format(k) in by_name]
        if len(runs) < 2:
            continue
        base_event = base_hop = None
        for k, r in runs:
            ns_event = r["loop_s"] * 1e9 / max(r["events"], 1)
            ns_hop = r["loop_s"] * 1e9 / max(r["packet_hops"], 1)
            base_event, base_hop = base_event or ns_event, base_hop or ns_hop
            rows.append({"family": family.format("K"), "k": k, "ns_per_event": ns_event, "ns_per_hop": ns_hop,
                         "event_ratio": ns_event / base_event, "hop_ratio": ns_hop / base_hop})
    return rows


def _machine() -> Dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "python": platform.python_version(), "platform": platform.platform()}


if __name__ == "__main__":
    p = argparse.ArgumentParser(prog="python -m fabricsim.bench")
    p.add_argument("--one", choices=list(SCENARIOS), help="run one scenario and print its measurements")
    p.add_argument("--dump", choices=list(SCENARIOS),
                   help="print the resolved scenario JSON (for examples/run_json.rs, perf, valgrind)")
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    if a.dump:
        print(json.dumps(SCENARIOS[a.dump](a.quick)))
    elif a.one:
        print(json.dumps(run_one(a.one, a.quick)))
    else:
        p.error("give --one NAME or --dump NAME")
