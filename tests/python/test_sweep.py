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


def test_grid_values_may_be_lists_mappings_and_quoted_strings():
    grid = parse_grid(["network.switch.drr_weights=[1,2],[3, 4]", "x={a: 1, b: [2,3]},{a: 2}", "name='a,b',c"])
    assert grid == [
        ("network.switch.drr_weights", ["[1,2]", "[3, 4]"]),
        ("x", ["{a: 1, b: [2,3]}", "{a: 2}"]),
        ("name", ["'a,b'", "c"]),
    ]
    for bad, needle in [("x=[1,2", "unbalanced"), ("x='a", "quote"), ("x=1,,2", "non-empty"),
                        ("x=1,1", "twice"), ("x=a: b: c", "not valid YAML")]:
        with pytest.raises(Exception, match=needle):
            parse_grid([bad])


SMALL = """
name: small
duration: 200us
topology: {kind: star, hosts: 3, link: {rate: 10Gbps, delay: 1us}}
network: {switch: {scheduler: drr}}
traffic:
  - {kind: udp_poisson, src: [h1, h2], dst: h0, rate: 60%}
  - {kind: udp_cbr, src: h2, dst: h0, rate: 1Gbps, class: 1}
stats: {queue_sample_interval: 10us, throughput_interval: 20us}
"""


def test_sweep_set_applies_to_every_point_and_is_part_of_its_identity(core, tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    grid = parse_grid(["network.switch.drr_weights=[1,1,1,1,1,1,1,1],[1,4,1,1,1,1,1,1]"])
    plain = run_sweep(path, grid, tmp_path / "plain", workers=2, report=False)
    longer = run_sweep(path, grid, tmp_path / "longer", overrides=["duration=400us"], workers=2, report=False)
    assert plain.failed == longer.failed == 0
    assert {p.id for p in plain.points}.isdisjoint({p.id for p in longer.points})
    for outcome, sim_time in ((plain, 200e-6), (longer, 400e-6)):
        for row in outcome.table.iter_rows(named=True):
            summary = json.loads((outcome.out_dir / row["out_dir"] / "summary.json").read_text())
            assert summary["sim_time_s"] >= sim_time
    assert json.loads((tmp_path / "longer" / "sweep.json").read_text())["set"] == ["duration=400us"]
    with pytest.raises(Exception, match="also given with --set"):
        run_sweep(path, grid, tmp_path / "x", overrides=["network.switch.drr_weights=[1]"])


def test_editing_the_scenario_file_reruns_the_sweep_into_the_same_out(core, tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    grid = parse_grid(["traffic.1.rate=1Gbps,2Gbps"])
    first = run_sweep(path, grid, tmp_path / "out", workers=2, report=False)
    again = run_sweep(path, grid, tmp_path / "out", workers=2, report=False)
    assert (first.ran, again.ran, again.skipped) == (2, 0, 2)
    path.write_text(SMALL.replace("duration: 200us", "duration: 300us"))
    edited = run_sweep(path, grid, tmp_path / "out", workers=2, report=False)
    assert (edited.ran, edited.skipped) == (2, 0)
    assert {p.id for p in edited.points}.isdisjoint({p.id for p in first.points})
    for row in edited.table.iter_rows(named=True):
        summary = json.loads((edited.out_dir / row["out_dir"] / "summary.json").read_text())
        assert summary["sim_time_s"] >= 300e-6


def test_points_recorded_by_another_build_are_run_again(core, tmp_path):
    """An upgrade (a rebuilt core, an edited model) must not mix old results
    into the new sweep: each point.json holds the build's fingerprint."""
    from fabricsim import build

    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    grid = parse_grid(["traffic.1.rate=1Gbps,2Gbps"])
    first = run_sweep(path, grid, tmp_path / "out", workers=2, report=False)
    markers = sorted((tmp_path / "out" / "points").glob("*/point.json"))
    assert len(markers) == 2
    assert {json.loads(m.read_text())["build"] for m in markers} == {build.fingerprint()}
    old = json.loads(markers[0].read_text())
    old["build"] = "0123456789abcdef"
    markers[0].write_text(json.dumps(old))
    again = run_sweep(path, grid, tmp_path / "out", workers=2, report=False)
    assert (first.ran, again.ran, again.skipped) == (2, 1, 1)
    assert json.loads(markers[0].read_text())["build"] == build.fingerprint()


def test_identical_sweeps_give_byte_identical_files(core, tmp_path):
    """Everything but the DuckDB catalog (timestamps, wall times, its own file
    layout) and the timing.json files is reproducible byte for byte."""
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    grid = parse_grid(["traffic.1.rate=1Gbps,2Gbps"])
    for name in ("a", "b"):
        run_sweep(path, grid, tmp_path / name, repeats=2, workers=2)
    a, b = tmp_path / "a", tmp_path / "b"
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    excluded = {p for p in files if p.name in ("catalog.duckdb", "timing.json")}
    assert Path("catalog.duckdb") in excluded and len(excluded) == 5
    assert Path("report.html") in files and Path("sweep.parquet") in files
    for name in files:
        if name not in excluded:
            assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_the_command_line_sweep_takes_set(core, tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    out = tmp_path / "s"
    r = subprocess.run([sys.executable, "-m", "fabricsim", "sweep", str(path), "--out", str(out), "--no-progress",
                        "--workers", "1", "--set", "duration=300us", "--grid", "traffic.1.rate=1Gbps,2Gbps"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for row in _catalog(out):
        assert json.loads((out / row["out_dir"] / "summary.json").read_text())["sim_time_s"] >= 300e-6


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(x) for x in text)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")
def test_workers_die_with_a_killed_sweep(core, tmp_path):
    out = tmp_path / "sweep"
    args = [sys.executable, "-m", "fabricsim", "sweep", str(SCENARIO), "--out", str(out), "--workers", "2",
            "--no-progress", "--set", "duration=30s", "--grid", "load=20%,40%"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(workers) < 2:
            time.sleep(0.2)
            workers = {c for c in _children(proc.pid) if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text()}
        assert len(workers) >= 2, "the workers did not start"
        time.sleep(1)
        proc.kill()  # SIGKILL: the parent has no chance to stop its pool
        proc.wait()
        deadline = time.time() + 30
        while time.time() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers), "workers outlived the sweep"
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()


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
            assert all((out / f).is_file() for f in json.loads(row["files"]))
            assert row["wall_time_s"] > 0, "timings are in the catalog"
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
    return table.sort("point_id")


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


def test_shared_point_loop_skips_adopts_runs_and_counts_failures():
    from dataclasses import dataclass

    from fabricsim.sweeps.loop import PointJob, run_points

    @dataclass(frozen=True)
    class P:
        id: str

    class FakeCatalog:
        def __init__(self, status):
            self.rows = dict(status)

        def status(self):
            return dict(self.rows)

        def upsert(self, row):
            self.rows[row["point_id"]] = row["status"]

    # a: done and its files are there; b: finished but not recorded; c: done in the
    # catalog but its files are gone; d: never run; e: fails.
    catalog = FakeCatalog({"a": "done", "c": "done", "e": "failed"})
    finished = {"a", "b"}
    ran = []

    def execute(tasks):
        for point, args in tasks:
            ran.append(args)
            yield point, {"status": "failed" if point.id == "e" else "done", "error": "boom"}

    job = PointJob(
        title="t",
        adopt=lambda p: {"status": "done"} if p.id in finished else None,
        row=lambda p, r: {"point_id": p.id, "status": r["status"]},
        task=lambda p: (p.id,),
        describe=lambda p: p.id,
    )
    result = run_points(catalog, [P(x) for x in "abcde"], job, execute)
    assert (result.skipped, result.adopted, result.ran, result.failed) == (1, 1, 3, 1)
    assert ran == [("c",), ("d",), ("e",)]
    assert result.errors == ["e: boom"]
    assert catalog.rows == {"a": "done", "b": "done", "c": "done", "d": "done", "e": "failed"}


def test_failures_are_listed_in_the_points_order_whatever_order_they_finish_in():
    """Workers finish points in any order; the errors (shown on pages) follow the plan."""
    from dataclasses import dataclass

    from fabricsim.sweeps.loop import PointJob, run_points

    @dataclass(frozen=True)
    class P:
        id: str

    class Catalog:
        def status(self):
            return {}

        def upsert(self, row):
            pass

    def execute(tasks):
        for point, _ in reversed(tasks):  # the last point finishes first
            yield point, {"status": "failed", "error": "boom"}

    job = PointJob(title="t", adopt=lambda p: None, row=lambda p, r: {"point_id": p.id},
                   task=lambda p: (p.id,), describe=lambda p: p.id)
    result = run_points(Catalog(), [P(x) for x in "abc"], job, execute)
    assert result.errors == ["a: boom", "b: boom", "c: boom"]


def test_a_stopped_local_job_runs_no_queued_point_and_ends_its_workers():
    """Ctrl-C (or a consumer that stops) cancels the queued points and kills the
    running ones instead of waiting for the whole queue."""
    from dataclasses import dataclass

    from fabricsim.sweeps.backends import local_backend

    @dataclass(frozen=True)
    class P:
        id: str
        seed: int = 1

    execute = local_backend(2, time.sleep)
    tasks = [(P("quick"), (0.0,))] + [(P(f"slow{i}"), (60.0,)) for i in range(4)]
    jobs = execute(tasks)
    point, _ = next(jobs)
    assert point.id == "quick"
    started = time.perf_counter()
    jobs.close()
    assert time.perf_counter() - started < 20  # not the 2 x 60 s of the queue


def test_the_catalog_types_its_columns(core, tmp_path):
    """Grid values keep their text and get a number beside it (30% -> 0.3);
    params, files and metrics are DuckDB JSON, not text."""
    import duckdb

    from fabricsim.sweeps.catalog import grid_number
    from fabricsim.sweeps.runner import run_sweep

    assert [grid_number(v) for v in ("30%", "10Gbps", "2ms", "1MB", "4", "nexus-ib-5mb")] == [
        0.3, 1e10, 0.002, 1e6, 4.0, None]
    out = tmp_path / "s"
    run_sweep(str(SCENARIO), [("load", ["20%", "40%"])], out, workers=1, overrides=["duration=1ms"],
              report=False)
    db = duckdb.connect(str(out / "catalog.duckdb"), read_only=True)
    types = dict(db.execute("SELECT column_name, data_type FROM information_schema.columns "
                            "WHERE table_name = 'points'").fetchall())
    assert types["load"] == "VARCHAR" and types["load__num"] == "DOUBLE"
    assert types["params"] == types["metrics"] == types["files"] == "JSON"
    frame = db.execute("""SELECT "load", "load__num", params->>'$.load' AS p FROM points ORDER BY 2""").fetchall()
    assert frame == [("20%", 0.2, "20%"), ("40%", 0.4, "40%")]
    db.close()


def test_the_catalog_commits_its_rows_in_groups_and_on_close(tmp_path, monkeypatch):
    from fabricsim.sweeps.catalog import Catalog

    path = tmp_path / "catalog.duckdb"
    monkeypatch.setattr(Catalog, "COMMIT_EVERY_S", float("inf"))
    catalog = Catalog(path)
    catalog.ensure_column("load", "VARCHAR")
    for index in range(5):
        catalog.upsert({"point_id": f"p{index}", "status": "running", "load": f"{index}%"})
    catalog.upsert({"point_id": "p0", "status": "done", "load": "0%"})
    assert catalog._opened is not None  # one open transaction holds every row so far
    catalog.close()
    assert {row["point_id"]: row["status"] for row in _catalog(tmp_path)} == {
        "p0": "done", "p1": "running", "p2": "running", "p3": "running", "p4": "running"}

    monkeypatch.setattr(Catalog, "COMMIT_EVERY_S", 0.0)
    catalog = Catalog(path)
    catalog.upsert({"point_id": "p1", "status": "done", "load": "1%"})
    assert catalog._opened is None  # committed at once
    assert catalog.status()["p1"] == "done"
    catalog.close()


def test_the_command_line_sweep_without_its_report(core, tmp_path, capsys):
    from fabricsim.cli.main import main

    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    out = tmp_path / "s"
    assert main(["sweep", str(path), "--out", str(out), "--no-progress", "--workers", "1", "--no-report",
                 "--grid", "traffic.1.rate=1Gbps,2Gbps"]) == 0
    assert f"report not drawn (fabricsim report {out} draws it)" in capsys.readouterr().out
    assert (out / "sweep.parquet").is_file() and (out / "sweep.json").is_file()
    assert not (out / "report.html").exists()
    assert [row["status"] for row in _catalog(out)] == ["done", "done"]
