"""Parameter sweeps: a full grid of ``--set`` overrides x repeats, run in parallel,
recorded in a DuckDB catalog, resumable.

Layout of the output directory ``DIR``::

    DIR/catalog.duckdb        one row per point (table ``points``)
    DIR/points/<id>/          the point's run outputs (summary.json, *.parquet, point.json last)
    DIR/sweep.parquet         one row per point of the current grid: parameters, seed, status, metrics
    DIR/report.html           the sweep report (fabricsim.sweep_report)

A point is identified by its parameters and seed. A second invocation skips
points whose status is ``done``, adopts points whose ``point.json`` was written
before an interruption, and reruns ``failed`` and unfinished ones. Only the
parent process writes the catalog, as each point finishes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from fabricsim.errors import FabricsimError

__all__ = ["Point", "derive_seed", "parse_grid", "plan_points", "run_point", "run_sweep", "metrics_of"]

STATUSES = ("pending", "running", "done", "failed")
_SEED_SALT = 0x53574545  # "SWEE"


class SweepError(FabricsimError):
    """A sweep that cannot start (bad grid, missing backend)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def parse_grid(specs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``["path=v1,v2", ...]`` -> ``[(path, [v1, v2]), ...]`` (values kept as text, parsed like ``--set``)."""
    grid: list[tuple[str, list[str]]] = []
    for spec in specs:
        path, sep, values = spec.partition("=")
        path = path.strip()
        items = [v.strip() for v in values.split(",")] if sep else []
        if not path or not items or any(not v for v in items):
            raise SweepError(f"--grid {spec!r}: expected PATH=V1,V2,... with non-empty values")
        if any(path == p for p, _ in grid):
            raise SweepError(f"--grid {path}: given twice")
        grid.append((path, items))
    return grid


def derive_seed(base: int, repeat: int) -> int:
    """Seed of repeat ``repeat`` (repeat 0 keeps ``base``; others are derived, < 2**63)."""
    if repeat == 0:
        return int(base)
    state = np.random.SeedSequence([int(base), _SEED_SALT, int(repeat)]).generate_state(2, np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


@dataclass(frozen=True)
class Point:
    """One run of a sweep."""

    params: dict[str, str]
    repeat: int
    seed: int

    @property
    def id(self) -> str:
        text = json.dumps({"params": self.params, "seed": self.seed}, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    @property
    def overrides(self) -> list[str]:
        return [f"{path}={value}" for path, value in self.params.items()]


def plan_points(grid: Sequence[tuple[str, Sequence[str]]], repeats: int, base_seed: int) -> list[Point]:
    """Every combination of the grid values, times ``repeats`` seeds (same seeds for every combination)."""
    if repeats < 1:
        raise SweepError("--repeats must be >= 1")
    paths = [p for p, _ in grid]
    points = []
    for combo in itertools.product(*[values for _, values in grid]):
        for repeat in range(repeats):
            points.append(Point(dict(zip(paths, combo)), repeat, derive_seed(base_seed, repeat)))
    return points


def _slug(label: str) -> str:
    return label.replace("<=", "le_").replace(">", "gt_").replace("-", "_to_")


def metrics_of(result: Any) -> dict[str, Any]:
    """Flat summary metrics of a run for the catalog."""
    s = result.summary
    out: dict[str, Any] = {
        "flows_total": s.get("flows_total"),
        "flows_completed": s.get("flows_completed"),
        "packets_delivered": s.get("packets_delivered"),
        "packets_dropped": s.get("packets_dropped"),
        "conservation_ok": s.get("conservation_ok"),
        "events": s.get("events"),
        "sim_time_s": s.get("sim_time_s"),
        "wall_time_s": s.get("wall_time_s"),
        "max_buffer_bytes": None,
    }
    if result.buffers.height:
        out["max_buffer_bytes"] = int(result.buffers["high_water_bytes"].max())
    fct = getattr(result, "fct", None)
    if fct is not None and fct.height:
        for row in fct.iter_rows(named=True):
            slug = _slug(row["bucket"])
            out[f"fct_{slug}_count"] = row["count"]
            out[f"fct_{slug}_mean_ps"] = row["mean_fct_ps"]
            out[f"fct_{slug}_p99_ps"] = row["p99_fct_ps"]
            out[f"fct_{slug}_mean_slowdown"] = row["mean_slowdown"]
            out[f"fct_{slug}_p99_slowdown"] = row["p99_slowdown"]
    return out


def run_point(scenario_path: str, overrides: Sequence[str], seed: int, out_dir: str) -> dict[str, Any]:
    """Run one point and write its outputs; never raises (errors are returned)."""
    started = time.perf_counter()
    directory = Path(out_dir)
    try:
        from fabricsim.runner import run
        from fabricsim.schema import load

        if directory.exists():
            shutil.rmtree(directory)
        scenario = load(scenario_path, list(overrides))
        result = run(scenario, seed=seed)
        files = [str(p) for p in result.write(directory, report=False) if p.suffix == ".parquet"]
        metrics = metrics_of(result)
        record = {"status": "done", "error": None, "metrics": metrics, "files": files, "seed": seed}
        marker = directory / "point.json"
        marker.with_suffix(".tmp").write_text(json.dumps(record, sort_keys=True, default=str), encoding="utf-8")
        os.replace(marker.with_suffix(".tmp"), marker)
    except Exception as exc:  # one failed point never stops the sweep
        message = str(exc).strip().replace("\n", "; ") or type(exc).__name__
        record = {"status": "failed", "error": f"{type(exc).__name__}: {message}", "metrics": {}, "files": [],
                  "seed": seed}
    record["elapsed_s"] = time.perf_counter() - started
    return record


# --------------------------------------------------------------------------
# Catalog


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_BASE_COLUMNS = {
    "point_id": "VARCHAR PRIMARY KEY",
    "scenario": "VARCHAR",
    "params": "VARCHAR",
    "repeat": "INTEGER",
    "seed": "UBIGINT",
    "status": "VARCHAR",
    "error": "VARCHAR",
    "out_dir": "VARCHAR",
    "files": "VARCHAR",
    "metrics": "VARCHAR",
    "updated_at": "DOUBLE",
}


class Catalog:
    """The ``points`` table of ``catalog.duckdb`` (written by one process at a time)."""

    def __init__(self, path: Path) -> None:
        try:
            import duckdb
        except ImportError:
            raise SweepError("the sweep catalog needs duckdb: pip install duckdb") from None
        self.db = duckdb.connect(str(path))
        columns = ", ".join(f"{_quote(n)} {t}" for n, t in _BASE_COLUMNS.items())
        self.db.execute(f"CREATE TABLE IF NOT EXISTS points ({columns})")
        self.columns = {row[0] for row in self.db.execute("DESCRIBE points").fetchall()}

    def ensure_column(self, name: str, sql_type: str) -> None:
        if name not in self.columns:
            self.db.execute(f"ALTER TABLE points ADD COLUMN {_quote(name)} {sql_type}")
            self.columns.add(name)

    def status(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT point_id, status FROM points").fetchall())

    def upsert(self, values: dict[str, Any]) -> None:
        for name in values:
            if name not in self.columns:
                self.ensure_column(name, metric_type(name))
        names = list(values)
        placeholders = ", ".join("?" for _ in names)
        updates = ", ".join(f"{_quote(n)} = excluded.{_quote(n)}" for n in names if n != "point_id")
        self.db.execute(
            f"INSERT INTO points ({', '.join(map(_quote, names))}) VALUES ({placeholders}) "
            f"ON CONFLICT (point_id) DO UPDATE SET {updates}",
            [values[n] for n in names],
        )

    def rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        cursor = self.db.execute("SELECT * FROM points WHERE point_id IN (SELECT unnest(?))", [list(ids)])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def close(self) -> None:
        self.db.close()


_INTEGER_METRICS = ("flows_total", "flows_completed", "packets_delivered", "packets_dropped", "events",
                    "max_buffer_bytes")


def metric_type(name: str) -> str:
    """SQL type of a metric column (fixed by name, so a first null does not decide it)."""
    if name == "conservation_ok":
        return "BOOLEAN"
    if name in _INTEGER_METRICS or name.endswith("_count"):
        return "BIGINT"
    return "DOUBLE"


# --------------------------------------------------------------------------
# Backends


def _local_backend(workers: int) -> Callable[[list[tuple[Point, tuple[Any, ...]]]], Any]:
    def execute(tasks: list[tuple[Point, tuple[Any, ...]]]) -> Any:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("spawn")  # no fork of polars/rayon threads
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures = {pool.submit(run_point, *args): point for point, args in tasks}
            for future in as_completed(futures):
                point = futures[future]
                try:
                    record = future.result()
                except Exception as exc:  # a worker died
                    record = {"status": "failed", "error": f"worker failed: {type(exc).__name__}: {exc}",
                              "metrics": {}, "files": [], "seed": point.seed}
                yield point, record

    return execute


def _ray_backend(address: Optional[str], workers: int) -> Callable[[list[tuple[Point, tuple[Any, ...]]]], Any]:
    try:
        import ray
    except ImportError:
        raise SweepError("the ray backend needs Ray: pip install 'fabricsim[ray]' (or pip install ray)") from None

    def execute(tasks: list[tuple[Point, tuple[Any, ...]]]) -> Any:
        if not ray.is_initialized():
            if address:
                ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
            else:
                ray.init(num_cpus=workers, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
        remote = ray.remote(num_cpus=1)(run_point)
        pending = {remote.remote(*args): point for point, args in tasks}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                point = pending.pop(ref)
                try:
                    record = ray.get(ref)
                except Exception as exc:
                    record = {"status": "failed", "error": f"ray task failed: {type(exc).__name__}: {exc}",
                              "metrics": {}, "files": [], "seed": point.seed}
                yield point, record

    return execute


# --------------------------------------------------------------------------
# The sweep


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
    """A finished point's record from its ``point.json``, if it matches ``point``."""
    try:
        record = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("status") != "done" or record.get("seed") != point.seed:
        return None
    if not all(Path(f).exists() for f in record.get("files", [])):
        return None
    return record


def run_sweep(
    scenario: str | os.PathLike[str],
    grid: Sequence[tuple[str, Sequence[str]]],
    out_dir: str | os.PathLike[str],
    *,
    repeats: int = 1,
    backend: str = "local",
    workers: Optional[int] = None,
    ray_address: Optional[str] = None,
    progress: bool = False,
    report: bool = True,
    x: Optional[str] = None,
    series: Optional[str] = None,
) -> SweepOutcome:
    """Run (or resume) a sweep; see the module docstring for the files it writes."""
    from fabricsim.schema import load

    scenario_path = str(Path(scenario).resolve())
    base = load(scenario_path)  # validates the file before anything runs
    clash = [p for p, _ in grid if p in _BASE_COLUMNS or p in _INTEGER_METRICS or p.startswith("fct_")]
    if clash:
        raise SweepError(f"--grid {clash[0]}: the name is taken by a catalog column")
    points = plan_points(grid, repeats, base.seed)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    workers = max(1, workers or min(len(points), os.cpu_count() or 1))
    if backend == "local":
        execute = _local_backend(workers)
    elif backend == "ray":
        execute = _ray_backend(ray_address, workers)
    else:
        raise SweepError(f"unknown backend {backend!r}; allowed: local, ray")

    catalog = Catalog(directory / "catalog.duckdb")
    outcome = SweepOutcome(directory, points)
    try:
        for path, _ in grid:
            catalog.ensure_column(path, "VARCHAR")
        known = catalog.status()

        def base_row(point: Point) -> dict[str, Any]:
            row = {
                "point_id": point.id,
                "scenario": scenario_path,
                "params": json.dumps(point.params, sort_keys=True),
                "repeat": point.repeat,
                "seed": point.seed,
                "out_dir": str((directory / "points" / point.id).resolve()),
            }
            row.update(point.params)
            return row

        def finish(point: Point, record: dict[str, Any]) -> None:
            row = base_row(point)
            row.update(
                status=record["status"],
                error=record.get("error"),
                files=json.dumps(record.get("files", [])),
                metrics=json.dumps(record.get("metrics", {}), sort_keys=True, default=str),
                updated_at=time.time(),
            )
            row.update(record.get("metrics", {}))
            catalog.upsert(row)
            if record["status"] == "failed":
                outcome.failed += 1
                outcome.errors.append(f"{point.params} seed {point.seed}: {record.get('error')}")

        tasks = []
        for point in points:
            if known.get(point.id) == "done":
                outcome.skipped += 1
                continue
            point_dir = directory / "points" / point.id
            adopted = _adopt(point_dir / "point.json", point)
            if adopted is not None:
                finish(point, adopted)
                outcome.adopted += 1
                continue
            row = base_row(point)
            row.update(status="running", error=None, updated_at=time.time())
            catalog.upsert(row)
            tasks.append((point, (scenario_path, point.overrides, point.seed, str(point_dir))))

        bar = _progress(progress, len(points), outcome.skipped + outcome.adopted)
        try:
            if tasks:
                for point, record in execute(tasks):
                    finish(point, record)
                    outcome.ran += 1
                    bar(point, record)
        finally:
            bar(None, None)

        rows = catalog.rows([p.id for p in points])
    finally:
        catalog.close()

    from fabricsim.sweep_report import summary_table, write_report

    order = {p.id: i for i, p in enumerate(points)}
    rows.sort(key=lambda r: order[r["point_id"]])
    table = summary_table(rows, [p for p, _ in grid])
    table.write_parquet(directory / "sweep.parquet", compression="zstd")
    # What `fabricsim report DIR` needs to rebuild the report without rerunning.
    meta = {"grid": [p for p, _ in grid], "x": x, "series": series, "title": f"{base.name} sweep"}
    (directory / "sweep.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    outcome.table = table
    if report:
        outcome.report = write_report(table, [p for p, _ in grid], directory / "report.html", x=x, series=series,
                                      title=f"{base.name} sweep")
    return outcome


def _progress(enabled: bool, total: int, done: int) -> Callable[[Any, Any], None]:
    """A rich progress bar over points; call with (None, None) to close."""
    if not enabled:
        return lambda point, record: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[last]}"),
                   TimeElapsedColumn(), console=Console(stderr=True))
    bar.start()
    task = bar.add_task("sweep", total=total, completed=done, last="")

    def update(point: Any, record: Any) -> None:
        if point is None:
            bar.stop()
            return
        mark = "ok" if record["status"] == "done" else "FAILED"
        bar.update(task, advance=1, last=f"{mark} {point.params} seed {point.seed}")

    return update


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value
