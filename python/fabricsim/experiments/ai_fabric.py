"""AI-training fabric: collective iteration times under load balancing modes, with and without a failed link.

:func:`ai_fabric` runs a scenario with ``kind: collective`` traffic (the shipped
``scenarios/ai-rail-64gpu.yaml``: rail-local ring all-reduces beside a 64-GPU
all-to-all, background storage flows) over the grid

    network.switch.load_balancing in ``load_balancing`` (default ecmp, spray_random, adaptive)
    x failures in {none, ``fail_link`` down at ``fail_at``, routes moved ``detect`` later}

and, with ``transport`` (``tcp`` or ``roce``), every collective entry of the
scenario set to that transport (``traffic[i].transport``: over ``roce`` its
transfers are RDMA WRITEs, ``docs/models/collectives.md``), with the sweep
machinery (:func:`fabricsim.sweeps.run_sweep`: a process pool of
``workers``, a DuckDB catalog, resumable), then tabulates each point from its
run's tables:

- per collective algorithm and iteration (the ``collectives`` table; the
  entries of one algorithm together, e.g. one ring per rail): the slowest
  entry's time and its bus bandwidth, and the span from the first start to the
  last end; per training iteration, the span of all collectives' iteration k;
  the job time, first start to last end;
- per background TCP entry (every traffic entry that is not a collective and
  appears in the ``fct`` table): flows, median and p99 FCT, p99 slowdown;
- the largest buffer high-water mark of any switch, PFC pause frames and paused
  time, drops by reason, retransmission timeouts, conservation and buffer
  accounting.

Files in ``out_dir`` besides the sweep's (``catalog.duckdb``, ``points/``,
``sweep.parquet``, ``sweep.json``): ``ai_fabric.parquet`` (one row per point),
``ai_fabric_iterations.parquet`` (one row per point, collective and iteration)
and ``ai_fabric.html`` with its plots in ``plots/``
(:mod:`fabricsim.experiments.ai_fabric_report`). These are byte-identical
between two runs of the same grid (no wall times or paths in them).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import polars as pl

from fabricsim import units
from fabricsim.errors import ScenarioError
from fabricsim.schema import Scenario, load

__all__ = [
    "DETECT", "FAIL_AT", "FAIL_LINK", "FAILURES_PATH", "LB_PATH", "LOAD_BALANCING", "TRANSPORTS", "AiFabricOutcome",
    "ai_fabric", "failure_value", "transport_overrides",
]

LB_PATH = "network.switch.load_balancing"
FAILURES_PATH = "failures"
#: The transports a collective can run over (``traffic[i].transport``).
TRANSPORTS = ("tcp", "roce")
#: The modes compared by default: per-flow hashing, per-packet random spraying, per-packet least-queued port.
LOAD_BALANCING = ("ecmp", "spray_random", "adaptive")
MODES = ("ecmp", "spray_random", "spray_rr", "flowlet", "adaptive")
FAIL_LINK = ("rail0", "spine0")
FAIL_AT = "100us"
DETECT = "50us"

#: Core drop reasons always given a column (others seen in a run are added).
DROP_REASONS = ("link_down", "no_route", "buffer_full")

_ALGORITHMS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
_LABEL = {"all_reduce": "all-reduce", "reduce_scatter": "reduce-scatter", "all_gather": "all-gather",
          "all_to_all": "all-to-all"}


@dataclass
class AiFabricOutcome:
    """What :func:`ai_fabric` ran and wrote."""

    out_dir: Path
    table: pl.DataFrame
    iterations: pl.DataFrame
    files: list[Path] = field(default_factory=list)
    ran: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


def _ps(value: Union[str, int]) -> int:
    """A time given with a unit (``"100us"``), or as whole picoseconds."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else units.parse_time(value)


def failure_value(link: Sequence[str], at: Union[str, int], detect: Union[str, int]) -> str:
    """The ``failures`` value (YAML) that takes ``link`` down at ``at`` with routes moved ``detect`` later
    (times with a unit, or whole picoseconds)."""
    a, b = link
    return f"[{{between: [{a}, {b}], at: {units.format_time(_ps(at))}, detect: {units.format_time(_ps(detect))}}}]"


def _failure_label(link: Sequence[str], at: int, detect: int) -> str:
    return f"{link[0]}-{link[1]} down at {units.format_time(at)} (detect {units.format_time(detect)})"


def _slug(name: str) -> str:
    return re.sub(r"\W+", "_", name)


def _time_ps(name: str, value: Union[str, int]) -> int:
    if isinstance(value, bool):
        raise ScenarioError([(name, f"expected a time like '100us', got {value!r}")])
    try:
        return _ps(value)
    except (ValueError, TypeError) as exc:
        raise ScenarioError([(name, str(exc))]) from None


def _check_overrides(path: str, overrides: Sequence[str]) -> None:
    for override in overrides:
        target = override.partition("=")[0].strip().replace("[", ".").replace("]", "")
        balancing = target == LB_PATH or target.startswith(LB_PATH + ".")
        if balancing or target.split(".")[0] == FAILURES_PATH:
            varied, options = ((LB_PATH, "--load-balancing (load_balancing=)") if balancing
                               else (FAILURES_PATH, "--fail-link, --fail-at, --detect (fail_link=, fail_at=, detect=)"))
            raise ScenarioError([("overrides", f"{override!r}: the experiment sets {varied} itself; "
                                               f"choose with {options}")], path)


def _check_inputs(sc: Scenario, modes: Sequence[str], link: Sequence[str]) -> None:
    if not modes:
        raise ScenarioError([("load_balancing", f"give at least one mode; allowed: {', '.join(MODES)}")], sc.source)
    for i, mode in enumerate(modes):
        if mode not in MODES:
            raise ScenarioError([("load_balancing", f"unknown value {mode!r}; allowed: {', '.join(MODES)}")],
                                sc.source)
        if mode in modes[:i]:
            raise ScenarioError([("load_balancing", f"{mode!r} is given twice")], sc.source)
    if len(link) != 2 or not all(isinstance(n, str) and n for n in link):
        raise ScenarioError([("fail_link", f"expected two node names, got {list(link)!r}")], sc.source)
    if not any(t.kind == "collective" for t in sc.traffic):
        raise ScenarioError([("traffic", "the experiment times collectives: the scenario needs at least one "
                                         "`kind: collective` entry")], sc.source)


def transport_overrides(sc: Scenario, transport: Optional[str]) -> list[str]:
    """The overrides that put every collective entry of ``sc`` on ``transport`` (none for ``None``: the
    scenario's own)."""
    if transport is None:
        return []
    if transport not in TRANSPORTS:
        raise ScenarioError([("transport", f"unknown value {transport!r}; allowed: {', '.join(TRANSPORTS)}")],
                            sc.source)
    return [f"traffic.{i}.transport={transport}" for i, t in enumerate(sc.traffic) if t.kind == "collective"]


def _check_failure(path: str, overrides: Sequence[str], mode: str, value: str) -> None:
    """The scenario with the failure builds (the link exists); its issues are named by the experiment's parameters."""
    from fabricsim.runner import check

    try:
        check(load(path, [*overrides, f"{LB_PATH}={mode}", f"{FAILURES_PATH}={value}"]))
    except ScenarioError as exc:
        names = {"between": "fail_link", "node": "fail_link", "at": "fail_at", "detect": "detect"}
        issues = []
        for issue in exc.issues:
            m = re.match(r"failures\[0\]\.?(\w+)?", issue.path)
            issues.append((names.get(m.group(1) or "between", "fail_link"), issue.message) if m else issue)
        raise ScenarioError(issues, exc.source) from None


def ai_fabric(
    scenario: Union[str, "os.PathLike[str]"],
    out_dir: Union[str, "os.PathLike[str]"],
    *,
    load_balancing: Sequence[str] = LOAD_BALANCING,
    fail_link: Sequence[str] = FAIL_LINK,
    fail_at: Union[str, int] = FAIL_AT,
    detect: Union[str, int] = DETECT,
    overrides: Sequence[str] = (),
    transport: Optional[str] = None,
    workers: Optional[int] = None,
    backend: str = "local",
    progress: bool = False,
) -> AiFabricOutcome:
    """Run the grid (every mode of ``load_balancing``, without and with the failure) and write the table and page.

    ``transport`` (``tcp`` or ``roce``) sets every collective entry's
    ``transport`` (after ``overrides``); ``None`` keeps the scenario's.

    Raises :class:`~fabricsim.errors.ScenarioError` naming ``load_balancing``,
    ``fail_link``, ``fail_at``, ``detect``, ``overrides``, ``transport`` or
    ``workers`` for a bad parameter (before anything runs), or the scenario's field.
    """
    from fabricsim.sweeps import run_sweep

    path = str(Path(scenario))
    _check_overrides(path, overrides)
    sc = load(path, list(overrides))
    extra = transport_overrides(sc, transport)
    if extra:
        overrides = [*overrides, *extra]
        sc = load(path, list(overrides))
    modes = list(load_balancing)
    _check_inputs(sc, modes, fail_link)
    at_ps, detect_ps = _time_ps("fail_at", fail_at), _time_ps("detect", detect)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ScenarioError([("workers", f"must be >= 1 (got {workers!r})")], sc.source)
    failed_value = failure_value(fail_link, at_ps, detect_ps)
    _check_failure(path, overrides, modes[0], failed_value)
    failures = {"[]": "none", failed_value: _failure_label(fail_link, at_ps, detect_ps)}

    grid = [(LB_PATH, modes), (FAILURES_PATH, list(failures))]
    sweep = run_sweep(path, grid, out_dir, overrides=overrides, workers=workers, backend=backend, progress=progress,
                      report=False)
    status = {row["point_id"]: (row["status"], row["error"]) for row in sweep.table.iter_rows(named=True)}
    rows, iterations, cdfs = [], [], []
    for point in sweep.points:
        labels = {"load_balancing": point.params[LB_PATH], "failure": failures[point.params[FAILURES_PATH]]}
        state, error = status.get(point.id, ("failed", "no record"))
        directory = sweep.out_dir / "points" / point.id
        if state == "done":
            row, its, cdf = _point(sc, directory)
        else:
            row, its, cdf = {}, [], None
        rows.append({**labels, "point_id": point.id, "seed": point.seed, "status": state, "error": error, **row})
        iterations.extend({**labels, **it} for it in its)
        cdfs.append((labels, cdf))
    table = _table(rows, sc)
    details = [{k: r.get(k, []) for k in ("buffer_peaks", "drop_sites")} for r in rows]
    its = pl.DataFrame(iterations, schema=_ITERATION_SCHEMA) if iterations else pl.DataFrame(schema=_ITERATION_SCHEMA)
    out = sweep.out_dir
    files = []
    for name, frame in (("ai_fabric", table), ("ai_fabric_iterations", its)):
        target = out / f"{name}.parquet"
        frame.write_parquet(target, compression="zstd")
        files.append(target)
    from fabricsim.experiments.ai_fabric_report import render_page
    from fabricsim.outputs.report.html import write_plot_files

    page = render_page(table, its, cdfs, details, sc, {a: _LABEL[a] for a in _algorithms(sc)},
                       [(name, _slug(name)) for name in _background_names(sc)], modes, failures, overrides)
    target = out / "ai_fabric.html"
    target.write_text(page, encoding="utf-8")
    files.append(target)
    files.extend(write_plot_files(page, out / "plots"))
    return AiFabricOutcome(out, table, its, files, ran=sweep.ran, skipped=sweep.skipped + sweep.adopted,
                           failed=sweep.failed, errors=list(sweep.errors))


# --------------------------------------------------------------------------
# One point's figures

_ITERATION_SCHEMA = {
    "load_balancing": pl.String, "failure": pl.String, "collective": pl.String, "algorithm": pl.String,
    "entries": pl.UInt32, "iteration": pl.UInt32, "completed": pl.Boolean, "start_ps": pl.Int64, "end_ps": pl.Int64,
    "span_ps": pl.Int64, "time_ps": pl.Int64, "busbw_gbps": pl.Float64, "slowest": pl.String,
}


def _read(directory: Path, name: str) -> pl.DataFrame:
    target = directory / f"{name}.parquet"
    return pl.read_parquet(target) if target.is_file() else pl.DataFrame()


def _background_names(sc: Scenario) -> list[str]:
    return [t.name for t in sc.traffic if t.kind != "collective" and getattr(t, "name", None)]


def _algorithms(sc: Scenario) -> list[str]:
    seen = {t.algorithm for t in sc.traffic if t.kind == "collective"}
    return [a for a in _ALGORITHMS if a in seen]


def _point(sc: Scenario, directory: Path) -> tuple[dict[str, Any], list[dict[str, Any]], Optional[dict[str, Any]]]:
    summary = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
    coll = _read(directory, "collectives")
    row: dict[str, Any] = {
        "conservation_ok": bool(summary.get("conservation_ok")),
        "buffer_accounting_ok": bool(summary.get("buffer_accounting_ok")),
        "drain_limit_reached": bool(summary.get("drain_limit_reached")),
        "collectives_completed": bool(coll.height) and bool(coll["completed"].all()),
    }
    iterations: list[dict[str, Any]] = []
    # Per collective entry and iteration (as in the collectives table), then per algorithm: its entries together.
    for entry in coll.iter_rows(named=True):
        iterations.append({
            "collective": entry["name"], "algorithm": entry["algorithm"], "entries": 1, "iteration": entry["iteration"],
            "completed": entry["completed"], "start_ps": entry["start_ps"], "end_ps": entry["end_ps"],
            "span_ps": entry["time_ps"], "time_ps": entry["time_ps"], "busbw_gbps": entry["busbw_gbps"],
            "slowest": entry["slowest_rank"],
        })
    for algorithm in _algorithms(sc):
        mine = coll.filter(pl.col("algorithm") == algorithm)
        times, busbw = [], []
        for (k,), group in sorted(mine.group_by(["iteration"]), key=lambda g: g[0]):
            done = bool(group["completed"].all())
            slowest = group.sort(["time_ps", "name"], descending=[True, False], nulls_last=True).row(0, named=True)
            start, end = group["start_ps"].min(), group["end_ps"].max()
            record = {
                "collective": _LABEL[algorithm], "algorithm": algorithm, "entries": group.height, "iteration": k,
                "completed": done, "start_ps": start, "end_ps": end if done else None,
                "span_ps": end - start if done and start is not None else None,
                "time_ps": slowest["time_ps"] if done else None,
                "busbw_gbps": slowest["busbw_gbps"] if done else None,
                "slowest": slowest["name"] if done else None,
            }
            iterations.append(record)
            if done:
                times.append(record["time_ps"])
                busbw.append(record["busbw_gbps"])
        row[f"{algorithm}_time_mean_ps"] = sum(times) / len(times) if times else None
        row[f"{algorithm}_time_max_ps"] = max(times) if times else None
        row[f"{algorithm}_busbw_min_gbps"] = min(busbw) if busbw else None
        row[f"{algorithm}_busbw_mean_gbps"] = sum(busbw) / len(busbw) if busbw else None
    spans = []
    if coll.height and row["collectives_completed"]:
        for (k,), group in sorted(coll.group_by(["iteration"]), key=lambda g: g[0]):
            spans.append(int(group["end_ps"].max() - group["start_ps"].min()))
            iterations.append({
                "collective": "training iteration", "algorithm": "all", "entries": group.height, "iteration": k,
                "completed": True, "start_ps": group["start_ps"].min(), "end_ps": group["end_ps"].max(),
                "span_ps": spans[-1], "time_ps": spans[-1], "busbw_gbps": None, "slowest": None,
            })
        row["job_time_ps"] = int(coll["end_ps"].max() - coll["start_ps"].min())
    else:
        row["job_time_ps"] = None
    row["iteration_time_max_ps"] = max(spans) if spans else None
    row["iteration_time_mean_ps"] = sum(spans) / len(spans) if spans else None

    fct = _read(directory, "fct")
    flows = _read(directory, "flows")
    cdf: dict[str, Any] = {}
    for name in _background_names(sc):
        stats = fct.filter((pl.col("traffic") == name) & (pl.col("bucket") == "all")) if fct.height else fct
        slug = _slug(name)
        hit = stats.row(0, named=True) if stats.height else {}
        row[f"{slug}_flows"] = hit.get("count")
        row[f"{slug}_p50_fct_ps"] = hit.get("median_fct_ps")
        row[f"{slug}_p99_fct_ps"] = hit.get("p99_fct_ps")
        row[f"{slug}_p99_slowdown"] = hit.get("p99_slowdown")
        if flows.height:
            cdf[name] = flows.filter((pl.col("name") == name) & pl.col("fct_ps").is_not_null())["fct_ps"].to_numpy()

    buffers = _read(directory, "buffers")
    if buffers.height:
        top = buffers.sort(["high_water_bytes", "node"], descending=[True, False]).row(0, named=True)
        row["buffer_peak_bytes"], row["buffer_peak_node"] = int(top["high_water_bytes"]), top["node"]
        per_node = buffers.group_by("node").agg(pl.col("high_water_bytes").max()).sort(
            ["high_water_bytes", "node"], descending=[True, False])
        row["buffer_peaks"] = per_node.head(3).to_dicts()
    else:
        row["buffer_peak_bytes"], row["buffer_peak_node"], row["buffer_peaks"] = None, None, []
    row["pfc_pause_frames"] = summary.get("pfc_pause_frames_sent")
    row["pfc_paused_ps"] = summary.get("pfc_paused_ps")
    row["packets_dropped"] = summary.get("packets_dropped")
    row["packets_trimmed"] = summary.get("packets_trimmed", 0)
    drops = _read(directory, "drops")
    row["drops"] = drops.group_by("reason").agg(pl.col("packets").sum()).sort("reason").to_dicts() if drops.height else []
    links = _read(directory, "links")
    peers = ({(a, int(p)): b for a, p, b in links.select("src", "src_port", "dst").iter_rows()}
             if links.height else {})
    row["drop_sites"] = [
        {**d, "where": f"{d['node']} -> {peers[(d['node'], d['port'])]}" if (d["node"], d["port"]) in peers
         else f"{d['node']} port {d['port']}"}
        for d in (drops.group_by("reason", "node", "port").agg(pl.col("packets").sum())
                  .sort(["reason", "node", "port"]).to_dicts() if drops.height else [])
    ]
    for column in ("timeouts", "retransmits", "spurious_retransmits", "reordered_packets"):
        row[column] = int(flows[column].sum()) if flows.height and column in flows.columns else None
    row["events"] = summary.get("events")
    row["sim_time_ps"] = summary.get("sim_time_ps")
    return row, iterations, cdf


def _table(rows: list[dict[str, Any]], sc: Scenario) -> pl.DataFrame:
    """One row per point with a fixed schema (a failed point's figures are null)."""
    reasons = sorted({d["reason"] for r in rows for d in r.get("drops", [])} | set(DROP_REASONS))
    schema: dict[str, Any] = {
        "load_balancing": pl.String, "failure": pl.String, "point_id": pl.String, "seed": pl.UInt64,
        "status": pl.String, "error": pl.String, "conservation_ok": pl.Boolean, "buffer_accounting_ok": pl.Boolean,
        "drain_limit_reached": pl.Boolean, "collectives_completed": pl.Boolean, "job_time_ps": pl.Int64,
        "iteration_time_max_ps": pl.Int64, "iteration_time_mean_ps": pl.Float64,
    }
    for algorithm in _algorithms(sc):
        schema.update({f"{algorithm}_time_mean_ps": pl.Float64, f"{algorithm}_time_max_ps": pl.Int64,
                       f"{algorithm}_busbw_min_gbps": pl.Float64, f"{algorithm}_busbw_mean_gbps": pl.Float64})
    for name in _background_names(sc):
        slug = _slug(name)
        schema.update({f"{slug}_flows": pl.UInt64, f"{slug}_p50_fct_ps": pl.Float64, f"{slug}_p99_fct_ps": pl.Float64,
                       f"{slug}_p99_slowdown": pl.Float64})
    schema.update({"buffer_peak_bytes": pl.Int64, "buffer_peak_node": pl.String, "pfc_pause_frames": pl.UInt64,
                   "pfc_paused_ps": pl.UInt64, "packets_dropped": pl.UInt64, "packets_trimmed": pl.UInt64})
    schema.update({f"drops_{reason}": pl.UInt64 for reason in reasons})
    schema.update({"timeouts": pl.UInt64, "retransmits": pl.UInt64, "spurious_retransmits": pl.UInt64,
                   "reordered_packets": pl.UInt64, "events": pl.UInt64, "sim_time_ps": pl.UInt64})
    records = []
    for r in rows:
        record = {name: r.get(name) for name in schema}
        if r.get("status") == "done":
            by_reason = {d["reason"]: d["packets"] for d in r.get("drops", [])}
            record.update({f"drops_{reason}": by_reason.get(reason, 0) for reason in reasons})
        records.append(record)
    return pl.DataFrame(records, schema=schema, strict=False)
