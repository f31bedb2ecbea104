"""The report's imports beside the core run (``fabricsim.outputs.preload``):
started only for a run that will draw its report, finished before the run
returns, invisible when it fails, and the same report bytes either way."""

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import fabricsim
from fabricsim import loads
from fabricsim.cli.main import main
from fabricsim.outputs import preload as preload_module
from fabricsim.outputs.preload import Preload
from snippets import SMALL_STAR

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = SMALL_STAR


def python(script: str, *args: str) -> subprocess.CompletedProcess:
    """``script`` in a fresh interpreter (nothing imported yet), from the repository root."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


@pytest.fixture
def started(monkeypatch):
    """The preloads started, each with a target that takes a while, then records that it ran."""
    made = []

    class Recorded(Preload):
        def __init__(self) -> None:
            self.ran = False
            super().__init__(lambda: (time.sleep(0.2), setattr(self, "ran", True)))
            made.append(self)

    monkeypatch.setattr(preload_module, "Preload", Recorded)
    return made


# --------------------------------------------------------------------------
# The thread itself


def test_a_failing_target_is_kept_not_raised_or_printed(monkeypatch):
    hooked = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)
    boom = ImportError("no module named 'matplotlib'")

    def fail() -> None:
        raise boom

    preload = Preload(fail)
    preload.wait()
    assert preload.error is boom
    assert hooked == []  # threading's hook would print "Exception in thread ..."


def test_wait_returns_once_the_target_has_finished():
    done = []
    preload = Preload(lambda: (time.sleep(0.2), done.append(True)))
    preload.wait()
    assert done == [True] and preload.error is None


# --------------------------------------------------------------------------
# Who starts it


def test_run_starts_it_only_when_asked_and_returns_after_it(fake_core, started):
    fabricsim.run(loads(SCENARIO))
    assert started == []
    fabricsim.run(loads(SCENARIO), prepare_report=True)
    (preload,) = started
    assert preload.ran and not preload._thread.is_alive()


def test_run_waits_for_it_when_the_core_rejects_the_scenario(fake_core, started):
    with pytest.raises(fabricsim.ScenarioError):
        fabricsim.run(loads(SCENARIO.replace("dst: h1", "dst: h99")), prepare_report=True)
    (preload,) = started
    assert preload.ran and not preload._thread.is_alive()


def test_run_waits_for_it_when_the_core_fails(fake_core, started):
    def fail(self, t_ps):
        raise fake_core.SimulationError("stuck")

    fake_core.Simulation.run_until = fail
    with pytest.raises(fabricsim.SimulationError, match="stuck"):
        fabricsim.run(loads(SCENARIO), prepare_report=True)
    (preload,) = started
    assert preload.ran and not preload._thread.is_alive()


def test_cli_run_starts_it_unless_no_report(fake_core, started, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    assert main(["run", str(path), "--out", str(tmp_path / "a"), "--no-progress", "--no-report"]) == 0
    assert started == []
    assert main(["run", str(path), "--out", str(tmp_path / "b"), "--no-progress"]) == 0
    assert len(started) == 1 and (tmp_path / "b" / "report.html").is_file()


# --------------------------------------------------------------------------
# In a fresh process, with the compiled core


def test_fresh_process_imports_matplotlib_only_for_a_report(core):
    r = python(
        """
        import sys, threading
        import fabricsim
        scenario = fabricsim.loads(sys.argv[1])
        fabricsim.run(scenario)
        print("plain", "matplotlib" in sys.modules, threading.active_count())
        fabricsim.run(scenario, prepare_report=True)
        print("prepared", "matplotlib.pyplot" in sys.modules, "fabricsim.outputs.report.plots" in sys.modules,
              threading.active_count())
        """,
        SCENARIO,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["plain False 1", "prepared True True 1"]


@pytest.mark.parametrize("progress", [False, True], ids=["quiet", "progress-bar"])
def test_no_other_thread_imports_while_it_runs(core, progress):
    """Two threads importing at once could wait on each other's import locks;
    the run imports nothing (progress bar included) until the preload is done."""
    r = python(
        """
        import sys, threading, time
        import fabricsim
        import fabricsim.runner
        from fabricsim.outputs import preload

        events = []

        class Watch:
            def find_spec(self, name, path=None, target=None):
                events.append((time.perf_counter(), threading.current_thread().name, name))
                return None

        window = []
        warm = preload.warm_report

        def timed():
            window.append(time.perf_counter())
            warm()
            window.append(time.perf_counter())

        preload.Preload.__init__.__defaults__ = (timed,)
        sys.meta_path.insert(0, Watch())
        fabricsim.run(fabricsim.loads(sys.argv[1]), progress=sys.argv[2] == "1", prepare_report=True)
        start, end = window
        mine = [e for e in events if start <= e[0] <= end and e[1] == "fabricsim-report-preload"]
        others = [e for e in events if start <= e[0] <= end and e[1] != "fabricsim-report-preload"]
        print(len(mine) > 50, others)
        """,
        SCENARIO,
        "1" if progress else "0",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True []"


FAIL_MATPLOTLIB = """
import sys
sys.modules["matplotlib"] = None  # "import of matplotlib halted; None in sys.modules"
import fabricsim.runner
from fabricsim.cli.main import main
from fabricsim.outputs import preload
if sys.argv[1] == "off":
    fabricsim.runner._preload = lambda progress: preload.Preload(lambda: None)
else:
    made = []
    start = fabricsim.runner._preload
    fabricsim.runner._preload = lambda progress: made.append(start(progress)) or made[-1]
code = main(["run", "scenarios/quickstart.yaml", "--out", sys.argv[2], "--no-progress"])
print("preload error:", type(made[0].error).__name__ if sys.argv[1] == "on" else None)
print("exit", code)
"""


def _files(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())


def test_a_failing_preload_leaves_the_report_as_it_was(core, tmp_path):
    """matplotlib missing: the preload fails quietly, and the report step
    imports it again and fails as it does without the preload (each plot's
    section shows the error)."""
    runs = {mode: python(FAIL_MATPLOTLIB, mode, str(tmp_path / mode)) for mode in ("on", "off")}
    for r in runs.values():
        assert "Traceback" not in r.stderr and "Exception in thread" not in r.stderr
    assert runs["on"].stdout.splitlines()[-2:] == ["preload error: ModuleNotFoundError", "exit 0"]
    assert runs["off"].stdout.splitlines()[-2:] == ["preload error: None", "exit 0"]
    assert runs["on"].stderr == runs["off"].stderr
    on, off = tmp_path / "on", tmp_path / "off"
    page = (on / "report.html").read_text()
    assert "could not be drawn: ModuleNotFoundError: import of matplotlib halted" in page
    assert _files(on) == _files(off)
    for name in _files(on):
        if name != Path("timing.json"):
            assert (on / name).read_bytes() == (off / name).read_bytes(), name


def test_report_is_byte_identical_with_and_without_the_preload(core, tmp_path):
    script = """
    import sys
    import fabricsim.runner
    from fabricsim.cli.main import main
    from fabricsim.outputs.preload import Preload
    if sys.argv[1] == "off":
        fabricsim.runner._preload = lambda progress: Preload(lambda: None)
    sys.exit(main(["run", "scenarios/quickstart.yaml", "--out", sys.argv[2], "--no-progress"]))
    """
    for mode in ("on", "off"):
        r = python(script, mode, str(tmp_path / mode))
        assert r.returncode == 0, r.stderr
    files = _files(tmp_path / "on")
    assert Path("report.html") in files and Path("plots/queues.svg") in files
    assert files == _files(tmp_path / "off")
    for name in files:
        if name != Path("timing.json"):
            assert (tmp_path / "on" / name).read_bytes() == (tmp_path / "off" / name).read_bytes(), name


def test_the_run_timing_is_the_core_without_the_preload(fake_core, monkeypatch):
    """timing.json's wall time (and events per second) is the core's: a
    preload still running when the core is done is waited for after it."""

    class Slow(Preload):
        def __init__(self) -> None:
            super().__init__(lambda: time.sleep(1.0))

    monkeypatch.setattr(preload_module, "Preload", Slow)
    began = time.perf_counter()
    result = fabricsim.run(loads(SCENARIO), prepare_report=True)
    assert time.perf_counter() - began >= 1.0  # the run waited for the preload
    assert result.timing["wall_time_s"] < 1.0  # and did not count it


def test_a_progress_bar_steps_ten_times_less_often_while_the_preload_runs(fake_core, monkeypatch):
    """Each step takes the GIL back, which the preload holds at times: while
    it runs, the steps of simulated time are ten times longer."""

    class Slow(Preload):
        def __init__(self) -> None:
            super().__init__(lambda: time.sleep(1.0))

    monkeypatch.setattr(preload_module, "Preload", Slow)
    fabricsim.run(loads(SCENARIO), progress=True, prepare_report=True)
    (sim,) = fake_core.simulations
    assert len(sim.targets) == 20 and sim.targets[-1] == 1_000_000_000
