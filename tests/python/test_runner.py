"""Driving the core: chunked stepping, progress, seeds, error mapping."""

import json
import sys

import pytest

import fabricsim
from fabricsim import FabricsimError, ScenarioError, loads
from snippets import SMALL_STAR

SCENARIO = SMALL_STAR


def test_run_steps_the_core_and_completes_the_summary(fake_core):
    result = fabricsim.run(loads(SCENARIO))
    (sim,) = fake_core.simulations
    assert sim.config == loads(SCENARIO).to_resolved()
    assert sim.targets == [2**64 - 1]  # without a progress bar, one call runs it to the end
    summary = result.summary
    assert summary["scenario"] == "small" and summary["seed"] == 5
    assert "wall_time_s" not in summary and "events_per_sec" not in summary
    timing = result.timing
    assert timing["wall_time_s"] > 0
    assert timing["events_per_sec"] == pytest.approx(120 / timing["wall_time_s"])
    assert result.flows["src"].to_list() == ["h0", "h1"]
    assert result.scenario.name == "small"


def test_check_resolves_the_scenario_once(fake_core, monkeypatch):
    # A workload's expansion is most of resolving: the core's JSON is made from
    # the same resolved scenario that check returns.
    scenario = loads(SCENARIO)
    calls = []
    original = type(scenario).to_resolved
    monkeypatch.setattr(type(scenario), "to_resolved", lambda self: calls.append(1) or original(self))
    resolved = fabricsim.check(scenario)
    (sim,) = fake_core.simulations
    assert len(calls) == 1
    assert sim.config == resolved


def test_a_run_with_a_progress_bar_steps_the_core_through_the_duration(fake_core):
    fabricsim.run(loads(SCENARIO), progress=True)
    (sim,) = fake_core.simulations
    assert len(sim.targets) == 200
    assert sim.targets == sorted(sim.targets) and sim.targets[-1] == 1_000_000_000


def test_seed_argument_replaces_the_scenario_seed(fake_core):
    result = fabricsim.run(loads(SCENARIO), seed=77)
    assert fake_core.simulations[0].config["seed"] == 77
    assert result.summary["seed"] == 77
    assert result.scenario.seed == 77 and "seed: 77" in result.scenario.to_yaml()


def test_summary_values_from_the_core_are_kept(fake_core, core_output):
    core_output["summary"].update({"seed": 5, "scenario": "from-core"})
    summary = fabricsim.run(loads(SCENARIO)).summary
    assert (summary["scenario"], summary["seed"]) == ("from-core", 5)


def test_run_accepts_a_path(fake_core, tmp_path):
    path = tmp_path / "from-file.yaml"
    path.write_text(SCENARIO.replace("name: small\n", ""))
    assert fabricsim.run(path).summary["scenario"] == "from-file"


def test_progress_bar_goes_to_stderr(fake_core, capsys):
    fabricsim.run(loads(SCENARIO), progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "small" in captured.err and "events/s" in captured.err


def test_config_error_becomes_a_scenario_error(fake_core, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(SCENARIO.replace("dst: h1", "dst: h99"))
    with pytest.raises(ScenarioError) as info:
        fabricsim.run(fabricsim.load(path))
    assert info.value.issues[0].path == "traffic[0].dst"
    assert str(info.value) == f"{path}: traffic[0].dst: unknown node 'h99' (hosts are h0..h1)"


def test_config_error_without_a_field_path(fake_core):
    def reject(_json, memory_limit=None):
        raise fake_core.ConfigError("topology is disconnected: h1 cannot reach h0")

    fake_core.Simulation = reject
    with pytest.raises(ScenarioError) as info:
        fabricsim.run(loads(SCENARIO))
    assert info.value.issues[0].path == ""
    assert str(info.value) == "topology is disconnected: h1 cannot reach h0"


def test_missing_core_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "fabricsim._core", None)
    with pytest.raises(FabricsimError, match="simulation core"):
        fabricsim.run(loads(SCENARIO))


# --------------------------------------------------------------------------
# With the compiled core


def test_real_run(core, tmp_path):
    result = fabricsim.run(loads(SCENARIO))
    assert result.summary["scenario"] == "small"
    assert result.summary["events"] > 0
    assert result.flows.height == 1 and result.flows["src"].to_list() == ["h0"]
    assert set(result.nodes["name"].to_list()) == {"sw0", "h0", "h1"}
    written = result.write(tmp_path)
    assert {path.name for path in written} >= {"summary.json", "scenario.yaml", "flows.parquet"}
    assert json.loads((tmp_path / "summary.json").read_text())["seed"] == 5


def test_real_config_error_names_the_field(core):
    with pytest.raises(ScenarioError) as info:
        fabricsim.run(loads(SCENARIO.replace("dst: h1", "dst: h99")))
    assert info.value.issues[0].path == "traffic[0].dst"
    assert "h99" in str(info.value)
