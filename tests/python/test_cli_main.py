"""The command line in-process: exit codes, messages and outputs, without the compiled core."""

import json
import sys
from types import ModuleType

import pytest

from fabricsim.cli.main import main

GOOD = """
name: t
duration: 1ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]
"""


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(GOOD)
    return path


def test_validate_prints_the_resolved_json(scenario_file, capsys):
    assert main(["validate", str(scenario_file), "--set", "seed=3", "--set", "traffic.0.rate=2G"]) == 0
    resolved = json.loads(capsys.readouterr().out)
    assert resolved["seed"] == 3 and resolved["traffic"][0]["rate_bps"] == 2_000_000_000


def test_scenario_errors_exit_2_with_one_error_line_per_issue(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text(GOOD.replace("hosts: 2", "hosts: -3").replace("rate: 1Gbps", "rate: -1G"))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"error: {path}: topology.hosts: must be >= 1 (got -3)",
        f"error: {path}: traffic[0].rate: must not be negative (got '-1G')",
    ]


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope.yaml'}: file not found\n"


def test_bad_override_exits_2(scenario_file, capsys):
    assert main(["validate", str(scenario_file), "--set", "traffic.5.rate=1G"]) == 2
    assert "traffic is a list of 1 entries" in capsys.readouterr().err


def test_run_writes_outputs_and_prints_the_summary(fake_core, scenario_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", str(scenario_file), "--out", str(out), "--seed", "9", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "events_per_sec" in captured.out and "conservation_ok" in captured.out
    assert f"wrote {out / 'summary.json'}" in captured.out
    assert captured.err == ""
    assert json.loads((out / "summary.json").read_text())["seed"] == 9
    assert fake_core.simulations[0].config["seed"] == 9
    for name in ("scenario.yaml", "flows.parquet", "queues.parquet", "drops.parquet", "links.parquet"):
        assert (out / name).is_file()


def test_progress_is_off_when_stderr_is_not_a_terminal_unless_forced(fake_core, scenario_file, tmp_path, capsys):
    assert main(["run", str(scenario_file), "--out", str(tmp_path / "a")]) == 0
    assert capsys.readouterr().err == ""
    assert main(["run", str(scenario_file), "--out", str(tmp_path / "b"), "--progress"]) == 0
    assert "events/s" in capsys.readouterr().err


def test_unwritable_output_exits_2_after_printing_what_was_written(fake_core, scenario_file, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "links.parquet").mkdir(parents=True)  # in a previous run's directory, a directory where a file goes
    (out / "summary.json").write_text("{}")
    assert main(["run", str(scenario_file), "--out", str(out), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert f"wrote {out / 'flows.parquet'}" in captured.out
    assert captured.err.startswith(f"error: cannot write {out / 'links.parquet'}: ")


def test_core_config_error_exits_2(fake_core, tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(GOOD.replace("dst: h1", "dst: h99"))
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert capsys.readouterr().err == f"error: {path}: traffic[0].dst: unknown node 'h99' (hosts are h0..h1)\n"


def test_internal_errors_exit_1_without_traceback(fake_core, scenario_file, tmp_path, capsys, monkeypatch):
    def crash(_self, _t_ps):
        raise fake_core.SimulationError("internal error in the simulation core: boom")

    monkeypatch.setattr(fake_core.Simulation, "run_until", crash)
    monkeypatch.delenv("FABRICSIM_DEBUG", raising=False)
    assert main(["run", str(scenario_file), "--out", str(tmp_path / "out"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err == "error: internal error in the simulation core: boom\n"

    monkeypatch.setenv("FABRICSIM_DEBUG", "1")
    assert main(["run", str(scenario_file), "--out", str(tmp_path / "out"), "--no-progress"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_bench_is_dispatched_to_the_bench_module(monkeypatch):
    calls = []
    bench = ModuleType("fabricsim.bench.run")
    bench.main = lambda args: calls.append(args) or 0
    monkeypatch.setitem(sys.modules, "fabricsim.bench.run", bench)
    assert main(["bench", "--json", "--quick", "--scenario", "a", "--scenario", "b"]) == 0
    (args,) = calls
    assert args.json and args.quick and args.scenario == ["a", "b"]


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", "s.yaml"])  # --out is required
    assert info.value.code == 2
    assert "--out" in capsys.readouterr().err


def test_an_unusable_out_is_reported_before_the_simulation(fake_core, scenario_file, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", str(scenario_file), "--out", str(blocker / "out"), "--no-progress"]) == 2
    assert capsys.readouterr().err.startswith(f"error: cannot write {blocker / 'out'}: ")
    assert fake_core.simulations == []
    assert main(["run", str(scenario_file), "--out", str(blocker), "--no-progress"]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err
    assert fake_core.simulations == []


def test_a_directory_that_is_not_a_run_is_refused_before_the_simulation(fake_core, scenario_file, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main(["run", str(scenario_file), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "not empty and holds no previous run (notes.txt)" in err
    assert fake_core.simulations == [] and (out / "notes.txt").read_text() == "keep me"


def test_a_reused_out_holds_only_the_new_run(fake_core, core_output, scenario_file, tmp_path, capsys):
    out = tmp_path / "out"
    core_output["tables"]["extra"] = {"x": core_output["tables"]["drops"]["packets"]}
    assert main(["run", str(scenario_file), "--out", str(out), "--no-progress"]) == 0
    (out / "notes.txt").write_text("mine")
    assert (out / "extra.parquet").is_file() and (out / "plots").is_dir()
    del core_output["tables"]["extra"]
    assert main(["run", str(scenario_file), "--out", str(out), "--no-progress", "--seed", "4"]) == 0
    assert not (out / "extra.parquet").exists(), "a table of the previous run only is removed"
    assert (out / "notes.txt").read_text() == "mine", "files that are not a run's stay"
    assert json.loads((out / "summary.json").read_text())["seed"] == 4


def test_dumbbell_prints_the_recorded_tables_and_names_unknown_grid_values(capsys):
    assert main(["dumbbell", "markdown", "--no-simulation", "--only", "reno-2x1-1Gbps-250KB-20s"]) == 0
    out = capsys.readouterr().out
    assert "| reno-2x1-1Gbps-250KB-20s |" in out and "cubic-" not in out
    assert main(["dumbbell", "grid", "--host", "nowhere"]) == 2
    assert capsys.readouterr().err.startswith("error: --host: unknown value 'nowhere'; allowed: ideal, ")
    assert main(["dumbbell", "record", "--duration", "5"]) == 2
    assert "--buffer and --duration apply to the dumbbells of --rate or --unpaced" in capsys.readouterr().err


def test_dumbbell_grid_flags_are_the_grid_dimensions():
    from fabricsim.cli.dumbbell import GRID_FLAGS
    from fabricsim.validation.dumbbell import GRID_DIMENSIONS

    assert GRID_FLAGS == tuple(GRID_DIMENSIONS)


def test_each_command_is_built_from_the_module_that_names_it():
    import argparse
    import importlib

    from fabricsim.cli.main import COMMANDS, _parser

    for module, names in COMMANDS.items():
        commands = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"fabricsim.cli.{module}").add_parser(commands)
        assert tuple(commands.choices) == names, module
    every = _parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert list(every) == [name for names in COMMANDS.values() for name in names]
    assert list(_parser("validate")._subparsers._group_actions[0].choices) == [  # type: ignore[union-attr]
        "run", "validate", "validate linux"]
    assert len(_parser("no-such-command")._subparsers._group_actions[0].choices) == len(every)  # type: ignore[union-attr]


def test_a_command_imports_only_its_own_subcommand_module(scenario_file):
    import subprocess

    code = (
        "import sys\n"
        "from fabricsim.cli.main import main\n"
        "main(['validate', sys.argv[1]])\n"
        "print(sorted(m for m in sys.modules if m.startswith('fabricsim.cli.')), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(scenario_file)], capture_output=True, text=True, check=True)
    loaded = eval(done.stderr.strip().splitlines()[-1])
    assert loaded == ["fabricsim.cli.common", "fabricsim.cli.main", "fabricsim.cli.run", "fabricsim.cli.validate_linux"]


def test_help_and_unknown_commands_list_every_command(capsys):
    from fabricsim.cli.main import COMMANDS

    with pytest.raises(SystemExit) as info:
        main(["no-such-command"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert all(name in err for names in COMMANDS.values() for name in names)


def _rich_summary(title, rows, width=80):
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = io.StringIO()
    table = Table(title=Text(title), title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in rows:
        table.add_row(Text(key), Text(value))
    Console(file=buffer, width=width, highlight=False).print(table)
    return buffer.getvalue()


@pytest.mark.parametrize("rows", [
    [("a", "1")],
    [("buffer_accounting_ok", "True"), ("events", "154,929"), ("sim_time_s", "0.00501196")],
    [("load.east_west.offered_wire", "0.0100251"), ("x", "a value longer than its header")],
])
def test_the_plain_summary_is_the_table_rich_draws(rows, monkeypatch):
    from fabricsim.cli.run import _plain_table

    monkeypatch.delenv("COLUMNS", raising=False)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "JUPYTER_COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    for title in ("t: summary", "quickstart: summary (partial: the run stopped early)"):
        plain = _plain_table(title, rows)
        assert plain is not None or len(title) > 20  # drawn by rich only where the title is wider than the table
        if plain is not None:
            assert plain == _rich_summary(title, rows)
    monkeypatch.setenv("COLUMNS", "20")
    assert _plain_table("t", [("metric_name_too_long", "1234567890")]) is None  # rich would wrap it
    monkeypatch.setenv("COLUMNS", "100")
    assert _plain_table("t", [("ok", "1")]) == _rich_summary("t", [("ok", "1")], width=100)
    assert _plain_table("t", [("wide", "\u4e2d")]) is None
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert _plain_table("t", [("ok", "1")]) is None
