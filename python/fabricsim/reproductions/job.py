"""Running a reproduction: every point of the chosen tests, in a process pool or
on Ray, recorded in the sweep catalog (``catalog.duckdb``) so that a second
invocation skips what is done; then the tables, the page and the Parquet files.

Layout of the output directory ``DIR``::

    DIR/catalog.duckdb            one row per point (table ``points``): test, params, status
    DIR/points/<id>/<table>.parquet, point.json (written last)
    DIR/<test>__<table>.parquet   every point's rows of that table, in point order
    DIR/report.html               the self-contained page

A point is keyed by its test, parameters, scale and the contents of the scenario
files its test runs (:func:`point_id`): after an edit of one of those files the
same ``--out`` reruns the points that use it, and a point recorded by another
build of fabricsim (:mod:`fabricsim.build`: the core or a model changed) is run
again. The resumable loop is the sweeps'
(:mod:`fabricsim.sweeps.loop`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from fabricsim import build
from fabricsim.reproductions.base import ReproduceError, data_dir
from fabricsim.sweeps.loop import PointJob, run_points

__all__ = ["ReproduceError", "Outcome", "RPoint", "collect", "execute_point", "point_id", "run_reproduction"]


@dataclass(frozen=True)
class RPoint:
    test: str
    params: dict[str, Any]
    id: str
    seed: int = 1
    #: (assumption name, index in its space) of a point run to explain claims; None for a prediction.
    explain: Optional[tuple[str, int]] = None


@dataclass
class Outcome:
    out_dir: Path
    points: list[RPoint]
    ran: int = 0
    skipped: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    tables: dict[str, Any] = field(default_factory=dict)
    #: (assumption name, index) -> the tables of the assumption's points (``<test>/<table>``).
    explanations: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    page: Optional[Path] = None
    full: bool = False
    tests: Optional[list[str]] = None
    #: CPU seconds and number of the points run by this call, per test and explanation setting
    #: (``fct``, ``fct · <assumption> #<index>``).
    cpu: dict[str, tuple[int, float]] = field(default_factory=dict)


def scenario_digest(report: Any, test: Any) -> dict[str, str]:
    """SHA-256 of each scenario file the points of ``test`` read (``Test.scenarios``;
    every YAML file of the report's folder but ``sweep.yaml`` when it names none)."""
    folder = data_dir(report.name)
    not_scenarios = ("sweep.yaml", "claims.yaml")
    names = list(test.scenarios) or sorted(p.name for p in folder.glob("*.yaml") if p.name not in not_scenarios)
    digest = {}
    for name in names:
        try:
            digest[name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        except OSError as exc:
            raise ReproduceError(f"{report.name}: scenario file {name} of test {test.name}: {exc.strerror}") from None
    return digest


def point_id(report: str, test: str, params: dict[str, Any], full: bool,
             scenarios: Optional[dict[str, str]] = None) -> str:
    """The point's key: its report, test, parameters, scale and the contents of the
    scenario files it runs, so that editing one of them reruns its points."""
    key = {"report": report, "test": test, "params": params, "full": full}
    if scenarios:
        key["scenarios"] = scenarios
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def plan(report: Any, full: bool, tests: Optional[Sequence[str]] = None,
         select: Optional[Callable[[str, dict[str, Any]], bool]] = None, explain: bool = False) -> list[RPoint]:
    """The points of the chosen tests (all when ``tests`` is empty) that ``select(test, params)`` keeps;
    with ``explain``, then the points of the report's assumptions for those tests: each point of the
    assumption's test that its ``only`` matches, once per setting of its space."""
    names = [t.name for t in report.tests]
    for t in tests or ():
        if t not in names:
            raise ReproduceError(f"--test {t}: unknown test of {report.name}; allowed: {', '.join(names)}")
    out = []
    for t in report.tests:
        if tests and t.name not in tests:
            continue
        digest = scenario_digest(report, t)
        for params in t.points(full):
            if select is not None and not select(t.name, params):
                continue
            out.append(RPoint(t.name, params, point_id(report.name, t.name, params, full, digest)))
    if explain:
        for a in report.assumptions:
            if tests and a.test not in tests:
                continue
            t = report.test(a.test)
            digest = scenario_digest(report, t)
            base = [p for p in t.points(full) if all(p.get(k) == v for k, v in a.only.items())]
            for index, (_, settings) in enumerate(a.space):
                for params in base:
                    changed = {**params, "assume": dict(settings)}
                    out.append(RPoint(t.name, changed, point_id(report.name, t.name, changed, full, digest),
                                      explain=(a.name, index)))
    return out


def execute_point(report_name: str, test: str, params: dict[str, Any], full: bool, out_dir: str) -> dict[str, Any]:
    """Run one point in a worker and write its tables; never raises (errors are returned)."""
    import polars as pl

    from fabricsim.reproductions.registry import get

    started, cpu_started = time.perf_counter(), time.process_time()
    directory = Path(out_dir)
    try:
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        rows = get(report_name).test(test).run(dict(params), full)
        files = []
        for name, table_rows in rows.items():
            frame = pl.DataFrame(table_rows, infer_schema_length=None)
            frame.write_parquet(directory / f"{name}.parquet")
            files.append(f"{name}.parquet")
        record = {"status": "done", "error": None, "files": files, "seed": 1, "metrics": {},
                  "build": build.fingerprint()}
        marker = directory / "point.json"
        marker.with_suffix(".tmp").write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
        os.replace(marker.with_suffix(".tmp"), marker)
    except Exception as exc:  # one failed point never stops the job
        message = str(exc).strip().replace("\n", "; ") or type(exc).__name__
        record = {"status": "failed", "error": f"{type(exc).__name__}: {message}", "files": [], "seed": 1,
                  "metrics": {}}
    record["elapsed_s"] = time.perf_counter() - started
    # The worker process's CPU (all its threads) while it ran the point: what the point cost.
    record["cpu_s"] = time.process_time() - cpu_started
    return record


def _adopt(directory: Path) -> Optional[dict[str, Any]]:
    try:
        record = json.loads((directory / "point.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("status") != "done" or record.get("build") != build.fingerprint():
        return None
    if not all((directory / f).exists() for f in record.get("files", [])):
        return None
    return record


def run_reproduction(
    name: str,
    out_dir: str | os.PathLike[str],
    *,
    full: bool = False,
    tests: Optional[Sequence[str]] = None,
    backend: str = "local",
    workers: Optional[int] = None,
    ray_address: Optional[str] = None,
    progress: bool = False,
    page: bool = True,
    select: Optional[Callable[[str, dict[str, Any]], bool]] = None,
    explain: bool = True,
) -> Outcome:
    """Run (or resume) reproduction ``name`` into ``out_dir``; see the module docstring."""
    from fabricsim.reproductions.registry import get
    from fabricsim.sweeps.backends import local_backend, ray_backend
    from fabricsim.sweeps.catalog import Catalog

    report = get(name)
    points = plan(report, full, tests, select, explain=explain and select is None)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    workers = max(1, workers or min(len(points) or 1, os.cpu_count() or 1))
    if backend == "local":
        execute = local_backend(workers, execute_point)
    elif backend == "ray":
        execute = ray_backend(ray_address, workers, execute_point)
    else:
        raise ReproduceError(f"--backend: unknown value {backend!r}; allowed: local, ray")
    outcome = Outcome(directory, points, full=full, tests=list(tests) if tests else None)
    catalog = Catalog(directory / "catalog.duckdb")
    try:
        catalog.ensure_column("test", "VARCHAR")
        # What each point cost when it ran here (empty for points adopted from an earlier run): the
        # catalog's, not the tables' (a run's outputs stay the same bytes whatever the machine).
        catalog.ensure_column("explain", "VARCHAR")
        catalog.ensure_column("cpu_s", "DOUBLE")
        catalog.ensure_column("wall_s", "DOUBLE")

        def row(point: RPoint, record: dict[str, Any]) -> dict[str, Any]:
            explain = None if point.explain is None else f"{point.explain[0]} #{point.explain[1]}"
            if record["status"] == "done" and record.get("cpu_s") is not None:  # run by this call
                label = point.test + ("" if explain is None else f" · {explain}")
                n, seconds = outcome.cpu.get(label, (0, 0.0))
                outcome.cpu[label] = (n + 1, seconds + record["cpu_s"])
            return {
                "point_id": point.id, "scenario": name, "test": point.test,
                "params": json.dumps(point.params, sort_keys=True), "repeat": 0, "seed": point.seed,
                "status": record["status"], "error": record.get("error"), "out_dir": f"points/{point.id}",
                "files": json.dumps([f"points/{point.id}/{f}" for f in record.get("files", [])]),
                "metrics": "{}", "updated_at": time.time(),
                "explain": explain, "cpu_s": record.get("cpu_s"), "wall_s": record.get("elapsed_s"),
            }

        job = PointJob(
            title=name,
            adopt=lambda p: _adopt(directory / "points" / p.id),
            row=row,
            task=lambda p: (name, p.test, p.params, full, str(directory / "points" / p.id)),
            describe=lambda p: f"{p.test} " + " ".join(f"{k}={v}" for k, v in p.params.items()),
        )
        counts = run_points(catalog, points, job, execute, progress)
        outcome.ran, outcome.skipped = counts.ran, counts.skipped + counts.adopted
        outcome.failed, outcome.errors = counts.failed, counts.errors
        outcome.cpu = dict(sorted(outcome.cpu.items()))
    finally:
        catalog.close()
    outcome.tables = collect(directory, [p for p in points if p.explain is None])
    for key, frame in outcome.tables.items():
        frame.write_parquet(directory / f"{key.replace('/', '__')}.parquet", compression="zstd")
    for a in report.assumptions:
        for index in range(len(a.space)):
            mine = [p for p in points if p.explain == (a.name, index)]
            if not mine:
                continue
            found = collect(directory, mine)
            outcome.explanations[(a.name, index)] = found
            for key, frame in found.items():
                frame.write_parquet(directory / f"{key.replace('/', '__')}__assume-{a.name}-{index}.parquet",
                                    compression="zstd")
    if page:
        from fabricsim.reproductions.page import write_page

        outcome.page = write_page(report, outcome.tables, directory / "report.html", full=full,
                                  errors=outcome.errors, tests=tests, explanations=outcome.explanations)
    return outcome


def collect(directory: Path, points: Sequence[RPoint]) -> dict[str, Any]:
    """Every finished point's rows, per ``<test>/<table>``, in point order."""
    import polars as pl

    parts: dict[str, list[Any]] = {}
    for point in points:
        point_dir = directory / "points" / point.id
        record = _adopt(point_dir)
        if record is None:
            continue
        for f in record["files"]:
            frame = pl.read_parquet(point_dir / f)
            if frame.height:
                parts.setdefault(f"{point.test}/{Path(f).stem}", []).append(frame)
    return {k: pl.concat(v, how="diagonal_relaxed") for k, v in parts.items()}
