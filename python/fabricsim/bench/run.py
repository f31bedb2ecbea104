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

from fabricsim.bench.scenarios import NS3_TWINS, SCENARIOS
from fabricsim.errors import FabricsimError

__all__ = ["main", "run_one"]


def run_one(name: str, quick: bool) -> Dict[str, Any]:
    """Runs one bench scenario in this process and returns its measurements."""
    from fabricsim import _core

    scenario = SCENARIOS[name](quick)
    t0 = time.perf_counter()
    sim = _core.Simulation(json.dumps(scenario))
    t1 = time.perf_counter()
    sim.run_until(2**63)
    t2 = time.perf_counter()
    out = sim.finish()
    t3 = time.perf_counter()
    s = out["summary"]
    loop = t2 - t1
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "scenario": name,
        "sim_time_s": s["sim_time_s"],
        "events": s["events"],
        "packets": s["packets_created"],
        "flows": s["flows_total"],
        "build_s": round(t1 - t0, 4),
        "loop_s": round(loop, 4),
        "wall_s": round(t3 - t0, 4),
        "events_per_sec": round(s["events"] / loop) if loop > 0 else None,
        "packets_per_sec": round(s["packets_created"] / loop) if loop > 0 else None,
        "peak_memory_mb": round(peak_kib / 1024, 1),
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
        print(json.dumps({"machine": _machine(), "results": results}, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"fabricsim bench ({_machine()['cpu']})")
    for col in ("scenario", "sim time", "events", "packets", "wall s", "Mevents/s", "Mpackets/s", "peak MB", "conserved"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for r in results:
        table.add_row(
            r["scenario"], f"{r['sim_time_s'] * 1e3:.1f} ms", f"{r['events']:,}", f"{r['packets']:,}",
            f"{r['wall_s']:.2f}", f"{r['events_per_sec'] / 1e6:.1f}", f"{r['packets_per_sec'] / 1e6:.2f}",
            f"{r['peak_memory_mb']:.0f}", "yes" if r["conservation_ok"] else "NO",
        )
    Console().print(table)
    for r in results:
        if "speedup_vs_ns3" in r:
            Console().print(
                f"{r['scenario']}: ns-3 Simulator::Run {r['ns3_run_s']:.2f} s ({r['ns3_process_s']:.1f} s with start-up) "
                f"vs fabricsim {r['wall_s']:.3f} s: {r['speedup_vs_ns3']}x faster; "
                f"job completion ns-3 {r['ns3_jct_s'] * 1e3:.3f} ms"
            )
    return 0


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
