"""``fabricsim bench``: speed of the core on the fixed scenarios of :mod:`fabricsim.bench.scenarios`.

Each scenario runs in its own Python process so that its peak memory is its own.
The scenarios are fixed (same seed, same sizes) so numbers are comparable over
time; they are resolved scenarios handed straight to the core, so the timing is
the core's event loop plus result conversion, not YAML parsing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

from fabricsim.bench.scenarios import NS3_TWINS, SCALE_FAMILIES, SCENARIOS
from fabricsim.errors import FabricsimError

__all__ = ["main", "run_one"]


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
    memory = sim.memory()
    out = sim.finish()
    t3 = time.perf_counter()
    s = out["summary"]
    loop, cpu = t2 - t1, c2 - c1
    _, hops_column = out["tables"]["links"]["packets"]
    hops = int(np.frombuffer(hops_column, dtype="<u8").sum())
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    in_flight = memory["packets"] + memory["port_queues"] + memory["wires"]
    return {
        "scenario": name,
        "sim_time_s": s["sim_time_s"],
        "events": s["events"],
        "packets": s["packets_created"],
        "packet_hops": hops,
        "flows": s["flows_total"],
        "build_s": round(t1 - t0, 4),
        "loop_s": round(loop, 4),
        "loop_cpu_s": round(cpu, 4),
        "wall_s": round(t3 - t0, 4),
        "events_per_sec": round(s["events"] / loop) if loop > 0 else None,
        "packets_per_sec": round(s["packets_created"] / loop) if loop > 0 else None,
        # Per CPU second of the loop: steadier than wall time on a shared machine.
        "events_per_cpu_s": round(s["events"] / cpu) if cpu > 0 else None,
        "hops_per_cpu_s": round(hops / cpu) if cpu > 0 else None,
        "events_per_packet": round(s["events"] / max(s["packets_created"], 1), 2),
        "ns_per_event": round(cpu * 1e9 / max(s["events"], 1), 1),
        "cpu_per_sim_s": round(cpu / s["sim_time_s"], 4) if s["sim_time_s"] > 0 else None,
        "peak_memory_mb": round(peak_kib / 1024, 1),
        "peak_packets": memory["peak_packets"],
        # State that grows with the packets in flight (pool slots, queue and wire
        # slots, allocated capacity) per packet at the peak.
        "bytes_per_packet": round(in_flight / max(memory["peak_packets"], 1), 1),
        "conservation_ok": s["conservation_ok"],
    }


def _run_ns3(name: str, quick: bool) -> Optional[Dict[str, Any]]:
    """Times the ns-3 twin of a bench scenario in its own process, if ns-3 is installed."""
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

    machine = _machine()
    table = Table(title=f"fabricsim bench ({machine['cpu']}; core {machine['build']})")
    for col in ("scenario", "sim time", "events", "packets", "ev/pkt", "wall s", "loop CPU s", "Mevents/CPU s",
                "Mhops/CPU s", "peak MB", "B/pkt", "conserved"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for r in results:
        table.add_row(
            r["scenario"], _sim_time(r["sim_time_s"]), f"{r['events']:,}", f"{r['packets']:,}",
            f"{r['events_per_packet']:.1f}", f"{r['wall_s']:.2f}", f"{r['loop_cpu_s']:.2f}",
            f"{r['events_per_cpu_s'] / 1e6:.1f}", f"{r['hops_per_cpu_s'] / 1e6:.2f}", f"{r['peak_memory_mb']:.0f}",
            f"{r['bytes_per_packet']:.0f}",
            "yes" if r["conservation_ok"] else "NO",
        )
    Console().print(table)
    curve = _cost_curve(results)
    if curve:
        scale = Table(title="loop CPU time per event and per packet-hop vs k (x: relative to the smallest k run)")
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
    """Per scale family run at two or more sizes: loop CPU time per event and
    per packet-hop at each k, and their ratio to the smallest k."""
    by_name = {r["scenario"]: r for r in results}
    rows = []
    for family, ks in SCALE_FAMILIES.items():
        runs = [(k, by_name[family.format(k)]) for k in ks if family.format(k) in by_name]
        if len(runs) < 2:
            continue
        base_event = base_hop = 0.0
        for k, r in runs:
            ns_event = r["loop_cpu_s"] * 1e9 / max(r["events"], 1)
            ns_hop = r["loop_cpu_s"] * 1e9 / max(r["packet_hops"], 1)
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
    from fabricsim import _core

    return {"cpu": cpu, "python": platform.python_version(), "platform": platform.platform(), "build": _core.BUILD}
