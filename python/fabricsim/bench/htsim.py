"""``fabricsim bench --htsim DIR``: fabricsim and htsim on the same work, side by side.

htsim (the packet-level simulator of the NDP, EQDS and Ultra Ethernet studies)
is built outside the project into ``DIR`` with its two equal-work drivers:
``tcp_incast_cpu`` (N senders -> one switch -> one receiver) and
``tcp_fattree_cpu`` (htsim's k-ary fat-tree carrying a connection matrix).
Each prints one ``RESULT key=value ...`` line with its event count, the CPU
time of its event loop alone (``loop_cpu_s``) and its job completion time.

Each pair's fabricsim twin is matched to the driver's TCP:

- incast: 16 x 50 MB (5 MB with ``--quick``) NewReno flows, 10G links with
  1 us delay, a drop-tail queue of 1000 frames of 1502 B (1448 B payload), a
  window of 181 frames (``rwnd`` 256 KiB), no SACK, one ACK per segment,
  minimum RTO 250 ms (``tcp.profile: rfc``; the ns-3 twin's framing, without
  preamble or inter-frame gap);
- fat-tree (k = 4, 8, 16): every host sends one 2 MB flow (200 KB with
  ``--quick``) to a distinct other host (a seeded permutation, written as
  htsim's connection matrix for the driver), 10G links with 1 us delay,
  100-frame queues, no switch latency, 1500 B frames, one ACK per segment,
  minimum RTO 250 ms, NewReno, no queue or throughput sampling (htsim's
  driver samples nothing). The two pick each flow's ECMP path
  differently (htsim at random, fabricsim by hash), so their event counts
  agree only roughly.
- the same fat-trees with DCTCP (``-dctcp`` pairs): htsim's DCTCP (gain
  1/16) with its switch queues marking CE above 15 frames; the twin's DCTCP
  with the same gain and step marking at 15 x 1500 B. htsim marks a frame as
  it leaves the queue and fabricsim as it joins it, so the marks, and with
  them the event counts, differ a little.

Every round runs, in this order, the htsim driver, fabricsim's core path
(``python -m fabricsim.bench.htsim --core FILE``: import, load and validate
the scenario, build and run the core, collect its tables) and ``fabricsim
run FILE --no-report``, each in a process of its own; the whole-process CPU
time (user + system) of each is taken from the kernel's accounting of the
child. Rounds alternate A B A B so that a shared machine's drift falls on
both sides alike; ratios are medians over rounds of fabricsim / htsim.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from fabricsim.bench.htsim_work import connection_matrix, permutation
from fabricsim.validation import star_scenario

__all__ = ["DRIVERS", "PAIRS", "fattree_twin", "incast_twin", "main", "parse_result", "permutation"]

#: The htsim drivers a pair needs, by pair (``spray-k8`` compares completion times, not CPU time:
#: :mod:`fabricsim.bench.htsim_spray`; it also runs ``htsim_ndp`` where that is built).
FATTREE_PAIRS = [f"fattree-k{k}{cc}" for cc in ("", "-dctcp") for k in (4, 8, 16)]
DRIVERS = {"incast-16": "tcp_incast_cpu", **{name: "tcp_fattree_cpu" for name in FATTREE_PAIRS},
           "spray-k8": "htsim_eqds"}

INCAST_SENDERS = 16
INCAST_QUEUE_FRAMES = 1000
INCAST_FRAME_BYTES = 1502
INCAST_WINDOW_FRAMES = 181
FATTREE_QUEUE_FRAMES = 100
FATTREE_FRAME_BYTES = 1500
#: htsim's ECNQueue marks CE above 15 frames (``memFromPkt(15)`` in its fat-tree topology).
DCTCP_MARK_FRAMES = 15
PAYLOAD_BYTES = 1448


def incast_twin(bytes_per_flow: int) -> dict[str, Any]:
    """The fabricsim scenario of ``tcp_incast_cpu 16 BYTES 1000 271862 4000000000``."""
    scenario = star_scenario(senders=INCAST_SENDERS, bytes_per_flow=bytes_per_flow, queue_packets=INCAST_QUEUE_FRAMES,
                             delack_count=1, name="htsim-incast")
    scenario["tcp"]["min_rto"] = "250ms"
    return scenario


def fattree_twin(k: int, partner: Sequence[int], size: int, cc: str = "newreno") -> dict[str, Any]:
    """The fabricsim scenario of ``tcp_fattree_cpu K^3/4 CM 100 10 tcp`` (``cc: dctcp``: ``... dctcp``) for
    the flows of ``partner``."""
    scenario = {
        "name": f"htsim-fattree-k{k}",
        "seed": 1,
        "duration": "60s",
        "network": {
            "ethernet_overhead": "0B",
            "switch": {"latency": "0ns",
                       "buffer": {"model": "static", "port_size": f"{FATTREE_QUEUE_FRAMES * FATTREE_FRAME_BYTES}B"}},
        },
        "topology": {"kind": "fat_tree", "k": k, "link": {"rate": "10Gbps", "delay": "1us"}},
        "tcp": {"profile": "rfc", "cc": cc, "l2_header": "0B", "min_frame": "0B", "min_rto": "250ms",
                "delayed_ack": {"count": 1, "timeout": "200ms", "quickack": 0}},
        "traffic": [{"kind": "tcp_flows", "name": "perm",
                     "flows": [{"src": f"h{i}", "dst": f"h{d}", "size": f"{size}B"} for i, d in enumerate(partner)]}],
        "stats": {"queue_sample_interval": "0", "throughput_interval": "0"},
    }
    if cc == "dctcp":
        scenario["name"] += "-dctcp"
        scenario["tcp"]["dctcp_g"] = 1 / 16
        scenario["network"]["switch"]["ecn"] = {"threshold": f"{DCTCP_MARK_FRAMES * FATTREE_FRAME_BYTES}B"}
    return scenario


#: Pair name -> (quick) -> (fabricsim scenario, htsim driver arguments after the driver, files to write first).
Pair = Callable[[bool], tuple[dict[str, Any], list[str], dict[str, str]]]


def _incast(quick: bool) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    size = 5_000_000 if quick else 50_000_000
    cap = INCAST_WINDOW_FRAMES * INCAST_FRAME_BYTES
    args = [str(INCAST_SENDERS), str(size), str(INCAST_QUEUE_FRAMES), str(cap), "4000000000"]
    return incast_twin(size), args, {}


def fattree_size(quick: bool) -> int:
    """Bytes of each flow of the fat-tree pairs."""
    return 200_000 if quick else 2_000_000


def _fattree(k: int, dctcp: bool = False) -> Pair:
    def build(quick: bool) -> tuple[dict[str, Any], list[str], dict[str, str]]:
        hosts = k ** 3 // 4
        size = fattree_size(quick)
        partner = permutation(hosts, seed=k)
        name = f"perm_{hosts}n.cm"
        args = [str(hosts), name, str(FATTREE_QUEUE_FRAMES), "10", "dctcp" if dctcp else "tcp", "1",
                str(FATTREE_FRAME_BYTES)]
        twin = fattree_twin(k, partner, size, "dctcp" if dctcp else "newreno")
        return twin, args, {name: connection_matrix(partner, size)}

    return build


PAIRS: Dict[str, Pair] = {"incast-16": _incast,
                          **{f"fattree-k{k}{'-dctcp' if d else ''}": _fattree(k, d) for d in (False, True)
                             for k in (4, 8, 16)}}

#: Every pair by name: the timing pairs, then those that compare results (``spray-k8``).
ALL_PAIRS = [*PAIRS, "spray-k8"]


def parse_result(text: str) -> dict[str, str]:
    """The ``key=value`` fields of a driver's ``RESULT`` line (the last one in ``text``)."""
    lines = [line for line in text.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise ValueError("no RESULT line in the driver's output")
    return dict(field.split("=", 1) for field in lines[-1].split()[1:] if "=" in field)


def _timed(args: list[str], cwd: Path, env: Optional[dict[str, str]] = None) -> tuple[str, float, float]:
    """Run ``args``; its standard output, whole-process CPU seconds (user + system) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return proc.stdout, cpu, wall


def missing(directory: Path, names: Sequence[str]) -> list[str]:
    """The drivers of ``names`` that are not executables in ``directory``."""
    drivers = dict.fromkeys(DRIVERS[name] for name in names)
    return [str(directory / d) for d in drivers if not os.access(directory / d, os.X_OK)]


def _htsim_fields(out: str) -> dict[str, float]:
    fields = parse_result(out)
    return {"loop_cpu_s": float(fields["loop_cpu_s"]), "events": int(fields["events"]), "jct_s": float(fields["jct_s"])}


def compare(directory: Path, names: Sequence[str], quick: bool, rounds: int) -> list[dict[str, Any]]:
    """Every pair of ``names`` whose driver is built, ``rounds`` times A B A B; one record per pair."""
    results = []
    with tempfile.TemporaryDirectory(prefix="fabricsim-htsim-") as scratch:
        work = Path(scratch)
        for name in names:
            driver = directory / DRIVERS[name]
            if name not in PAIRS or not os.access(driver, os.X_OK):
                continue
            scenario, driver_args, files = PAIRS[name](quick)
            for filename, text in files.items():
                (work / filename).write_text(text, encoding="utf-8")
            runs = side_by_side(work, name, scenario, [str(driver), *driver_args], _htsim_fields, rounds)
            results.append(summarize(name, runs))
    return results


def side_by_side(work: Path, name: str, scenario: dict[str, Any], reference: list[str],
                 fields: Callable[[str], dict[str, float]], rounds: int) -> dict[str, list[dict[str, float]]]:
    """``rounds`` rounds of the reference simulator's command ``reference`` (``fields`` reads its
    ``loop_cpu_s``, ``events`` and ``jct_s`` from its output), fabricsim's core path and ``fabricsim
    run --no-report`` on ``scenario``, each in a process of its own in ``work``; per side, per round:
    whole-process CPU and wall seconds and what the side measured itself."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # timed as installed: the package's bytecode cached
    path = work / f"{name}.json"  # JSON is YAML: the scenario file both fabricsim processes load
    path.write_text(json.dumps(scenario), encoding="utf-8")
    core = [sys.executable, "-m", "fabricsim.bench.htsim", "--core", str(path)]
    cli = [sys.executable, "-m", "fabricsim", "run", str(path), "--no-report", "--no-progress",
           "--out", str(work / f"{name}-out")]
    runs: dict[str, list[dict[str, float]]] = {"reference": [], "core": [], "run": []}
    for _ in range(rounds):
        out, cpu, wall = _timed(reference, work, env)
        runs["reference"].append({"cpu_s": cpu, "wall_s": wall, **fields(out)})
        out, cpu, wall = _timed(core, work, env)
        runs["core"].append({"cpu_s": cpu, "wall_s": wall, **json.loads(out)})
        _, cpu, wall = _timed(cli, work, env)
        runs["run"].append({"cpu_s": cpu, "wall_s": wall})
    return runs


def summarize(name: str, runs: dict[str, list[dict[str, float]]], reference: str = "htsim") -> dict[str, Any]:
    """One record of :func:`side_by_side`'s rounds; the reference's fields are prefixed ``reference``."""
    def median(side: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[side])

    def ratios(side: str, key: str, ref_key: str) -> list[float]:
        return [round(f[key] / h[ref_key], 3) for f, h in zip(runs[side], runs["reference"]) if h[ref_key] > 0]

    return {
        "pair": name,
        "rounds": len(runs["reference"]),
        f"{reference}_events": runs["reference"][0]["events"],
        "fabricsim_events": int(runs["core"][0]["events"]),
        f"{reference}_jct_s": runs["reference"][0]["jct_s"],
        "fabricsim_jct_s": runs["core"][0]["jct_s"],
        f"{reference}_loop_cpu_s": round(median("reference", "loop_cpu_s"), 4),
        "fabricsim_loop_cpu_s": round(median("core", "loop_cpu_s"), 4),
        f"{reference}_process_cpu_s": round(median("reference", "cpu_s"), 4),
        "fabricsim_core_process_cpu_s": round(median("core", "cpu_s"), 4),
        "fabricsim_run_process_cpu_s": round(median("run", "cpu_s"), 4),
        # fabricsim / the reference, one per round (each round's runs are neighbours in time).
        "loop_cpu_ratio": ratios("core", "loop_cpu_s", "loop_cpu_s"),
        "core_process_cpu_ratio": ratios("core", "cpu_s", "cpu_s"),
        "run_process_cpu_ratio": ratios("run", "cpu_s", "cpu_s"),
    }


def core_path(path: str) -> dict[str, Any]:
    """fabricsim's core path in this process: load and validate the scenario file, build and run the core,
    collect its tables; the event count, the loop's CPU time and the job completion time (the last flow's
    end; every flow starts at 0)."""
    import array

    import fabricsim
    from fabricsim import _core

    scenario = fabricsim.load(path)
    sim = _core.Simulation(json.dumps(scenario.to_resolved()))
    started = time.thread_time()
    sim.run_until(2**63)
    loop_cpu = time.thread_time() - started
    out = sim.finish()
    dtype, data = out["tables"]["flows"]["end_ps"]
    ends = array.array("q", data)  # little-endian i64, as on every machine the core is built for
    return {"events": out["summary"]["events"], "loop_cpu_s": loop_cpu, "jct_s": max(ends, default=0) / 1e12}


def chosen_pairs(names: Optional[Sequence[str]], allowed: Sequence[str], peer: str, rounds: int) -> List[str]:
    """The pairs ``--pair`` names (all of ``allowed`` without any), checked with ``--rounds``: an unknown
    name or fewer than one round is refused naming the allowed values."""
    from fabricsim.errors import FabricsimError

    chosen = list(names) if names else list(allowed)
    unknown = [n for n in chosen if n not in allowed]
    if unknown:
        raise FabricsimError(f"unknown {peer} pair {unknown[0]!r}; allowed: {', '.join(allowed)}")
    if rounds < 1:
        raise FabricsimError(f"--rounds must be >= 1 (got {rounds})")
    return chosen


def main(directory: str, names: Optional[Sequence[str]], quick: bool, rounds: int, as_json: bool) -> int:
    """``fabricsim bench --htsim DIR``: the pairs whose drivers are built in ``DIR``; the others are
    skipped with the path that is missing."""
    chosen = chosen_pairs(names, list(ALL_PAIRS), "htsim", rounds)
    folder = Path(directory).expanduser()
    absent = missing(folder, chosen)
    skipped = [n for n in chosen if str(folder / DRIVERS[n]) in absent]
    results = compare(folder, chosen, quick, rounds)
    spray = []
    if "spray-k8" in chosen and "spray-k8" not in skipped:
        from fabricsim.bench import htsim_spray

        spray.append(htsim_spray.compare(folder))
    if as_json:
        print(json.dumps({"results": results, "spray": spray, "skipped": skipped, "missing": absent}, indent=2))
        return 0
    for path in absent:
        print(f"htsim: skipped {', '.join(n for n in skipped if str(folder / DRIVERS[n]) == path)}: {path} not "
              "found (build htsim and its drivers into DIR with its build.sh)", file=sys.stderr)
    if results:
        print_table(results)
    for result in spray:
        from fabricsim.bench import htsim_spray

        htsim_spray.print_table(result)
    return 0


def print_table(results: List[Dict[str, Any]], reference: str = "htsim", label: str = "htsim") -> None:
    """The records of :func:`summarize` as a table; ``label`` names the reference's column."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"fabricsim against {label}, same work (CPU s, median of rounds)")
    for col in ("pair", "measure", label, "fabricsim", "ratio per round"):
        table.add_column(col, justify="left" if col in ("pair", "measure") else "right")

    def span(values: Sequence[float]) -> str:
        return " ".join(f"{v:.2f}" if v >= 0.1 else f"{v:.2g}" for v in values) or "-"

    for r in results:
        table.add_row(r["pair"], "events", f"{r[f'{reference}_events']:,}", f"{r['fabricsim_events']:,}",
                      f"{r['fabricsim_events'] / max(r[f'{reference}_events'], 1):.3f}")
        table.add_row("", "job completion (ms)", f"{r[f'{reference}_jct_s'] * 1e3:.1f}",
                      f"{r['fabricsim_jct_s'] * 1e3:.1f}", "")
        table.add_row("", "event loop", f"{r[f'{reference}_loop_cpu_s']:.3f}", f"{r['fabricsim_loop_cpu_s']:.3f}",
                      span(r["loop_cpu_ratio"]))
        table.add_row("", "process: core path", f"{r[f'{reference}_process_cpu_s']:.3f}",
                      f"{r['fabricsim_core_process_cpu_s']:.3f}", span(r["core_process_cpu_ratio"]))
        table.add_row("", "process: run --no-report", "", f"{r['fabricsim_run_process_cpu_s']:.3f}",
                      span(r["run_process_cpu_ratio"]))
    Console().print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m fabricsim.bench.htsim")
    parser.add_argument("--core", required=True, metavar="FILE", help="run fabricsim's core path on FILE, print JSON")
    print(json.dumps(core_path(parser.parse_args().core)))
