"""The sweep catalog: ``catalog.duckdb``, one row per point, with the metrics of its run as columns.

duckdb is imported when a catalog is opened (only sweeps need it).
"""

from __future__ import annotations

import contextlib
import re
import time
from pathlib import Path
from typing import Any, Sequence

from fabricsim.outputs.tables import RunTables
from fabricsim.sweeps.grid import SweepError

__all__ = ["BASE_COLUMNS", "INTEGER_METRICS", "TIMING_COLUMNS", "Catalog", "bucket_slug", "grid_number", "metric_type",
           "metrics_of"]

# --------------------------------------------------------------------------
# Metrics of a run


def bucket_slug(label: str) -> str:
    """A size-bucket label as part of a column name: ``<=100KB`` -> ``le_100KB``."""
    return label.replace("<=", "le_").replace(">", "gt_").replace("-", "_to_")


def metrics_of(result: RunTables) -> dict[str, Any]:
    """Flat summary metrics of a run for the catalog (reproducible ones only:
    the timings are ``result.timing``)."""
    s = result.summary
    out: dict[str, Any] = {
        "flows_total": s.get("flows_total"),
        "flows_completed": s.get("flows_completed"),
        "packets_delivered": s.get("packets_delivered"),
        "packets_dropped": s.get("packets_dropped"),
        "conservation_ok": s.get("conservation_ok"),
        "flows_incomplete": s.get("flows_incomplete"),
        "drain_limit_reached": s.get("drain_limit_reached"),
        "events": s.get("events"),
        "sim_time_s": s.get("sim_time_s"),
        "max_buffer_bytes": None,
    }
    if result.buffers.height:
        out["max_buffer_bytes"] = int(result.buffers["high_water_bytes"].max())
    for entry, load in (s.get("load") or {}).items():
        name = re.sub(r"\W+", "_", entry)
        for key in ("offered_wire", "offered_payload", "carried"):
            out[f"load_{name}_{key}"] = load.get(key)
    fct = result.fct
    if fct.height:
        for row in fct.iter_rows(named=True):
            # All traffic: fct_<bucket>_*; one entry: fct_<entry>__<bucket>_*.
            traffic = row.get("traffic", "all")
            entry = "" if traffic == "all" else re.sub(r"\W+", "_", traffic) + "__"
            slug = entry + bucket_slug(row["bucket"])
            out[f"fct_{slug}_count"] = row["count"]
            out[f"fct_{slug}_mean_ps"] = row["mean_fct_ps"]
            out[f"fct_{slug}_p99_ps"] = row["p99_fct_ps"]
            out[f"fct_{slug}_mean_slowdown"] = row["mean_slowdown"]
            out[f"fct_{slug}_p99_slowdown"] = row["p99_slowdown"]
    return out


TIMING_COLUMNS = ("wall_time_s", "events_per_sec")
"""Machine-dependent figures of a point: in the catalog, not in ``sweep.parquet`` or the report."""

INTEGER_METRICS = ("flows_total", "flows_completed", "flows_incomplete", "packets_delivered", "packets_dropped",
                   "events", "max_buffer_bytes")


def metric_type(name: str) -> str:
    """SQL type of a metric column (fixed by name, so a first null does not decide it)."""
    if name in ("conservation_ok", "drain_limit_reached"):
        return "BOOLEAN"
    if name in INTEGER_METRICS or name.endswith("_count"):
        return "BIGINT"
    return "DOUBLE"


def grid_number(value: str) -> float | None:
    """A grid value as a number for the catalog's typed column ``<path>__num``:
    a percentage as a fraction (``30%`` -> 0.3), a rate in bit/s, a time in
    seconds, a size in bytes, a plain number as itself; None for anything else
    (a device name)."""
    from fabricsim import units

    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    if text.endswith("%"):
        try:
            return float(units.parse_percent(text))
        except (ValueError, TypeError):
            return None
    for parse, scale in ((units.parse_rate, 1.0), (units.parse_time, 1e-12), (units.parse_size, 1.0)):
        try:
            return parse(text) * scale
        except (ValueError, TypeError):
            continue
    return None


# --------------------------------------------------------------------------
# The catalog


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


BASE_COLUMNS = {
    "point_id": "VARCHAR PRIMARY KEY",
    "scenario": "VARCHAR",
    "params": "JSON",
    "repeat": "INTEGER",
    "seed": "UBIGINT",
    "status": "VARCHAR",
    "error": "VARCHAR",
    "out_dir": "VARCHAR",
    "files": "JSON",
    "metrics": "JSON",
    "updated_at": "DOUBLE",
}


class Catalog:
    """The ``points`` table of ``catalog.duckdb`` (written by one process at a time).

    Writes are grouped into transactions committed at most :attr:`COMMIT_EVERY_S`
    apart (checked at each write) and on :meth:`close`: a commit costs more
    than the rows of a small point. A row not yet committed when the process
    is killed is not lost: every point leaves its ``point.json``, which the
    next run of the job adopts into the catalog.
    """

    COMMIT_EVERY_S = 1.0

    def __init__(self, path: Path) -> None:
        try:
            import duckdb
        except ImportError:
            raise SweepError("the sweep catalog needs duckdb: pip install duckdb") from None
        self.db = duckdb.connect(str(path))
        self._opened: float | None = None  # when the open transaction began
        columns = ", ".join(f"{_quote(n)} {t}" for n, t in BASE_COLUMNS.items())
        self.db.execute(f"CREATE TABLE IF NOT EXISTS points ({columns})")
        self.columns = {row[0] for row in self.db.execute("DESCRIBE points").fetchall()}

    def _write(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        """Run ``sql`` in the open transaction (one is begun if none is), then
        commit if the transaction is older than :attr:`COMMIT_EVERY_S`."""
        if self._opened is None:
            self.db.begin()
            self._opened = time.monotonic()
        self.db.execute(sql, list(parameters))
        if time.monotonic() - self._opened >= self.COMMIT_EVERY_S:
            self.commit()

    def commit(self) -> None:
        """Commit the rows written so far."""
        if self._opened is not None:
            self._opened = None
            self.db.commit()

    def ensure_column(self, name: str, sql_type: str) -> None:
        if name not in self.columns:
            self._write(f"ALTER TABLE points ADD COLUMN {_quote(name)} {sql_type}")
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
        self._write(
            f"INSERT INTO points ({', '.join(map(_quote, names))}) VALUES ({placeholders}) "
            f"ON CONFLICT (point_id) DO UPDATE SET {updates}",
            [values[n] for n in names],
        )

    def rows(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        cursor = self.db.execute("SELECT * FROM points WHERE point_id IN (SELECT unnest(?))", [list(ids)])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def close(self) -> None:
        """Commit what was written (a transaction a failed write aborted is rolled back) and close."""
        try:
            self.commit()
        except Exception:
            with contextlib.suppress(Exception):
                self.db.rollback()
            raise
        finally:
            self.db.close()
