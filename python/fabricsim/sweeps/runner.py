"""Parameter sweeps: a full grid of ``--set`` overrides x repeats, run in parallel,
recorded in a DuckDB catalog, resumable.

Layout of the output directory ``DIR``::

    DIR/catalog.duckdb        one row per point (table ``points``), with its timings
    DIR/points/<id>/          the point's run outputs (summary.json, timing.json, *.parquet, point.json last)
    DIR/sweep.parquet         one row per point of the current grid: parameters, seed, status, metrics
    DIR/sweep.json            what ``fabricsim report DIR`` needs (grid paths, axes, title, --set overrides)
    DIR/report.html           the sweep report (fabricsim.sweeps.report)

A point is identified by its parameters, seed, the sweep's fixed ``--set``
overrides and the scenario file's contents (an edited file reruns every point). A second invocation skips points whose status is ``done`` (and
whose files are there, recorded by this build of fabricsim: :mod:`fabricsim.build`), adopts points whose ``point.json`` was written before an
interruption, and reruns ``failed`` and unfinished ones (the loop of
:mod:`fabricsim.sweeps.loop`, shared with reproductions). Only the parent
process writes the catalog, as each point finishes.

Paths in ``sweep.parquet`` and the catalog are relative to ``DIR``, and
machine-dependent figures (wall time) are kept in ``timing.json`` files and the
catalog only: the same sweep gives byte-identical files everywhere but in
``catalog.duckdb`` (timestamps, wall times, and DuckDB's own file layout) and
``timing.json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from fabricsim import build, extensions
from fabricsim.schema import load
from fabricsim.sweeps.backends import local_backend, ray_backend
from fabricsim.sweeps.catalog import BASE_COLUMNS, INTEGER_METRICS, TIMING_COLUMNS, Catalog, grid_number
from fabricsim.sweeps.grid import Point, SweepError, plan_points
from fabricsim.sweeps.loop import PointJob, run_points
from fabricsim.sweeps.report import summary_table, write_report

__all__ = ["SweepOutcome", "run_sweep"]


@dataclass
class SweepOutcome:
    out_dir: Path
    points: list[Point]
    ran: int = 0
    skipped: int = 0
    adopted: int = 0
    failed: int = 0
    table: Any = None
    report: Optional[Path] = None
    errors: list[str] = field(default_factory=list)


def _adopt(marker: Path, point: Point) -> Optional[dict[str, Any]]:
    """A finished point's record from its ``point.json``, if it matches ``point``
    (file names in it are relative to the point's directory)."""
    try:
        record = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("status") != "done" or record.get("seed") != point.seed or record.get("build") != build.fingerprint():
        return None
    if not all((marker.parent / f).exists() for f in record.get("files", [])):
        return None
    timing = marker.parent / "timing.json"
    try:
        record["timing"] = json.loads(timing.read_text(encoding="utf-8")) if timing.is_file() else {}
    except (OSError, ValueError):
        record["timing"] = {}
    return record


def run_sweep(
    scenario: str | os.PathLike[str],
    grid: Sequence[tuple[str, Sequence[str]]],
    out_dir: str | os.PathLike[str],
    *,
    repeats: int = 1,
    overrides: Sequence[str] = (),
    backend: str = "local",
    workers: Optional[int] = None,
    ray_address: Optional[str] = None,
    progress: bool = False,
    report: bool = True,
    x: Optional[str] = None,
    series: Optional[str] = None,
) -> SweepOutcome:
    """Run (or resume) a sweep; see the module docstring for the files it writes.

    ``overrides`` are ``--set`` overrides applied to every point before its grid values.
    """
    scenario_path = str(Path(scenario).resolve())
    base = load(scenario_path, list(overrides))  # validates the file and overrides before anything runs
    python_cc = extensions.python_cc_used(base) or next(
        (str(v) for p, values in grid if p.rpartition(".")[2] == "cc" for v in values if v in extensions.python_cc_names()),
        None,
    )
    if python_cc is not None:
        raise SweepError(
            f"tcp.cc: {python_cc!r} is a Python controller registered in this process, and a sweep runs its points in "
            "worker processes, which do not have it; register it in Rust (docs/extending/congestion-control.md) "
            "or run the points with fabricsim.run in this process"
        )
    clash = [p for p, _ in grid if p in BASE_COLUMNS or p in INTEGER_METRICS or p in TIMING_COLUMNS
             or p.startswith("fct_")]
    if clash:
        raise SweepError(f"--grid {clash[0]}: the name is taken by a catalog column")
    fixed_paths = {o.partition("=")[0].strip() for o in overrides}
    both = [p for p, _ in grid if p in fixed_paths]
    if both:
        raise SweepError(f"--grid {both[0]}: also given with --set")
    digest = hashlib.sha256(Path(scenario_path).read_bytes()).hexdigest()[:16]
    points = plan_points(grid, repeats, base.seed, overrides, digest)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    workers = max(1, workers or min(len(points), os.cpu_count() or 1))
    if backend == "local":
        execute = local_backend(workers)
    elif backend == "ray":
        execute = ray_backend(ray_address, workers)
    else:
        raise SweepError(f"unknown backend {backend!r}; allowed: local, ray")

    catalog = Catalog(directory / "catalog.duckdb")
    outcome = SweepOutcome(directory, points)
    try:
        for path, _ in grid:
            catalog.ensure_column(path, "VARCHAR")
            catalog.ensure_column(f"{path}__num", "DOUBLE")

        def row(point: Point, record: dict[str, Any]) -> dict[str, Any]:
            values = {
                "point_id": point.id,
                "scenario": scenario_path,
                "params": json.dumps(point.params, sort_keys=True),
                "repeat": point.repeat,
                "seed": point.seed,
                "out_dir": f"points/{point.id}",
                **point.params,
                **{f"{path}__num": grid_number(value) for path, value in point.params.items()},
                "status": record["status"],
                "error": record.get("error"),
                "updated_at": time.time(),
            }
            if record["status"] != "running":
                values.update(
                    files=json.dumps([f"points/{point.id}/{name}" for name in record.get("files", [])]),
                    metrics=json.dumps(record.get("metrics", {}), sort_keys=True, default=str),
                )
                values.update(record.get("metrics", {}))
                values.update({name: record.get("timing", {}).get(name) for name in TIMING_COLUMNS})
            return values

        job = PointJob(
            title="sweep",
            adopt=lambda p: _adopt(directory / "points" / p.id / "point.json", p),
            row=row,
            task=lambda p: (scenario_path, p.overrides, p.seed, str(directory / "points" / p.id)),
            describe=lambda p: " ".join(f"{k}={v}" for k, v in p.params.items()) + f" seed {p.seed}",
        )
        counts = run_points(catalog, points, job, execute, progress)
        outcome.ran, outcome.skipped, outcome.adopted = counts.ran, counts.skipped, counts.adopted
        outcome.failed, outcome.errors = counts.failed, counts.errors

        rows = catalog.rows([p.id for p in points])
    finally:
        catalog.close()

    order = {p.id: i for i, p in enumerate(points)}
    rows.sort(key=lambda r: order[r["point_id"]])
    table = summary_table(rows, [p for p, _ in grid])
    table.write_parquet(directory / "sweep.parquet", compression="zstd")
    # What `fabricsim report DIR` needs to rebuild the report without rerunning.
    meta = {"grid": [p for p, _ in grid], "x": x, "series": series, "title": f"{base.name} sweep",
            "set": list(overrides)}
    (directory / "sweep.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    outcome.table = table
    if report:
        outcome.report = write_report(table, [p for p, _ in grid], directory / "report.html", x=x, series=series,
                                      title=f"{base.name} sweep")
    return outcome
