"""Whole runs: determinism of the output files, conservation on every shipped
scenario, and the files a run writes."""

import json
import re
from pathlib import Path

import polars as pl
import pytest

import fabricsim

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
OUTPUTS = ["summary.json", "flows.parquet", "queues.parquet", "drops.parquet", "links.parquet"]
REPORT = "report.html"


def test_every_shipped_scenario_is_tested():
    # The parametrized runs below take their cases from this glob: an empty or
    # partial glob (moved directory) would pass silently, so compare it with
    # the scenarios the README lists.
    listed = set(re.findall(r"scenarios/([\w-]+\.yaml)", (ROOT / "README.md").read_text(encoding="utf-8")))
    assert listed and {p.name for p in SCENARIOS} == listed


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_shipped_scenario_conserves_packets(core, path):
    result = fabricsim.run(fabricsim.load(path))
    s = result.summary
    assert s["conservation_ok"], s
    assert s["buffer_accounting_ok"], s
    # Multicast copies made by devices are packets too (docs/models/multicast.md).
    created = s["packets_created"] + s.get("packets_replicated", 0)
    assert created == s["packets_delivered"] + s["packets_dropped"] + s["packets_in_network"]
    if s["drained"]:
        assert s["buffer_bytes_in_use"] == 0
    assert s["flows_total"] == result.flows.height > 0
    assert s["events"] > 0


def _run_to(tmp: Path, name: str, seed: int) -> Path:
    out = tmp / name
    fabricsim.run(fabricsim.load(ROOT / "scenarios" / "quickstart.yaml"), seed=seed).write(out)
    return out


def test_same_seed_gives_byte_identical_files(core, tmp_path):
    a, b = _run_to(tmp_path, "a", 7), _run_to(tmp_path, "b", 7)
    for name in OUTPUTS[1:]:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    # Every file but timing.json, the report and its plots included, is byte-identical.
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert Path("timing.json") in files and Path("plots/queues.svg") in files
    for name in files:
        if name != Path("timing.json"):
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert set(json.loads((a / "timing.json").read_text())) == {"wall_time_s", "events_per_sec"}


def test_different_seed_changes_random_results(core, tmp_path):
    a, c = _run_to(tmp_path, "a", 7), _run_to(tmp_path, "c", 8)
    fa, fc = pl.read_parquet(a / "flows.parquet"), pl.read_parquet(c / "flows.parquet")
    poisson = pl.col("kind") == "udp_poisson"
    assert fa.filter(poisson)["packets_sent"].to_list() != fc.filter(poisson)["packets_sent"].to_list()
    # Constant-rate flows do not use randomness: their send counts are equal.
    cbr = pl.col("kind") == "udp_cbr"
    assert fa.filter(cbr)["packets_sent"].to_list() == fc.filter(cbr)["packets_sent"].to_list()


def test_run_writes_the_documented_outputs(core, tmp_path):
    out = _run_to(tmp_path, "o", 1)
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    report = (out / REPORT).read_text()
    assert report.startswith("<!DOCTYPE html>") and "<svg" in report and "quickstart" in report
    summary = json.loads((out / "summary.json").read_text())
    for key in ("scenario", "seed", "sim_time_s", "events",
                "packets_created", "packets_delivered", "packets_dropped", "conservation_ok",
                "flows_total", "flows_completed"):
        assert key in summary, key
    flows = pl.read_parquet(out / "flows.parquet")
    assert {"src", "dst", "packets_sent", "packets_delivered", "fct_ps"} <= set(flows.columns)
    assert flows["src"].dtype == pl.String
    drops = pl.read_parquet(out / "drops.parquet")
    assert set(drops["reason"].to_list()) <= {"port_buffer_full", "queue_limit", "no_route"}
    assert drops["packets"].sum() == summary["packets_dropped"] > 0
    queues = pl.read_parquet(out / "queues.parquet")
    assert queues.height > 0 and queues["bytes"].max() > 0


def test_strict_priority_protects_the_high_class(core):
    result = fabricsim.run(fabricsim.load(ROOT / "scenarios" / "dumbbell-udp.yaml"))
    flows = {r["name"]: r for r in result.flows.iter_rows(named=True)}
    assert flows["b"]["packets_dropped"] == 0
    assert flows["a"]["packets_dropped"] > 0


def test_stepping_in_slices_does_not_change_results(core):
    """The runner advances the core in slices of simulated time (for the
    progress bar); the results must equal one uninterrupted run."""
    import json as _json

    scenario = fabricsim.load(ROOT / "scenarios" / "incast.yaml", overrides=["duration=10ms"])
    sliced = fabricsim.run(scenario).summary
    sim = core.Simulation(_json.dumps(scenario.to_resolved()))
    whole = sim.finish()["summary"]
    for key, value in whole.items():
        assert sliced[key] == value, key
    # All flows end near 43 ms; cancelled timers must not stretch the run.
    assert whole["sim_time_s"] < 0.1
