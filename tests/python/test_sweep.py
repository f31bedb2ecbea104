"""Sweeps: grid x repeats, DuckDB catalog, resume after a kill, failures, Ray backend."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from fabricsim.sweeps import derive_seed, parse_grid, plan_points, run_sweep

duckdb = pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "leafspine-enterprise.yaml"
GRID = ["load=20%,40%", "network.switch.device=nexus-ib-5mb,static-12mb"]


def _catalog(out: Path) -> list[dict]:
    db = duckdb.connect(str(out / "catalog.duckdb"), read_only=True)
    try:
        cursor = db.execute("SELECT * FROM points ORDER BY point_id")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]
    finally:
        db.close()


def test_grid_and_seeds():
    grid = parse_grid(GRID)
    points = plan_points(grid, repeats=3, base_seed=1)
    assert len(points) == 12 and len({p.id for p in points}) == 12
    assert {p.seed for p in points} == {1, derive_seed(1, 1), derive_seed(1, 2)}
    with pytest.raises(Exception, match="--grid"):
        parse_grid(["load="])


def test_sweep_catalog_report_and_failures(core, tmp_path):
    out = tmp_path / "sweep"
    grid = parse_grid(["load=20%,40%", "network.switch.device=nexus-ib-5mb,bogus"])
    outcome = run_sweep(SCENARIO, grid, out, workers=2)
    assert outcome.ran == 4 and outcome.failed == 2
    rows = _catalog(out)
    assert len(rows) == 4
    assert sorted(r["status"] for r in rows) == ["done", "done", "failed", "failed"]
    for row in rows:
        assert json.loads(row["params"]) == {"load": row["load"], "network.switch.device": row["network.switch.device"]}
        if row["status"] == "done":
            assert row["fct_all_count"] > 0 and row["max_buffer_bytes"] > 0
            assert all(Path(f).is_file() for f in json.loads(row["files"]))
        else:
            assert "bogus" in row["error"]
    table = pl.read_parquet(out / "sweep.parquet")
    assert table.height == 4 and "fct_le_100KB_mean_ps" in table.columns
    assert "<svg" in (out / "report.html").read_text()
    # second run: done points are skipped, failed ones rerun
    again = run_sweep(SCENARIO, grid, out, workers=2)
    assert again.skipped == 2 and again.ran == 2 and len(_catalog(out)) == 4


def test_killed_sweep_resumes_with_every_point_once(core, tmp_path):
    out = tmp_path / "sweep"
    args = [sys.executable, "-m", "fabricsim", "sweep", str(SCENARIO), "--out", str(out), "--workers", "1",
            "--no-progress", "--repeats", "2", *[a for g in GRID for a in ("--grid", g)]]
    proc = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    try:
        while time.time() < deadline and proc.poll() is None:
            if len(list(out.glob("points/*/point.json"))) >= 2:
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finished = {p.parent.name: p.stat().st_mtime_ns for p in out.glob("points/*/point.json")}
    assert 1 <= len(finished) < 8, "the sweep was not interrupted midway"
    outcome = run_sweep(SCENARIO, parse_grid(GRID), out, repeats=2, workers=2)
    assert outcome.failed == 0
    assert outcome.ran + outcome.skipped + outcome.adopted == 8
    assert outcome.ran == 8 - len(finished)  # finished points are never rerun
    rows = _catalog(out)
    assert len(rows) == 8 and {r["status"] for r in rows} == {"done"}
    assert len({r["point_id"] for r in rows}) == 8
    for point_id, mtime in finished.items():
        assert (out / "points" / point_id / "point.json").stat().st_mtime_ns == mtime


def _comparable(table: pl.DataFrame) -> pl.DataFrame:
    drop = [c for c in table.columns if c in ("wall_time_s", "out_dir", "files")]
    return table.drop(drop).sort("point_id")


def test_ray_and_local_backends_agree(core, tmp_path):
    ray = pytest.importorskip("ray")
    grid = parse_grid(["load=20%,40%"])
    local = run_sweep(SCENARIO, grid, tmp_path / "local", repeats=2, workers=2, report=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        remote = run_sweep(SCENARIO, grid, tmp_path / "ray", repeats=2, backend="ray", workers=2, report=False)
    finally:
        ray.shutdown()
    assert remote.failed == local.failed == 0
    assert _comparable(local.table).equals(_comparable(remote.table))


def test_ray_backend_missing_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(Exception, match="pip install"):
        run_sweep(SCENARIO, parse_grid(["load=20%"]), tmp_path / "x", backend="ray")
