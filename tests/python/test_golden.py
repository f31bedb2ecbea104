"""Golden outputs: every shipped scenario, run short with a fixed seed, must
reproduce its stored metric tables exactly.

The simulator is deterministic, so any difference is a change of behaviour:
either a defect (a refactoring that was meant to change nothing) or an
intended change of a model. In the second case refresh the snapshots and
review their diff like code:

    python -m pytest tests/python/test_golden.py --update-golden

Each snapshot (``tests/golden/<scenario>.txt``) is readable text: the summary
counters, one row per flow (packets, bytes, FCT, latency, transport counters),
drops by reason, per-link counters, queue high-water marks and the 99th
percentile of sampled queue occupancy, buffer, pool, ECN-mark and PFC tables,
delivered bytes per receiving host from the throughput bins, FCT per size
bucket and, for collective traffic, the ``collectives`` table. Figures that depend on the machine or on how the core
schedules its work rather than on what it simulates (wall time, events per
second, the number of events) are left out, so a faster event loop that
simulates the same thing keeps the snapshots unchanged.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Dict, List, Sequence

import numpy as np
import polars as pl
import pytest

import fabricsim
from fabricsim.bench.training import SHORT_RUNS

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
REFRESH = "python -m pytest tests/python/test_golden.py --update-golden"

#: Per shipped scenario: the overrides that make its run short (well under a
#: second each). Every scenario in scenarios/ must have an entry. The
#: profile-guided build trains on the same runs.
CASES: Dict[str, List[str]] = SHORT_RUNS
SEED = 1

#: Summary entries that measure the machine or the event loop's bookkeeping,
#: not the simulated network.
VOLATILE_SUMMARY = {"wall_time_s", "events_per_sec", "events"}


def _fmt(value: Any) -> str:
    """One cell: exact and stable (floats by their shortest round-trip repr)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value != value:
            return "nan"
        return repr(value)
    text = str(value)
    return text if text else '""'


def _table(title: str, frame: pl.DataFrame, drop: Sequence[str] = ()) -> List[str]:
    """A table as a header line and one whitespace-separated line per row.

    Columns that are null (or empty) in every row are left out, so a UDP run
    does not carry the TCP and RoCE columns; a column that becomes non-empty
    shows up in the diff as a new header entry.
    """
    frame = frame.drop([c for c in drop if c in frame.columns])
    keep = []
    for name in frame.columns:
        values = frame[name].to_list()
        if any(v is not None and v != "" for v in values):
            keep.append(name)
    lines = [f"[{title}] {frame.height} rows"]
    if frame.height == 0:
        return lines + [""]
    frame = frame.select(keep)
    rows = [[_fmt(v) for v in row] for row in frame.iter_rows()]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(keep)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(keep, widths)).rstrip())
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return lines + [""]


def _occupancy(samples: pl.DataFrame, keys: List[str], value: str, instants: int) -> pl.DataFrame:
    """Per key: the 99th percentile and maximum of ``value`` over all ``instants``
    sample times. The core records a queue (or pool) only while it is non-empty
    and once when it empties, so the instants it skipped count as zero."""
    if samples.height == 0 or instants <= 0:
        return pl.DataFrame()
    rows = []
    for key, group in samples.group_by(keys, maintain_order=True):
        recorded = group[value].to_numpy()
        full = np.concatenate([recorded, np.zeros(max(instants - recorded.size, 0), dtype=recorded.dtype)])
        rows.append({**dict(zip(keys, key)), "recorded": int(recorded.size),
                     f"p99_{value}": int(np.quantile(full, 0.99, method="higher")),
                     f"max_{value}": int(recorded.max())})
    return pl.DataFrame(rows).sort(keys)


def _throughput(bins: pl.DataFrame) -> pl.DataFrame:
    """Per receiving host: bins recorded, total bytes, busiest bin, first and last bin."""
    if bins.height == 0:
        return pl.DataFrame()
    return (
        bins.group_by("host")
        .agg(pl.len().alias("bins"), pl.col("bytes").sum().alias("bytes"), pl.col("bytes").max().alias("max_bin_bytes"),
             pl.col("time_ps").min().alias("first_ps"), pl.col("time_ps").max().alias("last_ps"))
        .sort("host")
    )


def render(scenario_name: str, overrides: Sequence[str]) -> str:
    """Run one shipped scenario short and render its metric tables as text."""
    sc = fabricsim.load(ROOT / "scenarios" / f"{scenario_name}.yaml", overrides=list(overrides))
    result = fabricsim.run(sc, seed=SEED)
    resolved = sc.to_resolved()
    interval = int(resolved.get("stats", {}).get("queue_sample_interval_ps", 0))
    duration = int(resolved["duration_ps"])
    instants = duration // interval + 1 if interval > 0 else 0

    lines = [
        f"# Golden output of scenarios/{scenario_name}.yaml, seed {SEED}, overrides: {' '.join(overrides) or '(none)'}",
        f"# Refresh (after an intended change of behaviour): {REFRESH}",
        "",
        "[summary]",
    ]
    for key in sorted(result.summary):
        if key not in VOLATILE_SUMMARY:
            lines.append(f"{key} = {_fmt(result.summary[key])}")
    lines.append("")
    lines += _table("flows", result.flows)
    lines += _table("fct", result.fct)
    lines += _table("drops", result.drops)
    lines += _table("links", result.links, drop=("rate_bps", "delay_ps"))
    lines += _table("queue_peaks", result.queue_peaks)
    lines += _table("queue_occupancy", _occupancy(result.queues, ["node", "port", "class"], "bytes", instants))
    lines += _table("buffers", result.buffers)
    lines += _table("pool_occupancy", _occupancy(result.pools, ["node", "pool"], "bytes", instants))
    lines += _table("throughput_by_host", _throughput(result.throughput))
    lines += _table("marks", result.marks)
    lines += _table("pauses", result.pauses)
    if result.collectives.height:
        lines += _table("collectives", result.collectives)
    return "\n".join(lines).rstrip() + "\n"


def test_every_shipped_scenario_has_a_golden_case():
    shipped = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml"))
    assert shipped and shipped == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_scenario_reproduces_its_golden_output(core, request, name):
    got = render(name, CASES[name])
    path = GOLDEN / f"{name}.txt"
    if request.config.getoption("--update-golden"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
        return
    if not path.is_file():
        pytest.fail(f"no golden output {path.relative_to(ROOT)}; create it with: {REFRESH}")
    want = path.read_text(encoding="utf-8")
    if got != want:
        diff = list(difflib.unified_diff(want.splitlines(), got.splitlines(), f"{path.name} (stored)",
                                         f"{path.name} (this build)", n=1, lineterm=""))
        shown = "\n".join(diff[:120]) + (f"\n... {len(diff) - 120} more diff lines" if len(diff) > 120 else "")
        pytest.fail(
            f"{name}: output differs from {path.relative_to(ROOT)}.\n{shown}\n"
            f"If the change of behaviour is intended, refresh with: {REFRESH}",
            pytrace=False,
        )
