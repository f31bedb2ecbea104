"""``fabricsim bench --ns3 --pair NAME``: fabricsim and ns-3 on the fat-tree work of the htsim pairs.

The pairs are those of :mod:`fabricsim.bench.htsim` on the fat-tree
(``fattree-k4``, ``-k8``, ``-k16`` and their ``-dctcp`` variants): the same
fabricsim twin (:func:`fabricsim.bench.htsim.fattree_twin`), against the
ns-3 3.44 twin of :mod:`fabricsim.validation.ns3_fattree` (``python -m
fabricsim.validation.ns3 fattree``) instead of htsim's driver. Rounds run A B
A B as the htsim pairs do (:func:`fabricsim.bench.htsim.side_by_side`): the
ns-3 process, fabricsim's core path and ``fabricsim run --no-report``, each
a process of its own timed by the kernel's accounting of the child. ns-3's
loop is the thread CPU time of ``Simulator::Run``; its process includes the
Python bindings' start-up (cppyy compiles them on import: most of it) and
the look-up of fabricsim's paths it pins its routes to.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

from fabricsim.bench.htsim import (FATTREE_PAIRS, PAIRS, chosen_pairs, fattree_size, print_table, side_by_side,
                                   summarize)

__all__ = ["NS3_PAIRS", "main", "ns3_command"]

NS3_PAIRS = list(FATTREE_PAIRS)


def ns3_command(name: str, quick: bool) -> list[str]:
    """The ns-3 twin's command line for pair ``name``."""
    k = name.split("-")[1][1:]
    dctcp = ["--dctcp"] if name.endswith("-dctcp") else []
    return [sys.executable, "-m", "fabricsim.validation.ns3", "fattree", "--k", k, *dctcp,
            "--bytes-per-flow", str(fattree_size(quick)), "--json"]


def _ns3_fields(out: str) -> dict[str, float]:
    r = json.loads(out)
    if not r["completed"]:
        raise RuntimeError(f"ns-3 fat-tree k={r['params']['k']}: not every flow completed")
    return {"loop_cpu_s": r["cpu_s"], "events": r["events"], "jct_s": r["jct_s"], "loop_wall_s": r["wall_s"]}


def compare(names: Sequence[str], quick: bool, rounds: int) -> list[dict[str, Any]]:
    """Every pair of ``names``, ``rounds`` times A B A B; one record per pair."""
    results = []
    with tempfile.TemporaryDirectory(prefix="fabricsim-ns3-") as scratch:
        for name in names:
            scenario, _, _ = PAIRS[name](quick)
            runs = side_by_side(Path(scratch), name, scenario, ns3_command(name, quick), _ns3_fields, rounds)
            results.append(summarize(name, runs, reference="ns3"))
    return results


def main(names: Optional[Sequence[str]], quick: bool, rounds: int, as_json: bool) -> int:
    """``fabricsim bench --ns3 --pair NAME``: the chosen pairs against ns-3 (skipped, and said so, without it)."""
    chosen = chosen_pairs(names, list(NS3_PAIRS), "ns-3", rounds)
    if importlib.util.find_spec("ns") is None:
        if as_json:
            print(json.dumps({"results": [], "skipped": chosen}, indent=2))
        else:
            print(f"ns-3: skipped {', '.join(chosen)}: ns-3 is not installed (pip install ns3)", file=sys.stderr)
        return 0
    results = compare(chosen, quick, rounds)
    if as_json:
        print(json.dumps({"results": results, "skipped": []}, indent=2))
    else:
        print_table(results, reference="ns3", label="ns-3")
    return 0
